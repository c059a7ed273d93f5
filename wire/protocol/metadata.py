"""Metadata (API key 3), versions 0-13: brokers, topics, partitions and their leaders.

Rules:
- Which topics: in v0 an *empty* list means all topics; from v1 on ``topics=None`` means all topics and an empty list
  means none. :func:`metadata_request` hides that difference. v13 adds a top-level error code to the answer
  (REBOOTSTRAP_REQUIRED, KIP-1102).
- v4+ lets the client forbid automatic topic creation; v8-v10 can ask for the cluster's authorized operations, v8+
  for each topic's (a 32-bit mask; ``-2147483648`` = not requested).
- v9+ is flexible. v10 adds topic ids (16 bytes; all zero = none) to the request and the response; v12 lets a topic
  name in the response be null (a topic asked for by id that does not exist).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import construct as c

from ..errors import UsageError
from ..primitives import Boolean, Int16, Int32, Uuid
from ._versioned import array, nullable_array, nullable_string, register_api, since, string, struct, until

KEY = 3
VERSIONS = range(14)
FIRST_FLEXIBLE = 9
NO_TOPIC_ID = bytes(16)
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)

# ---------------------------------------------------------------- request


@dataclass(frozen=True, slots=True)
class MetadataRequestTopic:
    name: str | None  # null only from v10 on (when asking by topic id)
    topic_id: bytes = NO_TOPIC_ID  # v10+
    tags: dict[int, bytes] | None = None  # v9+


@dataclass(frozen=True, slots=True)
class MetadataRequest:
    topics: tuple[MetadataRequestTopic, ...] | None = None  # None = all topics (v1+); v0 uses () for all topics
    allow_auto_topic_creation: bool = True  # v4+
    include_cluster_authorized_operations: bool = False  # v8-v10
    include_topic_authorized_operations: bool = False  # v8+
    tags: dict[int, bytes] | None = None  # v9+


def metadata_request(
    topics: Sequence[str] | None, *, version: int, allow_auto_topic_creation: bool = True
) -> MetadataRequest:
    """A request for ``topics`` (``None`` = every topic) that means the same at ``version`` (v0 has no null list)."""
    if topics is not None and not topics and version == 0:
        raise UsageError("Metadata v0 cannot ask for no topics: an empty list means all topics")
    if topics is None:
        return MetadataRequest(topics=() if version == 0 else None, allow_auto_topic_creation=allow_auto_topic_creation)
    wanted = tuple(MetadataRequestTopic(name) for name in topics)
    return MetadataRequest(topics=wanted, allow_auto_topic_creation=allow_auto_topic_creation)


def _request(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    topic = struct(
        flexible,
        *since(v, 10, "topic_id" / Uuid),  # v10
        "name" / (nullable_string(flexible) if v >= 10 else string(flexible)),  # v10: nullable
    )
    return struct(
        flexible,
        "topics" / (nullable_array(flexible, topic) if v >= 1 else array(flexible, topic)),  # v1: null = all topics
        *since(v, 4, "allow_auto_topic_creation" / Boolean),  # v4
        *since(v, 8, *until(v, 10, "include_cluster_authorized_operations" / Boolean)),  # v8-v10
        *since(v, 8, "include_topic_authorized_operations" / Boolean),  # v8
    )


# ---------------------------------------------------------------- response


@dataclass(frozen=True, slots=True)
class MetadataResponseBroker:
    node_id: int
    host: str
    port: int
    rack: str | None = None  # v1+
    tags: dict[int, bytes] | None = None  # v9+


@dataclass(frozen=True, slots=True)
class MetadataResponsePartition:
    error_code: int
    partition_index: int
    leader_id: int
    replica_nodes: tuple[int, ...]
    isr_nodes: tuple[int, ...]
    leader_epoch: int = -1  # v7+
    offline_replicas: tuple[int, ...] = ()  # v5+
    tags: dict[int, bytes] | None = None  # v9+


@dataclass(frozen=True, slots=True)
class MetadataResponseTopic:
    error_code: int
    name: str | None  # null only from v12 on
    partitions: tuple[MetadataResponsePartition, ...]
    topic_id: bytes = NO_TOPIC_ID  # v10+
    is_internal: bool = False  # v1+
    topic_authorized_operations: int = AUTHORIZED_OPERATIONS_OMITTED  # v8+
    tags: dict[int, bytes] | None = None  # v9+


@dataclass(frozen=True, slots=True)
class MetadataResponse:
    brokers: tuple[MetadataResponseBroker, ...]
    topics: tuple[MetadataResponseTopic, ...]
    throttle_time_ms: int = 0  # v3+
    cluster_id: str | None = None  # v2+
    controller_id: int = -1  # v1+
    cluster_authorized_operations: int = AUTHORIZED_OPERATIONS_OMITTED  # v8-v10
    error_code: int = 0  # v13+
    tags: dict[int, bytes] | None = None  # v9+


def _response(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    broker = struct(
        flexible,
        "node_id" / Int32,
        "host" / string(flexible),
        "port" / Int32,
        *since(v, 1, "rack" / nullable_string(flexible)),  # v1
    )
    partition = struct(
        flexible,
        "error_code" / Int16,
        "partition_index" / Int32,
        "leader_id" / Int32,
        *since(v, 7, "leader_epoch" / Int32),  # v7
        "replica_nodes" / array(flexible, Int32),
        "isr_nodes" / array(flexible, Int32),
        *since(v, 5, "offline_replicas" / array(flexible, Int32)),  # v5
    )
    topic = struct(
        flexible,
        "error_code" / Int16,
        "name" / (nullable_string(flexible) if v >= 12 else string(flexible)),  # v12: nullable
        *since(v, 10, "topic_id" / Uuid),  # v10
        *since(v, 1, "is_internal" / Boolean),  # v1
        "partitions" / array(flexible, partition),
        *since(v, 8, "topic_authorized_operations" / Int32),  # v8
    )
    return struct(
        flexible,
        *since(v, 3, "throttle_time_ms" / Int32),  # v3
        "brokers" / array(flexible, broker),
        *since(v, 2, "cluster_id" / nullable_string(flexible)),  # v2
        *since(v, 1, "controller_id" / Int32),  # v1
        "topics" / array(flexible, topic),
        *since(v, 8, *until(v, 10, "cluster_authorized_operations" / Int32)),  # v8-v10
        *since(v, 13, "error_code" / Int16),  # v13
    )


SPEC = register_api(
    key=KEY,
    name="Metadata",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=MetadataRequest,
    request_schema=_request,
    response_type=MetadataResponse,
    response_schema=_response,
)
