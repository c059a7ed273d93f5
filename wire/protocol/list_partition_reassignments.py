"""ListPartitionReassignments (API key 46), version 0: the reassignments in progress (null ``topics``: all of them),
with each partition's replicas, adding and removing replicas (KIP-455).

Rules: flexible from v0.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32
from ._versioned import array, nullable_array, nullable_string, register_api, string, struct

KEY = 46
VERSIONS = range(1)
FIRST_FLEXIBLE = 0


@dataclass(frozen=True, slots=True)
class ListPartitionReassignmentsTopics:
    name: str
    partition_indexes: tuple[int, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class ListPartitionReassignmentsRequest:
    timeout_ms: int = 60000
    topics: tuple[ListPartitionReassignmentsTopics, ...] | None = None
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class OngoingPartitionReassignment:
    partition_index: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class OngoingTopicReassignment:
    name: str
    partitions: tuple[OngoingPartitionReassignment, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class ListPartitionReassignmentsResponse:
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    topics: tuple[OngoingTopicReassignment, ...]
    tags: dict[int, bytes] | None = None  # v0+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    topics = struct(flex, "name" / string(flex), "partition_indexes" / array(flex, Int32))
    return struct(flex, "timeout_ms" / Int32, "topics" / nullable_array(flex, topics))


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    partition = struct(
        flex,
        "partition_index" / Int32,
        "replicas" / array(flex, Int32),
        "adding_replicas" / array(flex, Int32),
        "removing_replicas" / array(flex, Int32),
    )
    topic = struct(flex, "name" / string(flex), "partitions" / array(flex, partition))
    return struct(
        flex,
        "throttle_time_ms" / Int32,
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
        "topics" / array(flex, topic),
    )


SPEC = register_api(
    key=KEY,
    name="ListPartitionReassignments",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=ListPartitionReassignmentsRequest,
    request_schema=_request,
    response_type=ListPartitionReassignmentsResponse,
    response_schema=_response,
)
