"""AddPartitionsToTxn (API key 24), versions 0-5: a transactional producer tells its transaction coordinator which
partitions its open transaction writes to, before the first batch to each.

Rules:
- v0-v3 (what clients send): the request names the transactional id, the producer id and epoch, and per topic the
  partition indexes; the answer carries one error code per partition (no top-level error).
- v1 equals v0 (responses may come before throttling), v2 only adds PRODUCER_FENCED, v3 is flexible.
- v4+ (KIP-890) is what brokers send each other: the request batches several transactions
  (:class:`AddPartitionsToTxnTransaction`, each with ``verify_only``), the answer has a top-level error code and one
  result per transaction. v5 only adds TRANSACTION_ABORTABLE. A v4+ body leaves the v0-v3 fields at their defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int16, Int32, Int64
from ._versioned import array, register_api, since, string, struct, until

KEY = 24
VERSIONS = range(6)
FIRST_FLEXIBLE = 3
BATCHED = 4  # the first version that batches transactions


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnTopic:
    name: str
    partitions: tuple[int, ...]
    tags: dict[int, bytes] | None = None  # v3+


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnTransaction:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    topics: tuple[AddPartitionsToTxnTopic, ...]
    verify_only: bool = False
    tags: dict[int, bytes] | None = None


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnRequest:
    transactional_id: str = ""  # v0-v3
    producer_id: int = -1  # v0-v3
    producer_epoch: int = -1  # v0-v3
    topics: tuple[AddPartitionsToTxnTopic, ...] = ()  # v0-v3
    transactions: tuple[AddPartitionsToTxnTransaction, ...] = ()  # v4+
    tags: dict[int, bytes] | None = None  # v3+


def _request(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    topic = struct(flexible, "name" / string(flexible), "partitions" / array(flexible, Int32))
    transaction = struct(
        flexible,
        "transactional_id" / string(flexible),
        "producer_id" / Int64,
        "producer_epoch" / Int16,
        "verify_only" / Boolean,
        "topics" / array(flexible, topic),
    )
    return struct(
        flexible,
        *since(v, 4, "transactions" / array(flexible, transaction)),  # v4
        *until(
            v,
            3,  # v0-v3
            "transactional_id" / string(flexible),
            "producer_id" / Int64,
            "producer_epoch" / Int16,
            "topics" / array(flexible, topic),
        ),
    )


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnPartitionResult:
    partition_index: int
    partition_error_code: int
    tags: dict[int, bytes] | None = None  # v3+


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnTopicResult:
    name: str
    results_by_partition: tuple[AddPartitionsToTxnPartitionResult, ...]
    tags: dict[int, bytes] | None = None  # v3+


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnResult:
    transactional_id: str
    topic_results: tuple[AddPartitionsToTxnTopicResult, ...]
    tags: dict[int, bytes] | None = None


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnResponse:
    throttle_time_ms: int
    results_by_topic: tuple[AddPartitionsToTxnTopicResult, ...] = ()  # v0-v3
    error_code: int = 0  # v4+
    results_by_transaction: tuple[AddPartitionsToTxnResult, ...] = ()  # v4+
    tags: dict[int, bytes] | None = None  # v3+

    def errors(self) -> dict[tuple[str, int], int]:
        """``{(topic, partition): error code}`` for every partition answered (v0-v3)."""
        topics = self.results_by_topic
        return {(t.name, p.partition_index): p.partition_error_code for t in topics for p in t.results_by_partition}


def _response(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    partition = struct(flexible, "partition_index" / Int32, "partition_error_code" / Int16)
    topic = struct(flexible, "name" / string(flexible), "results_by_partition" / array(flexible, partition))
    result = struct(flexible, "transactional_id" / string(flexible), "topic_results" / array(flexible, topic))
    return struct(
        flexible,
        "throttle_time_ms" / Int32,
        *since(v, 4, "error_code" / Int16, "results_by_transaction" / array(flexible, result)),  # v4
        *until(v, 3, "results_by_topic" / array(flexible, topic)),  # v0-v3
    )


SPEC = register_api(
    key=KEY,
    name="AddPartitionsToTxn",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=AddPartitionsToTxnRequest,
    request_schema=_request,
    response_type=AddPartitionsToTxnResponse,
    response_schema=_response,
)
