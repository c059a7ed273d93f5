"""Produce (API key 0), versions 0-13: write records to partitions.

Rules:
- ``records`` is raw bytes: a message set (magic 0/1, :mod:`bruce.wire.messageset`) for v0-v2, a RecordBatch v2
  (:mod:`bruce.wire.recordbatch`) for v3+. Kafka 4.x rejects v0-v2 even though it advertises them (KAFKA-18659).
- v9+ is flexible. v10 adds two tagged fields, decoded here: ``current_leader`` per partition and ``node_endpoints``
  (tag 0 each; ``None`` when absent). Other tagged fields stay raw in ``tags``.
- With ``acks=0`` the broker sends no response at all; the caller must not wait for one (some brokers, e.g. tansu,
  answer anyway).
- v11 differs from v10 only in the error codes the broker may return (TRANSACTION_ABORTABLE). v12 has v11's bytes,
  but in a transaction it also adds the partitions to it (KIP-890 part 2, "transactions v2"): a client that still
  sends AddPartitionsToTxn stays at v11. v13 names topics by id (``topic_id``, 16 bytes) instead of by name (KIP-516),
  in the request and the response.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32, Int64, Uuid
from ._versioned import array, nullable_bytes, nullable_string, register_api, since, string, struct, tagged, until

KEY = 0
VERSIONS = range(14)
FIRST_FLEXIBLE = 9
TOPIC_IDS = 13  # the first version that names topics by id
NO_TOPIC_ID = bytes(16)

# ---------------------------------------------------------------- request


@dataclass(frozen=True, slots=True)
class PartitionProduceData:
    index: int
    records: bytes | None
    tags: dict[int, bytes] | None = None  # v9+


@dataclass(frozen=True, slots=True)
class TopicProduceData:
    name: str = ""  # v0-v12
    partition_data: tuple[PartitionProduceData, ...] = ()
    topic_id: bytes = NO_TOPIC_ID  # v13+
    tags: dict[int, bytes] | None = None  # v9+


@dataclass(frozen=True, slots=True)
class ProduceRequest:
    topic_data: tuple[TopicProduceData, ...]
    acks: int = -1
    timeout_ms: int = 10_000
    transactional_id: str | None = None  # v3+
    tags: dict[int, bytes] | None = None  # v9+


def _request(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    partition = struct(flexible, "index" / Int32, "records" / nullable_bytes(flexible))
    topic = struct(
        flexible,
        *until(v, 12, "name" / string(flexible)),  # v0-v12
        *since(v, 13, "topic_id" / Uuid),  # v13
        "partition_data" / array(flexible, partition),
    )
    return struct(
        flexible,
        *since(v, 3, "transactional_id" / nullable_string(flexible)),  # v3
        "acks" / Int16,
        "timeout_ms" / Int32,
        "topic_data" / array(flexible, topic),
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
    name: str = ""  # v0-v12
    partition_responses: tuple[PartitionProduceResponse, ...] = ()
    topic_id: bytes = NO_TOPIC_ID  # v13+
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


# Shared with Fetch, whose answer carries the same tagged structs.
LEADER_ID_AND_EPOCH = struct(True, "leader_id" / Int32, "leader_epoch" / Int32)
NODE_ENDPOINT = struct(True, "node_id" / Int32, "host" / string(True), "port" / Int32, "rack" / nullable_string(True))


def _response(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    record_error = struct(flexible, "batch_index" / Int32, "batch_index_error_message" / nullable_string(flexible))
    partition = struct(
        flexible,
        "index" / Int32,
        "error_code" / Int16,
        "base_offset" / Int64,
        *since(v, 2, "log_append_time_ms" / Int64),  # v2
        *since(v, 5, "log_start_offset" / Int64),  # v5
        *since(v, 8, "record_errors" / array(flexible, record_error)),  # v8
        *since(v, 8, "error_message" / nullable_string(flexible)),  # v8
        tagged=tagged(v, (10, 0, "current_leader", LEADER_ID_AND_EPOCH)),  # v10: tag 0
    )
    topic = struct(
        flexible,
        *until(v, 12, "name" / string(flexible)),  # v0-v12
        *since(v, 13, "topic_id" / Uuid),  # v13
        "partition_responses" / array(flexible, partition),
    )
    return struct(
        flexible,
        "responses" / array(flexible, topic),
        *since(v, 1, "throttle_time_ms" / Int32),  # v1
        tagged=tagged(v, (10, 0, "node_endpoints", array(True, NODE_ENDPOINT))),  # v10: tag 0
    )


SPEC = register_api(
    key=KEY,
    name="Produce",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=ProduceRequest,
    request_schema=_request,
    response_type=ProduceResponse,
    response_schema=_response,
)
