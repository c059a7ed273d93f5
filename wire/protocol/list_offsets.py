"""ListOffsets (API key 2), versions 0-11: the offset of a partition at a timestamp (or its earliest / latest).

Rules:
- v0 answers with an array of "old style" offsets (up to ``max_num_offsets`` of them); v1+ with one offset and its
  timestamp. v2 adds the isolation level, v4 the leader epoch, v6 makes it flexible. v7-v9 only add accepted special
  timestamps (max timestamp -3, earliest local -4, latest tiered -5); their schema equals v6. v10 adds the time the
  broker may take to ask tiered storage (KIP-1075), v11 the earliest pending upload timestamp -6 (KIP-1023).
- Special timestamps: :data:`LATEST` (-1) is the next offset to be written, :data:`EARLIEST` (-2) the log start.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int8, Int16, Int32, Int64
from ._versioned import array, register_api, since, string, struct, until

KEY = 2
VERSIONS = range(12)
FIRST_FLEXIBLE = 6

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3  # v7+


@dataclass(frozen=True, slots=True)
class ListOffsetsPartition:
    partition_index: int
    timestamp: int = LATEST
    current_leader_epoch: int = -1  # v4+
    max_num_offsets: int = 1  # v0 only
    tags: dict[int, bytes] | None = None  # v6+


@dataclass(frozen=True, slots=True)
class ListOffsetsTopic:
    name: str
    partitions: tuple[ListOffsetsPartition, ...]
    tags: dict[int, bytes] | None = None  # v6+


@dataclass(frozen=True, slots=True)
class ListOffsetsRequest:
    topics: tuple[ListOffsetsTopic, ...]
    replica_id: int = -1
    isolation_level: int = 0  # v2+
    timeout_ms: int = 0  # v10+
    tags: dict[int, bytes] | None = None  # v6+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    partition = struct(
        flex,
        "partition_index" / Int32,
        *since(v, 4, "current_leader_epoch" / Int32),  # v4
        "timestamp" / Int64,
        *until(v, 0, "max_num_offsets" / Int32),  # v0 only
    )
    topic = struct(flex, "name" / string(flex), "partitions" / array(flex, partition))
    return struct(
        flex,
        "replica_id" / Int32,
        *since(v, 2, "isolation_level" / Int8),  # v2
        "topics" / array(flex, topic),
        *since(v, 10, "timeout_ms" / Int32),  # v10
    )


@dataclass(frozen=True, slots=True)
class ListOffsetsPartitionResponse:
    partition_index: int
    error_code: int
    old_style_offsets: tuple[int, ...] = ()  # v0 only
    timestamp: int = -1  # v1+
    offset: int = -1  # v1+
    leader_epoch: int = -1  # v4+
    tags: dict[int, bytes] | None = None  # v6+

    @property
    def first_offset(self) -> int:
        """The answer whatever the version: v1+'s ``offset``, or v0's first old-style offset (-1 if none)."""
        if self.old_style_offsets:
            return self.old_style_offsets[0]
        return self.offset


@dataclass(frozen=True, slots=True)
class ListOffsetsTopicResponse:
    name: str
    partitions: tuple[ListOffsetsPartitionResponse, ...]
    tags: dict[int, bytes] | None = None  # v6+


@dataclass(frozen=True, slots=True)
class ListOffsetsResponse:
    topics: tuple[ListOffsetsTopicResponse, ...]
    throttle_time_ms: int = 0  # v2+
    tags: dict[int, bytes] | None = None  # v6+


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    partition = struct(
        flex,
        "partition_index" / Int32,
        "error_code" / Int16,
        *until(v, 0, "old_style_offsets" / array(flex, Int64)),  # v0 only
        *since(v, 1, "timestamp" / Int64, "offset" / Int64),  # v1
        *since(v, 4, "leader_epoch" / Int32),  # v4
    )
    topic = struct(flex, "name" / string(flex), "partitions" / array(flex, partition))
    return struct(
        flex,
        *since(v, 2, "throttle_time_ms" / Int32),  # v2
        "topics" / array(flex, topic),
    )


SPEC = register_api(
    key=KEY,
    name="ListOffsets",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=ListOffsetsRequest,
    request_schema=_request,
    response_type=ListOffsetsResponse,
    response_schema=_response,
)
