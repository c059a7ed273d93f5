"""DescribeQuorum (API key 55), versions 0-2: the state of the KRaft metadata quorum: leader, epoch, high watermark,
voters and observers.

Rules: flexible from v0. v1 answers each replica's last fetch and caught-up times (KIP-836); v2 error messages, each
replica's directory id and the voters' listeners (KIP-853).
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32, Int64, UInt16, Uuid
from ._versioned import array, nullable_string, register_api, since, string, struct

KEY = 55
VERSIONS = range(3)
FIRST_FLEXIBLE = 0


@dataclass(frozen=True, slots=True)
class PartitionData:
    partition_index: int
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class QuorumTopicData:
    topic_name: str
    partitions: tuple[PartitionData, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class DescribeQuorumRequest:
    topics: tuple[QuorumTopicData, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class QuorumReplicaState:
    replica_id: int
    replica_directory_id: bytes = bytes(16)  # v2+
    log_end_offset: int = 0
    last_fetch_timestamp: int = -1  # v1+
    last_caught_up_timestamp: int = -1  # v1+
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class PartitionDataResponse:
    partition_index: int
    error_code: int
    error_message: str | None = None  # v2+
    leader_id: int = 0
    leader_epoch: int = 0
    high_watermark: int = 0
    current_voters: tuple[QuorumReplicaState, ...] = ()
    observers: tuple[QuorumReplicaState, ...] = ()
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class TopicDataResponse:
    topic_name: str
    partitions: tuple[PartitionDataResponse, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class Listener:
    name: str
    host: str
    port: int
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class QuorumNode:
    node_id: int
    listeners: tuple[Listener, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class DescribeQuorumResponse:
    error_code: int
    error_message: str | None = None  # v2+
    topics: tuple[TopicDataResponse, ...] = ()
    nodes: tuple[QuorumNode, ...] = ()  # v2+
    tags: dict[int, bytes] | None = None  # v0+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    partition_data = struct(flex, "partition_index" / Int32)
    topic_data = struct(flex, "topic_name" / string(flex), "partitions" / array(flex, partition_data))
    return struct(flex, "topics" / array(flex, topic_data))


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    replica_state = struct(
        flex,
        "replica_id" / Int32,
        *since(v, 2, "replica_directory_id" / Uuid),  # v2
        "log_end_offset" / Int64,
        *since(v, 1, "last_fetch_timestamp" / Int64),  # v1
        *since(v, 1, "last_caught_up_timestamp" / Int64),  # v1
    )
    partition_data = struct(
        flex,
        "partition_index" / Int32,
        "error_code" / Int16,
        *since(v, 2, "error_message" / nullable_string(flex)),  # v2
        "leader_id" / Int32,
        "leader_epoch" / Int32,
        "high_watermark" / Int64,
        "current_voters" / array(flex, replica_state),
        "observers" / array(flex, replica_state),
    )
    topic_data = struct(flex, "topic_name" / string(flex), "partitions" / array(flex, partition_data))
    listener = struct(flex, "name" / string(flex), "host" / string(flex), "port" / UInt16)
    node = struct(flex, "node_id" / Int32, "listeners" / array(flex, listener))
    return struct(
        flex,
        "error_code" / Int16,
        *since(v, 2, "error_message" / nullable_string(flex)),  # v2
        "topics" / array(flex, topic_data),
        *since(v, 2, "nodes" / array(flex, node)),  # v2
    )


SPEC = register_api(
    key=KEY,
    name="DescribeQuorum",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=DescribeQuorumRequest,
    request_schema=_request,
    response_type=DescribeQuorumResponse,
    response_schema=_response,
)
