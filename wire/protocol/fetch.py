"""Fetch (API key 1), versions 0-12: read records from partitions.

Rules:
- One field list, one schema per version (see each field's comment for the version that introduced it). v12 is
  flexible; its tagged fields (request: cluster id; partition response: diverging epoch, current leader, snapshot id)
  are kept raw in ``tags``. v13+ name topics by id instead of name and are not implemented.
- Records travel as raw bytes (``records``, null when the broker has none); decode them with
  :func:`bruce.wire.records.decode_records`, which also handles a partial batch at the end.
- Message formats: v0-v1 return magic 0, v2-v3 magic 0/1, v4+ any magic (the broker down-converts only for older
  versions).
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int8, Int16, Int32, Int64
from ._versioned import array, nullable_array, nullable_bytes, register_api, since, string, struct

KEY = 1
VERSIONS = range(13)
FIRST_FLEXIBLE = 12

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
    tags: dict[int, bytes] | None = None  # v12+


@dataclass(frozen=True, slots=True)
class FetchTopic:
    topic: str
    partitions: tuple[FetchPartition, ...]
    tags: dict[int, bytes] | None = None  # v12+


@dataclass(frozen=True, slots=True)
class ForgottenTopic:
    topic: str
    partitions: tuple[int, ...]
    tags: dict[int, bytes] | None = None  # v12+


@dataclass(frozen=True, slots=True)
class FetchRequest:
    topics: tuple[FetchTopic, ...]
    replica_id: int = -1
    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 0x7FFFFFFF  # v3+
    isolation_level: int = READ_UNCOMMITTED  # v4+
    session_id: int = 0  # v7+
    session_epoch: int = -1  # v7+
    forgotten_topics_data: tuple[ForgottenTopic, ...] = ()  # v7+
    rack_id: str = ""  # v11+
    tags: dict[int, bytes] | None = None  # v12+ (tag 0: cluster id)


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
    )
    topic = struct(flex, "topic" / string(flex), "partitions" / array(flex, partition))
    forgotten = struct(flex, "topic" / string(flex), "partitions" / array(flex, Int32))
    return struct(
        flex,
        "replica_id" / Int32,
        "max_wait_ms" / Int32,
        "min_bytes" / Int32,
        *since(v, 3, "max_bytes" / Int32),  # v3
        *since(v, 4, "isolation_level" / Int8),  # v4
        *since(v, 7, "session_id" / Int32, "session_epoch" / Int32),  # v7: fetch sessions (KIP-227)
        "topics" / array(flex, topic),
        *since(v, 7, "forgotten_topics_data" / array(flex, forgotten)),  # v7
        *since(v, 11, "rack_id" / string(flex)),  # v11
    )


# ---------------------------------------------------------------- response


@dataclass(frozen=True, slots=True)
class AbortedTransaction:
    producer_id: int
    first_offset: int
    tags: dict[int, bytes] | None = None  # v12+


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
    tags: dict[int, bytes] | None = None  # v12+ (0: diverging epoch, 1: current leader, 2: snapshot id)


@dataclass(frozen=True, slots=True)
class FetchTopicResponse:
    topic: str
    partitions: tuple[FetchPartitionResponse, ...]
    tags: dict[int, bytes] | None = None  # v12+


@dataclass(frozen=True, slots=True)
class FetchResponse:
    responses: tuple[FetchTopicResponse, ...]
    throttle_time_ms: int = 0  # v1+
    error_code: int = 0  # v7+
    session_id: int = 0  # v7+
    tags: dict[int, bytes] | None = None  # v12+


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
    )
    topic = struct(flex, "topic" / string(flex), "partitions" / array(flex, partition))
    return struct(
        flex,
        *since(v, 1, "throttle_time_ms" / Int32),  # v1
        *since(v, 7, "error_code" / Int16, "session_id" / Int32),  # v7
        "responses" / array(flex, topic),
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
