"""OffsetForLeaderEpoch (API key 23), versions 0-4: the end offset of a leader epoch, which consumers and followers use
to detect log truncation after a leader change (KIP-101, KIP-320).

Rules: v1 answers the leader epoch, v2 sends the current leader epoch (fencing) and answers the throttle time, v3
sends the replica id (-2 for a consumer, -1 for a debugging tool), v4 is flexible. Kafka 4.0 removed v0-v1 from its
brokers.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32, Int64
from ._versioned import array, register_api, since, string, struct

KEY = 23
VERSIONS = range(5)
FIRST_FLEXIBLE = 4


@dataclass(frozen=True, slots=True)
class OffsetForLeaderPartition:
    partition: int
    current_leader_epoch: int = -1  # v2+
    leader_epoch: int = 0
    tags: dict[int, bytes] | None = None  # v4+


@dataclass(frozen=True, slots=True)
class OffsetForLeaderTopic:
    topic: str
    partitions: tuple[OffsetForLeaderPartition, ...]
    tags: dict[int, bytes] | None = None  # v4+


@dataclass(frozen=True, slots=True)
class OffsetForLeaderEpochRequest:
    replica_id: int = -2  # v3+
    topics: tuple[OffsetForLeaderTopic, ...] = ()
    tags: dict[int, bytes] | None = None  # v4+


@dataclass(frozen=True, slots=True)
class LeaderEpochEndOffset:
    error_code: int
    partition: int
    leader_epoch: int = -1  # v1+
    end_offset: int = -1
    tags: dict[int, bytes] | None = None  # v4+


@dataclass(frozen=True, slots=True)
class OffsetForLeaderTopicResult:
    topic: str
    partitions: tuple[LeaderEpochEndOffset, ...]
    tags: dict[int, bytes] | None = None  # v4+


@dataclass(frozen=True, slots=True)
class OffsetForLeaderEpochResponse:
    throttle_time_ms: int = 0  # v2+
    topics: tuple[OffsetForLeaderTopicResult, ...] = ()
    tags: dict[int, bytes] | None = None  # v4+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    partition = struct(
        flex,
        "partition" / Int32,
        *since(v, 2, "current_leader_epoch" / Int32),  # v2
        "leader_epoch" / Int32,
    )
    topic = struct(flex, "topic" / string(flex), "partitions" / array(flex, partition))
    return struct(
        flex,
        *since(v, 3, "replica_id" / Int32),  # v3
        "topics" / array(flex, topic),
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    epoch_end_offset = struct(
        flex,
        "error_code" / Int16,
        "partition" / Int32,
        *since(v, 1, "leader_epoch" / Int32),  # v1
        "end_offset" / Int64,
    )
    topic_result = struct(flex, "topic" / string(flex), "partitions" / array(flex, epoch_end_offset))
    return struct(
        flex,
        *since(v, 2, "throttle_time_ms" / Int32),  # v2
        "topics" / array(flex, topic_result),
    )


SPEC = register_api(
    key=KEY,
    name="OffsetForLeaderEpoch",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=OffsetForLeaderEpochRequest,
    request_schema=_request,
    response_type=OffsetForLeaderEpochResponse,
    response_schema=_response,
)
