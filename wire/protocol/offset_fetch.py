"""OffsetFetch (API key 9), versions 0-10: a consumer asks its group coordinator for the offsets committed for a group.

Rules:
- v0-v7 ask for one group: ``group_id`` and ``topics`` (from v2, null means every topic), answered by ``topics`` and,
  from v2, a top-level error code. v5 adds each partition's leader epoch, v6 is flexible, v7 ``require_stable``.
- v8+ ask for several groups at once (``groups``, each with its topics or null for all) and answer per group
  (``groups``); the v0-v7 fields stay at their defaults. v9 adds the KIP-848 member id and epoch, v10 names topics by
  id (``topic_id``).
- v0 read ZooKeeper's offsets and was removed from Kafka 4.0's brokers.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int16, Int32, Int64, Uuid
from ._versioned import array, nullable_array, nullable_string, register_api, since, string, struct, until

KEY = 9
VERSIONS = range(11)
FIRST_FLEXIBLE = 6


@dataclass(frozen=True, slots=True)
class OffsetFetchRequestTopic:
    name: str
    partition_indexes: tuple[int, ...]
    tags: dict[int, bytes] | None = None  # v6+


@dataclass(frozen=True, slots=True)
class OffsetFetchRequestTopics:
    name: str = ""  # v8-v9
    topic_id: bytes = bytes(16)  # v10+
    partition_indexes: tuple[int, ...] = ()
    tags: dict[int, bytes] | None = None  # v6+


@dataclass(frozen=True, slots=True)
class OffsetFetchRequestGroup:
    group_id: str
    member_id: str | None = None  # v9+
    member_epoch: int = -1  # v9+
    topics: tuple[OffsetFetchRequestTopics, ...] | None = None
    tags: dict[int, bytes] | None = None  # v6+


@dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    group_id: str = ""  # v0-v7
    topics: tuple[OffsetFetchRequestTopic, ...] | None = None  # v0-v7
    groups: tuple[OffsetFetchRequestGroup, ...] = ()  # v8+
    require_stable: bool = False  # v7+
    tags: dict[int, bytes] | None = None  # v6+


@dataclass(frozen=True, slots=True)
class OffsetFetchResponsePartition:
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1  # v5+
    metadata: str | None = None
    error_code: int = 0
    tags: dict[int, bytes] | None = None  # v6+


@dataclass(frozen=True, slots=True)
class OffsetFetchResponseTopic:
    name: str
    partitions: tuple[OffsetFetchResponsePartition, ...]
    tags: dict[int, bytes] | None = None  # v6+


@dataclass(frozen=True, slots=True)
class OffsetFetchResponsePartitions:
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    metadata: str | None = None
    error_code: int = 0
    tags: dict[int, bytes] | None = None  # v6+


@dataclass(frozen=True, slots=True)
class OffsetFetchResponseTopics:
    name: str = ""  # v8-v9
    topic_id: bytes = bytes(16)  # v10+
    partitions: tuple[OffsetFetchResponsePartitions, ...] = ()
    tags: dict[int, bytes] | None = None  # v6+


@dataclass(frozen=True, slots=True)
class OffsetFetchResponseGroup:
    group_id: str
    topics: tuple[OffsetFetchResponseTopics, ...]
    error_code: int = 0
    tags: dict[int, bytes] | None = None  # v6+


@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    throttle_time_ms: int = 0  # v3+
    topics: tuple[OffsetFetchResponseTopic, ...] = ()  # v0-v7
    error_code: int = 0  # v2-v7
    groups: tuple[OffsetFetchResponseGroup, ...] = ()  # v8+
    tags: dict[int, bytes] | None = None  # v6+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    topic = struct(flex, "name" / string(flex), "partition_indexes" / array(flex, Int32))
    topics = struct(
        flex,
        *until(v, 9, "name" / string(flex)),  # v8-v9
        *since(v, 10, "topic_id" / Uuid),  # v10
        "partition_indexes" / array(flex, Int32),
    )
    group = struct(
        flex,
        "group_id" / string(flex),
        *since(v, 9, "member_id" / nullable_string(flex)),  # v9
        *since(v, 9, "member_epoch" / Int32),  # v9
        "topics" / nullable_array(flex, topics),
    )
    return struct(
        flex,
        *until(v, 7, "group_id" / string(flex)),  # v0-v7
        *until(v, 7, "topics" / (nullable_array(flex, topic) if v >= 2 else array(flex, topic))),  # v0-v7; v2: nullable
        *since(v, 8, "groups" / array(flex, group)),  # v8
        *since(v, 7, "require_stable" / Boolean),  # v7
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    partition = struct(
        flex,
        "partition_index" / Int32,
        "committed_offset" / Int64,
        *since(v, 5, "committed_leader_epoch" / Int32),  # v5
        "metadata" / nullable_string(flex),
        "error_code" / Int16,
    )
    topic = struct(flex, "name" / string(flex), "partitions" / array(flex, partition))
    partitions = struct(
        flex,
        "partition_index" / Int32,
        "committed_offset" / Int64,
        "committed_leader_epoch" / Int32,
        "metadata" / nullable_string(flex),
        "error_code" / Int16,
    )
    topics = struct(
        flex,
        *until(v, 9, "name" / string(flex)),  # v8-v9
        *since(v, 10, "topic_id" / Uuid),  # v10
        "partitions" / array(flex, partitions),
    )
    group = struct(flex, "group_id" / string(flex), "topics" / array(flex, topics), "error_code" / Int16)
    return struct(
        flex,
        *since(v, 3, "throttle_time_ms" / Int32),  # v3
        *until(v, 7, "topics" / array(flex, topic)),  # v0-v7
        *since(v, 2, *until(v, 7, "error_code" / Int16)),  # v2-v7
        *since(v, 8, "groups" / array(flex, group)),  # v8
    )


SPEC = register_api(
    key=KEY,
    name="OffsetFetch",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=OffsetFetchRequest,
    request_schema=_request,
    response_type=OffsetFetchResponse,
    response_schema=_response,
)
