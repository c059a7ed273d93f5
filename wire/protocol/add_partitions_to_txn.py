"""AddPartitionsToTxn (API key 24), versions 0-3: a transactional producer tells its transaction coordinator which
partitions its open transaction writes to, before the first batch to each.

Rules:
- The request names the transactional id, the producer id and epoch, and per topic the partition indexes; the answer
  carries one error code per partition (no top-level error in these versions).
- v1 equals v0 (responses may come before throttling), v2 only adds PRODUCER_FENCED, v3 is flexible.
- v4+ (KIP-890) batches several transactions and is meant for brokers talking to each other; clients stay at v3.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32, Int64
from ._versioned import array, register_api, string, struct

KEY = 24
VERSIONS = range(4)
FIRST_FLEXIBLE = 3


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnTopic:
    name: str
    partitions: tuple[int, ...]
    tags: dict[int, bytes] | None = None  # v3+


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    topics: tuple[AddPartitionsToTxnTopic, ...]
    tags: dict[int, bytes] | None = None  # v3+


def _request(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    topic = struct(flexible, "name" / string(flexible), "partitions" / array(flexible, Int32))
    return struct(
        flexible,
        "transactional_id" / string(flexible),
        "producer_id" / Int64,
        "producer_epoch" / Int16,
        "topics" / array(flexible, topic),
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
class AddPartitionsToTxnResponse:
    throttle_time_ms: int
    results_by_topic: tuple[AddPartitionsToTxnTopicResult, ...]
    tags: dict[int, bytes] | None = None  # v3+

    def errors(self) -> dict[tuple[str, int], int]:
        """``{(topic, partition): error code}`` for every partition answered."""
        topics = self.results_by_topic
        return {(t.name, p.partition_index): p.partition_error_code for t in topics for p in t.results_by_partition}


def _response(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    partition = struct(flexible, "partition_index" / Int32, "partition_error_code" / Int16)
    topic = struct(flexible, "name" / string(flexible), "results_by_partition" / array(flexible, partition))
    return struct(flexible, "throttle_time_ms" / Int32, "results_by_topic" / array(flexible, topic))


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
