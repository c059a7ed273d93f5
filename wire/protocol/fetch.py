"""Fetch (API key 1), versions 0-18: read records from partitions.

Rules:
- One field list, one schema per version (see each field's comment for the version that introduced it). v12 is
  flexible; its tagged fields are decoded by name (``None`` when absent): the request's cluster id (v12) and replica
  state (v15, a follower's id and epoch, replacing ``replica_id``), a partition's replica directory id (v17) and
  high watermark (v18, KIP-1166); the answer's diverging epoch, current leader and snapshot id per partition (v12),
  and the node endpoints of the leaders it names (v16, KIP-951).
- v13+ name topics by id (``topic_id``, 16 bytes) instead of by name (KIP-516). v14 and v16 change only the errors a
  broker may return or what it fills in.
- Records travel as raw bytes (``records``, null when the broker has none); decode them with
  :func:`bruce.wire.records.decode_records`, which also handles a partial batch at the end.
- Message formats: v0-v1 return magic 0, v2-v3 magic 0/1, v4+ any magic (the broker down-converts only for older
  versions).
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int8, Int16, Int32, Int64, Uuid
from ._versioned import (
    array,
    nullable_array,
    nullable_bytes,
    nullable_string,
    register_api,
    since,
    string,
    struct,
    tagged,
    until,
)
from .produce import LEADER_ID_AND_EPOCH, NODE_ENDPOINT, LeaderIdAndEpoch, NodeEndpoint

KEY = 1
VERSIONS = range(19)
FIRST_FLEXIBLE = 12
NO_TOPIC_ID = bytes(16)

READ_UNCOMMITTED = 0
READ_COMMITTED = 1

# ---------------------------------------------------------------- request


@dataclass(frozen=True, slots=True)
class FetchPartition:
    partition: int
    fetch_offset: int
    partition_max_bytes: int = 1 << 20
    current_leader_epoch: int = -1  # v9+
    last_fetched_epoch: int = -1  # v12+
    log_start_offset: int = -1  # v5+ (followers only)
    replica_directory_id: bytes | None = None  # v17+ tagged field 0 (followers only)
    high_watermark: int | None = None  # v18+ tagged field 1 (followers only)
    tags: dict[int, bytes] | None = None  # v12+


@dataclass(frozen=True, slots=True)
class FetchTopic:
    topic: str = ""  # v0-v12
    partitions: tuple[FetchPartition, ...] = ()
    topic_id: bytes = NO_TOPIC_ID  # v13+
    tags: dict[int, bytes] | None = None  # v12+


@dataclass(frozen=True, slots=True)
class ForgottenTopic:
    topic: str = ""  # v7-v12
    partitions: tuple[int, ...] = ()
    topic_id: bytes = NO_TOPIC_ID  # v13+
    tags: dict[int, bytes] | None = None  # v12+


@dataclass(frozen=True, slots=True)
class ReplicaState:
    replica_id: int = -1
    replica_epoch: int = -1
    tags: dict[int, bytes] | None = None


@dataclass(frozen=True, slots=True)
class FetchRequest:
    topics: tuple[FetchTopic, ...]
    cluster_id: str | None = None  # v12+ tagged field 0
    replica_id: int = -1  # v0-v14
    replica_state: ReplicaState | None = None  # v15+ tagged field 1 (followers only)
    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 0x7FFFFFFF  # v3+
    isolation_level: int = READ_UNCOMMITTED  # v4+
    session_id: int = 0  # v7+
    session_epoch: int = -1  # v7+
    forgotten_topics_data: tuple[ForgottenTopic, ...] = ()  # v7+
    rack_id: str = ""  # v11+
    tags: dict[int, bytes] | None = None  # v12+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    partition = struct(
        flex,
        "partition" / Int32,
        *since(v, 9, "current_leader_epoch" / Int32),  # v9
        "fetch_offset" / Int64,
        *since(v, 12, "last_fetched_epoch" / Int32),  # v12
        *since(v, 5, "log_start_offset" / Int64),  # v5
        "partition_max_bytes" / Int32,
        tagged=tagged(v, (17, 0, "replica_directory_id", Uuid), (18, 1, "high_watermark", Int64)),  # v17: 0, v18: 1
    )
    topic = struct(
        flex,
        *until(v, 12, "topic" / string(flex)),  # v0-v12
        *since(v, 13, "topic_id" / Uuid),  # v13
        "partitions" / array(flex, partition),
    )
    forgotten = struct(
        flex,
        *until(v, 12, "topic" / string(flex)),  # v7-v12
        *since(v, 13, "topic_id" / Uuid),  # v13
        "partitions" / array(flex, Int32),
    )
    replica_state = struct(True, "replica_id" / Int32, "replica_epoch" / Int64)
    return struct(
        flex,
        *until(v, 14, "replica_id" / Int32),  # v0-v14
        "max_wait_ms" / Int32,
        "min_bytes" / Int32,
        *since(v, 3, "max_bytes" / Int32),  # v3
        *since(v, 4, "isolation_level" / Int8),  # v4
        *since(v, 7, "session_id" / Int32, "session_epoch" / Int32),  # v7: fetch sessions (KIP-227)
        "topics" / array(flex, topic),
        *since(v, 7, "forgotten_topics_data" / array(flex, forgotten)),  # v7
        *since(v, 11, "rack_id" / string(flex)),  # v11
        tagged=tagged(v, (12, 0, "cluster_id", nullable_string(True)), (15, 1, "replica_state", replica_state)),
    )  # tags: v12 cluster id, v15 replica state


# ---------------------------------------------------------------- response


@dataclass(frozen=True, slots=True)
class AbortedTransaction:
    producer_id: int
    first_offset: int
    tags: dict[int, bytes] | None = None  # v12+


@dataclass(frozen=True, slots=True)
class EpochEndOffset:
    epoch: int = -1
    end_offset: int = -1
    tags: dict[int, bytes] | None = None


@dataclass(frozen=True, slots=True)
class SnapshotId:
    end_offset: int = -1
    epoch: int = -1
    tags: dict[int, bytes] | None = None


@dataclass(frozen=True, slots=True)
class FetchPartitionResponse:
    partition_index: int
    error_code: int
    high_watermark: int
    last_stable_offset: int = -1  # v4+
    log_start_offset: int = -1  # v5+
    aborted_transactions: tuple[AbortedTransaction, ...] | None = None  # v4+ (null: none reported)
    preferred_read_replica: int = -1  # v11+
    records: bytes | None = None
    diverging_epoch: EpochEndOffset | None = None  # v12+ tagged field 0
    current_leader: LeaderIdAndEpoch | None = None  # v12+ tagged field 1
    snapshot_id: SnapshotId | None = None  # v12+ tagged field 2
    tags: dict[int, bytes] | None = None  # v12+


@dataclass(frozen=True, slots=True)
class FetchTopicResponse:
    topic: str = ""  # v0-v12
    partitions: tuple[FetchPartitionResponse, ...] = ()
    topic_id: bytes = NO_TOPIC_ID  # v13+
    tags: dict[int, bytes] | None = None  # v12+


@dataclass(frozen=True, slots=True)
class FetchResponse:
    responses: tuple[FetchTopicResponse, ...]
    throttle_time_ms: int = 0  # v1+
    error_code: int = 0  # v7+
    session_id: int = 0  # v7+
    node_endpoints: tuple[NodeEndpoint, ...] | None = None  # v16+ tagged field 0
    tags: dict[int, bytes] | None = None  # v12+


_EPOCH_END_OFFSET = struct(True, "epoch" / Int32, "end_offset" / Int64)
_SNAPSHOT_ID = struct(True, "end_offset" / Int64, "epoch" / Int32)


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    aborted = struct(flex, "producer_id" / Int64, "first_offset" / Int64)
    partition = struct(
        flex,
        "partition_index" / Int32,
        "error_code" / Int16,
        "high_watermark" / Int64,
        *since(v, 4, "last_stable_offset" / Int64),  # v4
        *since(v, 5, "log_start_offset" / Int64),  # v5
        *since(v, 4, "aborted_transactions" / nullable_array(flex, aborted)),  # v4
        *since(v, 11, "preferred_read_replica" / Int32),  # v11
        "records" / nullable_bytes(flex),
        tagged=tagged(
            v,
            (12, 0, "diverging_epoch", _EPOCH_END_OFFSET),
            (12, 1, "current_leader", LEADER_ID_AND_EPOCH),
            (12, 2, "snapshot_id", _SNAPSHOT_ID),
        ),  # v12: tags 0-2
    )
    topic = struct(
        flex,
        *until(v, 12, "topic" / string(flex)),  # v0-v12
        *since(v, 13, "topic_id" / Uuid),  # v13
        "partitions" / array(flex, partition),
    )
    return struct(
        flex,
        *since(v, 1, "throttle_time_ms" / Int32),  # v1
        *since(v, 7, "error_code" / Int16, "session_id" / Int32),  # v7
        "responses" / array(flex, topic),
        tagged=tagged(v, (16, 0, "node_endpoints", array(True, NODE_ENDPOINT))),  # v16: tag 0
    )


SPEC = register_api(
    key=KEY,
    name="Fetch",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=FetchRequest,
    request_schema=_request,
    response_type=FetchResponse,
    response_schema=_response,
)
