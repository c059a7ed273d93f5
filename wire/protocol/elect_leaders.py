"""ElectLeaders (API key 43), versions 0-2: elect partition leaders (the preferred replica, or an unclean election).

Rules: null ``topic_partitions`` means every partition. v1 adds the election type (0 preferred, 1 unclean; KIP-460)
and a top-level error code, v2 is flexible.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int8, Int16, Int32
from ._versioned import array, nullable_array, nullable_string, register_api, since, string, struct

KEY = 43
VERSIONS = range(3)
FIRST_FLEXIBLE = 2


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    topic: str
    partitions: tuple[int, ...]
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class ElectLeadersRequest:
    election_type: int = 0  # v1+
    topic_partitions: tuple[TopicPartitions, ...] | None = None
    timeout_ms: int = 60000
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class PartitionResult:
    partition_id: int
    error_code: int
    error_message: str | None
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class ReplicaElectionResult:
    topic: str
    partition_result: tuple[PartitionResult, ...]
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class ElectLeadersResponse:
    throttle_time_ms: int
    error_code: int = 0  # v1+
    replica_election_results: tuple[ReplicaElectionResult, ...] = ()
    tags: dict[int, bytes] | None = None  # v2+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    topic_partitions = struct(flex, "topic" / string(flex), "partitions" / array(flex, Int32))
    return struct(
        flex,
        *since(v, 1, "election_type" / Int8),  # v1
        "topic_partitions" / nullable_array(flex, topic_partitions),
        "timeout_ms" / Int32,
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    partition_result = struct(
        flex,
        "partition_id" / Int32,
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
    )
    election_result = struct(flex, "topic" / string(flex), "partition_result" / array(flex, partition_result))
    return struct(
        flex,
        "throttle_time_ms" / Int32,
        *since(v, 1, "error_code" / Int16),  # v1
        "replica_election_results" / array(flex, election_result),
    )


SPEC = register_api(
    key=KEY,
    name="ElectLeaders",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=ElectLeadersRequest,
    request_schema=_request,
    response_type=ElectLeadersResponse,
    response_schema=_response,
)
