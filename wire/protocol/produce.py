"""Produce (API key 0), versions 0-11: write records to partitions.

Rules:
- ``records`` is raw bytes: a message set (magic 0/1, :mod:`bruce.wire.messageset`) for v0-v2, a RecordBatch v2
  (:mod:`bruce.wire.recordbatch`) for v3+. Kafka 4.x rejects v0-v2 even though it advertises them (KAFKA-18659).
- v9+ is flexible. v10 adds two tagged fields, decoded here: ``current_leader`` per partition and ``node_endpoints``
  (tag 0 each; ``None`` when absent). Other tagged fields stay raw in ``tags``.
- With ``acks=0`` the broker sends no response at all; the caller must not wait for one (some brokers, e.g. tansu,
  answer anyway).
- v11 differs from v10 only in the error codes the broker may return (TRANSACTION_ABORTABLE).
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import (
    Array,
    CompactArray,
    CompactNullableBytes,
    CompactNullableString,
    CompactString,
    Int16,
    Int32,
    Int64,
    NullableBytes,
    NullableString,
    String,
    TaggedFields,
    TaggedStruct,
)
from .base import ApiSpec, register

KEY = 0
FIRST_FLEXIBLE = 9

# ---------------------------------------------------------------- request


@dataclass(frozen=True, slots=True)
class PartitionProduceData:
    index: int
    records: bytes | None
    tags: dict[int, bytes] | None = None  # v9+


@dataclass(frozen=True, slots=True)
class TopicProduceData:
    name: str
    partition_data: tuple[PartitionProduceData, ...]
    tags: dict[int, bytes] | None = None  # v9+


@dataclass(frozen=True, slots=True)
class ProduceRequest:
    topic_data: tuple[TopicProduceData, ...]
    acks: int = -1
    timeout_ms: int = 10_000
    transactional_id: str | None = None  # v3+
    tags: dict[int, bytes] | None = None  # v9+


_PARTITION_V0 = c.Struct("index" / Int32, "records" / NullableBytes)
_TOPIC_V0 = c.Struct("name" / String, "partition_data" / Array(_PARTITION_V0))
_REQUEST_V0 = c.Struct("acks" / Int16, "timeout_ms" / Int32, "topic_data" / Array(_TOPIC_V0))
_REQUEST_V3 = c.Struct("transactional_id" / NullableString, *_REQUEST_V0.subcons)  # v3: + transactional id
_PARTITION_V9 = c.Struct("index" / Int32, "records" / CompactNullableBytes, "tags" / TaggedFields)  # v9: flexible
_TOPIC_V9 = c.Struct("name" / CompactString, "partition_data" / CompactArray(_PARTITION_V9), "tags" / TaggedFields)
_REQUEST_V9 = c.Struct(
    "transactional_id" / CompactNullableString,
    "acks" / Int16,
    "timeout_ms" / Int32,
    "topic_data" / CompactArray(_TOPIC_V9),
    "tags" / TaggedFields,
)

# ---------------------------------------------------------------- response


@dataclass(frozen=True, slots=True)
class BatchIndexAndErrorMessage:
    batch_index: int
    batch_index_error_message: str | None = None
    tags: dict[int, bytes] | None = None  # v9+


@dataclass(frozen=True, slots=True)
class LeaderIdAndEpoch:
    leader_id: int = -1
    leader_epoch: int = -1
    tags: dict[int, bytes] | None = None


@dataclass(frozen=True, slots=True)
class PartitionProduceResponse:
    index: int
    error_code: int
    base_offset: int
    log_append_time_ms: int = -1  # v2+ (-1 unless the topic uses LogAppendTime)
    log_start_offset: int = -1  # v5+
    record_errors: tuple[BatchIndexAndErrorMessage, ...] = ()  # v8+
    error_message: str | None = None  # v8+
    current_leader: LeaderIdAndEpoch | None = None  # v10+ tagged field 0
    tags: dict[int, bytes] | None = None  # v9+


@dataclass(frozen=True, slots=True)
class TopicProduceResponse:
    name: str
    partition_responses: tuple[PartitionProduceResponse, ...]
    tags: dict[int, bytes] | None = None  # v9+


@dataclass(frozen=True, slots=True)
class NodeEndpoint:
    node_id: int
    host: str
    port: int
    rack: str | None = None
    tags: dict[int, bytes] | None = None


@dataclass(frozen=True, slots=True)
class ProduceResponse:
    responses: tuple[TopicProduceResponse, ...]
    throttle_time_ms: int = 0  # v1+
    node_endpoints: tuple[NodeEndpoint, ...] | None = None  # v10+ tagged field 0
    tags: dict[int, bytes] | None = None  # v9+


_PRESPONSE_V0 = c.Struct("index" / Int32, "error_code" / Int16, "base_offset" / Int64)
_PRESPONSE_V2 = c.Struct(*_PRESPONSE_V0.subcons, "log_append_time_ms" / Int64)  # v2: + log append time
_PRESPONSE_V5 = c.Struct(*_PRESPONSE_V2.subcons, "log_start_offset" / Int64)  # v5: + log start offset
_RECORD_ERROR_V8 = c.Struct("batch_index" / Int32, "batch_index_error_message" / NullableString)
_PRESPONSE_V8 = c.Struct(
    *_PRESPONSE_V5.subcons,
    "record_errors" / Array(_RECORD_ERROR_V8),  # v8: + record errors
    "error_message" / NullableString,  # v8: + error message
)
_RECORD_ERROR_V9 = c.Struct(
    "batch_index" / Int32, "batch_index_error_message" / CompactNullableString, "tags" / TaggedFields
)
_PRESPONSE_V9_FIELDS = (
    *_PRESPONSE_V5.subcons,
    "record_errors" / CompactArray(_RECORD_ERROR_V9),
    "error_message" / CompactNullableString,
)
_PRESPONSE_V9 = c.Struct(*_PRESPONSE_V9_FIELDS, "tags" / TaggedFields)  # v9: flexible
_LEADER_V10 = c.Struct("leader_id" / Int32, "leader_epoch" / Int32, "tags" / TaggedFields)
_PRESPONSE_V10 = TaggedStruct(*_PRESPONSE_V9_FIELDS, tagged={0: ("current_leader", _LEADER_V10)})  # v10: tag 0
_NODE_ENDPOINT_V10 = c.Struct(
    "node_id" / Int32, "host" / CompactString, "port" / Int32, "rack" / CompactNullableString, "tags" / TaggedFields
)


def _response(partition: c.Construct, *, throttle: bool) -> c.Struct:
    topic = c.Struct("name" / String, "partition_responses" / Array(partition))
    return c.Struct("responses" / Array(topic), *(["throttle_time_ms" / Int32] if throttle else []))


def _flexible_response(partition: c.Construct, *, endpoints: bool) -> c.Construct:
    topic = c.Struct("name" / CompactString, "partition_responses" / CompactArray(partition), "tags" / TaggedFields)
    fields = ("responses" / CompactArray(topic), "throttle_time_ms" / Int32)
    if not endpoints:
        return c.Struct(*fields, "tags" / TaggedFields)
    return TaggedStruct(*fields, tagged={0: ("node_endpoints", CompactArray(_NODE_ENDPOINT_V10))})


_RESPONSE_V0 = _response(_PRESPONSE_V0, throttle=False)
_RESPONSE_V1 = _response(_PRESPONSE_V0, throttle=True)  # v1: + throttle time
_RESPONSE_V2 = _response(_PRESPONSE_V2, throttle=True)
_RESPONSE_V5 = _response(_PRESPONSE_V5, throttle=True)
_RESPONSE_V8 = _response(_PRESPONSE_V8, throttle=True)
_RESPONSE_V9 = _flexible_response(_PRESPONSE_V9, endpoints=False)
_RESPONSE_V10 = _flexible_response(_PRESPONSE_V10, endpoints=True)  # v10: + node endpoints (tag 0)

_REQUESTS = {v: _REQUEST_V0 if v < 3 else _REQUEST_V3 if v < 9 else _REQUEST_V9 for v in range(12)}
_RESPONSES = {
    0: _RESPONSE_V0,
    1: _RESPONSE_V1,
    2: _RESPONSE_V2,
    3: _RESPONSE_V2,
    4: _RESPONSE_V2,
    5: _RESPONSE_V5,
    6: _RESPONSE_V5,
    7: _RESPONSE_V5,
    8: _RESPONSE_V8,
    9: _RESPONSE_V9,
    10: _RESPONSE_V10,
    11: _RESPONSE_V10,
}

SPEC = register(
    ApiSpec(
        key=KEY,
        name="Produce",
        requests=_REQUESTS,
        responses=_RESPONSES,
        request_type=ProduceRequest,
        response_type=ProduceResponse,
        first_flexible=FIRST_FLEXIBLE,
    )
)
