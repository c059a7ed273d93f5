"""InitProducerId (API key 22), versions 0-6: a producer id and epoch for an idempotent or transactional producer.

Rules:
- An idempotent producer (KIP-98) sends ``transactional_id=None`` to any broker; the broker answers a fresh producer id
  with epoch 0 (it ignores v3+'s ``producer_id`` / ``producer_epoch`` when there is no transactional id). A
  transactional producer sends its transactional id to its transaction coordinator (see :mod:`.find_coordinator`).
- v1 equals v0 (responses may come before throttling). v2+ is flexible. v3 adds the current producer id and epoch so
  a transactional producer can resume after INVALID_PRODUCER_EPOCH (KIP-360; a broker that offers v3 also accepts a
  client-side epoch bump). v4 and v5 only add error codes (PRODUCER_FENCED, TRANSACTION_ABORTABLE). v6 adds the
  two-phase-commit flags to the request and the ongoing transaction's producer id and epoch to the response (KIP-939;
  Kafka's spec still marks v6 unstable, brokers up to 4.x advertise v5 at most).
- ``transaction_timeout_ms`` defaults to :data:`NO_TRANSACTION_TIMEOUT_MS` (int32 max), what the Java client sends
  when there is no transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int16, Int32, Int64
from ._versioned import nullable_string, register_api, since, struct

KEY = 22
VERSIONS = range(7)
FIRST_FLEXIBLE = 2
NO_TRANSACTION_TIMEOUT_MS = 2**31 - 1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class InitProducerIdRequest:
    transactional_id: str | None = None  # None: an idempotent producer without transactions
    transaction_timeout_ms: int = NO_TRANSACTION_TIMEOUT_MS
    producer_id: int = NO_PRODUCER_ID  # v3+
    producer_epoch: int = NO_PRODUCER_EPOCH  # v3+
    enable_2pc: bool = False  # v6+
    keep_prepared_txn: bool = False  # v6+
    tags: dict[int, bytes] | None = None  # v2+


def _request(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    return struct(
        flexible,
        "transactional_id" / nullable_string(flexible),
        "transaction_timeout_ms" / Int32,
        *since(v, 3, "producer_id" / Int64, "producer_epoch" / Int16),  # v3
        *since(v, 6, "enable_2pc" / Boolean, "keep_prepared_txn" / Boolean),  # v6
    )


@dataclass(frozen=True, slots=True)
class InitProducerIdResponse:
    error_code: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    throttle_time_ms: int = 0
    ongoing_txn_producer_id: int = NO_PRODUCER_ID  # v6+
    ongoing_txn_producer_epoch: int = NO_PRODUCER_EPOCH  # v6+
    tags: dict[int, bytes] | None = None  # v2+


def _response(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    return struct(
        flexible,
        "throttle_time_ms" / Int32,
        "error_code" / Int16,
        "producer_id" / Int64,
        "producer_epoch" / Int16,
        *since(v, 6, "ongoing_txn_producer_id" / Int64, "ongoing_txn_producer_epoch" / Int16),  # v6
    )


SPEC = register_api(
    key=KEY,
    name="InitProducerId",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=InitProducerIdRequest,
    request_schema=_request,
    response_type=InitProducerIdResponse,
    response_schema=_response,
)
