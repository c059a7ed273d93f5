"""Metadata (API key 3), versions 0-12: brokers, topics, partitions and their leaders.

Rules:
- Which topics: in v0 an *empty* list means all topics; from v1 on ``topics=None`` means all topics and an empty list
  means none. :func:`metadata_request` hides that difference.
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
from ..primitives import (
    Array,
    Boolean,
    CompactArray,
    CompactNullableArray,
    CompactNullableString,
    CompactString,
    Int16,
    Int32,
    NullableArray,
    NullableString,
    String,
    TaggedFields,
    Uuid,
)
from .base import ApiSpec, register

KEY = 3
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


_RTOPIC_V0 = c.Struct("name" / String)
_REQUEST_V0 = c.Struct("topics" / Array(_RTOPIC_V0))
_REQUEST_V1 = c.Struct("topics" / NullableArray(_RTOPIC_V0))  # v1: null = all topics
_REQUEST_V4 = c.Struct(*_REQUEST_V1.subcons, "allow_auto_topic_creation" / Boolean)  # v4: + auto creation switch
_REQUEST_V8 = c.Struct(
    *_REQUEST_V4.subcons,
    "include_cluster_authorized_operations" / Boolean,  # v8
    "include_topic_authorized_operations" / Boolean,  # v8
)
_RTOPIC_V9 = c.Struct("name" / CompactString, "tags" / TaggedFields)
_REQUEST_V9 = c.Struct(  # v9: flexible
    "topics" / CompactNullableArray(_RTOPIC_V9), *_REQUEST_V8.subcons[1:], "tags" / TaggedFields
)
_RTOPIC_V10 = c.Struct("topic_id" / Uuid, "name" / CompactNullableString, "tags" / TaggedFields)  # v10: + topic id
_REQUEST_V10 = c.Struct("topics" / CompactNullableArray(_RTOPIC_V10), *_REQUEST_V9.subcons[1:])
_REQUEST_V11 = c.Struct(  # v11: - include_cluster_authorized_operations
    *(sc for sc in _REQUEST_V10.subcons if sc.name != "include_cluster_authorized_operations")
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
    tags: dict[int, bytes] | None = None  # v9+


_BROKER_V0 = c.Struct("node_id" / Int32, "host" / String, "port" / Int32)
_BROKER_V1 = c.Struct(*_BROKER_V0.subcons, "rack" / NullableString)  # v1: + rack
_PARTITION_V0 = c.Struct(
    "error_code" / Int16,
    "partition_index" / Int32,
    "leader_id" / Int32,
    "replica_nodes" / Array(Int32),
    "isr_nodes" / Array(Int32),
)
_PARTITION_V5 = c.Struct(*_PARTITION_V0.subcons, "offline_replicas" / Array(Int32))  # v5: + offline replicas
_PARTITION_V7 = c.Struct(*_PARTITION_V5.subcons[:3], "leader_epoch" / Int32, *_PARTITION_V5.subcons[3:])  # v7: epoch
_TOPIC_V0_FIELDS = ("error_code" / Int16, "name" / String)


def _topic(partition: c.Construct, *, internal: bool = True, operations: bool = False) -> c.Struct:
    return c.Struct(
        *_TOPIC_V0_FIELDS,
        *(["is_internal" / Boolean] if internal else []),  # v1
        "partitions" / Array(partition),
        *(["topic_authorized_operations" / Int32] if operations else []),  # v8
    )


_RESPONSE_V0 = c.Struct("brokers" / Array(_BROKER_V0), "topics" / Array(_topic(_PARTITION_V0, internal=False)))
_RESPONSE_V1 = c.Struct(  # v1: + rack, controller id, is_internal
    "brokers" / Array(_BROKER_V1), "controller_id" / Int32, "topics" / Array(_topic(_PARTITION_V0))
)
_RESPONSE_V2 = c.Struct(*_RESPONSE_V1.subcons[:1], "cluster_id" / NullableString, *_RESPONSE_V1.subcons[1:])  # v2
_RESPONSE_V3 = c.Struct("throttle_time_ms" / Int32, *_RESPONSE_V2.subcons)  # v3: + throttle time
_RESPONSE_V5 = c.Struct(*_RESPONSE_V3.subcons[:-1], "topics" / Array(_topic(_PARTITION_V5)))  # v5: offline replicas
_RESPONSE_V7 = c.Struct(*_RESPONSE_V3.subcons[:-1], "topics" / Array(_topic(_PARTITION_V7)))  # v7: leader epoch
_RESPONSE_V8 = c.Struct(  # v8: + authorized operations
    *_RESPONSE_V3.subcons[:-1],
    "topics" / Array(_topic(_PARTITION_V7, operations=True)),
    "cluster_authorized_operations" / Int32,
)

# v9: flexible
_BROKER_V9 = c.Struct(
    "node_id" / Int32, "host" / CompactString, "port" / Int32, "rack" / CompactNullableString, "tags" / TaggedFields
)
_PARTITION_V9 = c.Struct(
    *_PARTITION_V7.subcons[:4],
    "replica_nodes" / CompactArray(Int32),
    "isr_nodes" / CompactArray(Int32),
    "offline_replicas" / CompactArray(Int32),
    "tags" / TaggedFields,
)


def _flexible_topic(*, topic_id: bool, nullable_name: bool) -> c.Struct:
    return c.Struct(
        "error_code" / Int16,
        "name" / (CompactNullableString if nullable_name else CompactString),  # v12: nullable
        *(["topic_id" / Uuid] if topic_id else []),  # v10: + topic id
        "is_internal" / Boolean,
        "partitions" / CompactArray(_PARTITION_V9),
        "topic_authorized_operations" / Int32,
        "tags" / TaggedFields,
    )


def _flexible_response(topic: c.Struct, *, cluster_operations: bool) -> c.Struct:
    return c.Struct(
        "throttle_time_ms" / Int32,
        "brokers" / CompactArray(_BROKER_V9),
        "cluster_id" / CompactNullableString,
        "controller_id" / Int32,
        "topics" / CompactArray(topic),
        *(["cluster_authorized_operations" / Int32] if cluster_operations else []),  # v11: removed
        "tags" / TaggedFields,
    )


_RESPONSE_V9 = _flexible_response(_flexible_topic(topic_id=False, nullable_name=False), cluster_operations=True)
_RESPONSE_V10 = _flexible_response(_flexible_topic(topic_id=True, nullable_name=False), cluster_operations=True)
_RESPONSE_V11 = _flexible_response(_flexible_topic(topic_id=True, nullable_name=False), cluster_operations=False)
_RESPONSE_V12 = _flexible_response(_flexible_topic(topic_id=True, nullable_name=True), cluster_operations=False)

_REQUESTS = {
    0: _REQUEST_V0,
    1: _REQUEST_V1,
    2: _REQUEST_V1,
    3: _REQUEST_V1,
    4: _REQUEST_V4,
    5: _REQUEST_V4,
    6: _REQUEST_V4,
    7: _REQUEST_V4,
    8: _REQUEST_V8,
    9: _REQUEST_V9,
    10: _REQUEST_V10,
    11: _REQUEST_V11,
    12: _REQUEST_V11,
}
_RESPONSES = {
    0: _RESPONSE_V0,
    1: _RESPONSE_V1,
    2: _RESPONSE_V2,
    3: _RESPONSE_V3,
    4: _RESPONSE_V3,
    5: _RESPONSE_V5,
    6: _RESPONSE_V5,
    7: _RESPONSE_V7,
    8: _RESPONSE_V8,
    9: _RESPONSE_V9,
    10: _RESPONSE_V10,
    11: _RESPONSE_V11,
    12: _RESPONSE_V12,
}

SPEC = register(
    ApiSpec(
        key=KEY,
        name="Metadata",
        requests=_REQUESTS,
        responses=_RESPONSES,
        request_type=MetadataRequest,
        response_type=MetadataResponse,
        first_flexible=FIRST_FLEXIBLE,
    )
)
