"""TxnOffsetCommit (API key 28), versions 0-5: a transactional producer commits a consumer group's offsets inside its
transaction, to the group's coordinator.

Rules: v2 adds the committed leader epoch, v3 the group's generation, member id and instance id (KIP-447) and is
flexible, v4 adds TRANSACTION_ABORTABLE, v5 has v4's bytes but also adds the group to the transaction (KIP-890 part
2, no AddOffsetsToTxn needed).
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32, Int64
from ._versioned import array, nullable_string, register_api, since, string, struct

KEY = 28
VERSIONS = range(6)
FIRST_FLEXIBLE = 3


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitRequestPartition:
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1  # v2+
    committed_metadata: str | None = None
    tags: dict[int, bytes] | None = None  # v3+


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitRequestTopic:
    name: str
    partitions: tuple[TxnOffsetCommitRequestPartition, ...]
    tags: dict[int, bytes] | None = None  # v3+


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitRequest:
    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    generation_id: int = -1  # v3+
    member_id: str = ""  # v3+
    group_instance_id: str | None = None  # v3+
    topics: tuple[TxnOffsetCommitRequestTopic, ...] = ()
    tags: dict[int, bytes] | None = None  # v3+


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitResponsePartition:
    partition_index: int
    error_code: int
    tags: dict[int, bytes] | None = None  # v3+


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitResponseTopic:
    name: str
    partitions: tuple[TxnOffsetCommitResponsePartition, ...]
    tags: dict[int, bytes] | None = None  # v3+


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitResponse:
    throttle_time_ms: int
    topics: tuple[TxnOffsetCommitResponseTopic, ...]
    tags: dict[int, bytes] | None = None  # v3+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    partition = struct(
        flex,
        "partition_index" / Int32,
        "committed_offset" / Int64,
        *since(v, 2, "committed_leader_epoch" / Int32),  # v2
        "committed_metadata" / nullable_string(flex),
    )
    topic = struct(flex, "name" / string(flex), "partitions" / array(flex, partition))
    return struct(
        flex,
        "transactional_id" / string(flex),
        "group_id" / string(flex),
        "producer_id" / Int64,
        "producer_epoch" / Int16,
        *since(v, 3, "generation_id" / Int32),  # v3
        *since(v, 3, "member_id" / string(flex)),  # v3
        *since(v, 3, "group_instance_id" / nullable_string(flex)),  # v3
        "topics" / array(flex, topic),
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    partition = struct(flex, "partition_index" / Int32, "error_code" / Int16)
    topic = struct(flex, "name" / string(flex), "partitions" / array(flex, partition))
    return struct(flex, "throttle_time_ms" / Int32, "topics" / array(flex, topic))


SPEC = register_api(
    key=KEY,
    name="TxnOffsetCommit",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=TxnOffsetCommitRequest,
    request_schema=_request,
    response_type=TxnOffsetCommitResponse,
    response_schema=_response,
)
