"""EndTxn (API key 26), versions 0-5: a transactional producer asks its transaction coordinator to commit or abort
the open transaction; the coordinator then writes the commit or abort marker to every partition of it.

Rules:
- The request names the transactional id, the producer id and epoch, and ``committed`` (True: commit, False: abort);
  the answer is one error code.
- v1 equals v0 (responses may come before throttling), v2 only adds PRODUCER_FENCED, v3 is flexible.
- v4 only adds TRANSACTION_ABORTABLE; v5 (KIP-890 part 2) bumps the epoch at every transaction's end and answers the
  producer id and the new epoch. The producer here speaks v3 at most (``bruce.wire.versions``), so its epoch stays
  the same for its whole life.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int16, Int32, Int64
from ._versioned import register_api, since, string, struct

KEY = 26
VERSIONS = range(6)
FIRST_FLEXIBLE = 3
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class EndTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    tags: dict[int, bytes] | None = None  # v3+


def _request(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    return struct(
        flexible,
        "transactional_id" / string(flexible),
        "producer_id" / Int64,
        "producer_epoch" / Int16,
        "committed" / Boolean,
    )


@dataclass(frozen=True, slots=True)
class EndTxnResponse:
    throttle_time_ms: int
    error_code: int
    producer_id: int = NO_PRODUCER_ID  # v5+
    producer_epoch: int = NO_PRODUCER_EPOCH  # v5+
    tags: dict[int, bytes] | None = None  # v3+


def _response(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    return struct(
        flexible,
        "throttle_time_ms" / Int32,
        "error_code" / Int16,
        *since(v, 5, "producer_id" / Int64, "producer_epoch" / Int16),  # v5
    )


SPEC = register_api(
    key=KEY,
    name="EndTxn",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=EndTxnRequest,
    request_schema=_request,
    response_type=EndTxnResponse,
    response_schema=_response,
)
