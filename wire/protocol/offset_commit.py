"""OffsetCommit (API key 8), versions 0-10: a consumer stores the offsets it has processed with its group coordinator.

Rules:
- v0 names the group only; v1 adds the generation (or, for a KIP-848 member, its epoch) and member id, and a commit
  timestamp per partition (v1 only); v2-v4 carry a retention time instead, v5 drops it (the broker's setting rules).
- v6 adds the leader epoch per partition, v7 the static member's instance id, v8 is flexible, v9 serves the KIP-848
  consumer protocol with v8's bytes, v10 names topics by id (``topic_id``) instead of by name.
- Kafka 4.0 removed v0-v1 from its brokers; older brokers and clients still use them.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32, Int64, Uuid
from ._versioned import array, nullable_string, register_api, since, string, struct, until

KEY = 8
VERSIONS = range(11)
FIRST_FLEXIBLE = 8


@dataclass(frozen=True, slots=True)
class OffsetCommitRequestPartition:
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1  # v6+
    commit_timestamp: int = -1  # v1 only
    committed_metadata: str | None = None
    tags: dict[int, bytes] | None = None  # v8+


@dataclass(frozen=True, slots=True)
class OffsetCommitRequestTopic:
    name: str = ""  # v0-v9
    topic_id: bytes = bytes(16)  # v10+
    partitions: tuple[OffsetCommitRequestPartition, ...] = ()
    tags: dict[int, bytes] | None = None  # v8+


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    group_id: str
    generation_id_or_member_epoch: int = -1  # v1+
    member_id: str = ""  # v1+
    group_instance_id: str | None = None  # v7+
    retention_time_ms: int = -1  # v2-v4
    topics: tuple[OffsetCommitRequestTopic, ...] = ()
    tags: dict[int, bytes] | None = None  # v8+


@dataclass(frozen=True, slots=True)
class OffsetCommitResponsePartition:
    partition_index: int
    error_code: int
    tags: dict[int, bytes] | None = None  # v8+


@dataclass(frozen=True, slots=True)
class OffsetCommitResponseTopic:
    name: str = ""  # v0-v9
    topic_id: bytes = bytes(16)  # v10+
    partitions: tuple[OffsetCommitResponsePartition, ...] = ()
    tags: dict[int, bytes] | None = None  # v8+


@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    throttle_time_ms: int = 0  # v3+
    topics: tuple[OffsetCommitResponseTopic, ...] = ()
    tags: dict[int, bytes] | None = None  # v8+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    partition = struct(
        flex,
        "partition_index" / Int32,
        "committed_offset" / Int64,
        *since(v, 6, "committed_leader_epoch" / Int32),  # v6
        *since(v, 1, *until(v, 1, "commit_timestamp" / Int64)),  # v1 only
        "committed_metadata" / nullable_string(flex),
    )
    topic = struct(
        flex,
        *until(v, 9, "name" / string(flex)),  # v0-v9
        *since(v, 10, "topic_id" / Uuid),  # v10
        "partitions" / array(flex, partition),
    )
    return struct(
        flex,
        "group_id" / string(flex),
        *since(v, 1, "generation_id_or_member_epoch" / Int32),  # v1
        *since(v, 1, "member_id" / string(flex)),  # v1
        *since(v, 7, "group_instance_id" / nullable_string(flex)),  # v7
        *since(v, 2, *until(v, 4, "retention_time_ms" / Int64)),  # v2-v4
        "topics" / array(flex, topic),
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    partition = struct(flex, "partition_index" / Int32, "error_code" / Int16)
    topic = struct(
        flex,
        *until(v, 9, "name" / string(flex)),  # v0-v9
        *since(v, 10, "topic_id" / Uuid),  # v10
        "partitions" / array(flex, partition),
    )
    return struct(
        flex,
        *since(v, 3, "throttle_time_ms" / Int32),  # v3
        "topics" / array(flex, topic),
    )


SPEC = register_api(
    key=KEY,
    name="OffsetCommit",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=OffsetCommitRequest,
    request_schema=_request,
    response_type=OffsetCommitResponse,
    response_schema=_response,
)
