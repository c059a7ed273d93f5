"""AlterPartitionReassignments (API key 45), versions 0-1: start or cancel (null replicas) partition reassignments
(KIP-455).

Rules: flexible from v0. v1 can forbid a change of the replication factor (``allow_replication_factor_change``,
echoed in the answer).
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int16, Int32
from ._versioned import array, nullable_array, nullable_string, register_api, since, string, struct

KEY = 45
VERSIONS = range(2)
FIRST_FLEXIBLE = 0


@dataclass(frozen=True, slots=True)
class ReassignablePartition:
    partition_index: int
    replicas: tuple[int, ...] | None = None
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class ReassignableTopic:
    name: str
    partitions: tuple[ReassignablePartition, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class AlterPartitionReassignmentsRequest:
    timeout_ms: int = 60000
    allow_replication_factor_change: bool = True  # v1+
    topics: tuple[ReassignableTopic, ...] = ()
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class ReassignablePartitionResponse:
    partition_index: int
    error_code: int
    error_message: str | None
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class ReassignableTopicResponse:
    name: str
    partitions: tuple[ReassignablePartitionResponse, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class AlterPartitionReassignmentsResponse:
    throttle_time_ms: int
    allow_replication_factor_change: bool = True  # v1+
    error_code: int = 0
    error_message: str | None = None
    responses: tuple[ReassignableTopicResponse, ...] = ()
    tags: dict[int, bytes] | None = None  # v0+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    partition = struct(flex, "partition_index" / Int32, "replicas" / nullable_array(flex, Int32))
    topic = struct(flex, "name" / string(flex), "partitions" / array(flex, partition))
    return struct(
        flex,
        "timeout_ms" / Int32,
        *since(v, 1, "allow_replication_factor_change" / Boolean),  # v1
        "topics" / array(flex, topic),
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    partition_result = struct(
        flex,
        "partition_index" / Int32,
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
    )
    topic_result = struct(
        flex,
        "name" / string(flex),
        "partitions" / array(flex, partition_result),
    )
    return struct(
        flex,
        "throttle_time_ms" / Int32,
        *since(v, 1, "allow_replication_factor_change" / Boolean),  # v1
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
        "responses" / array(flex, topic_result),
    )


SPEC = register_api(
    key=KEY,
    name="AlterPartitionReassignments",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=AlterPartitionReassignmentsRequest,
    request_schema=_request,
    response_type=AlterPartitionReassignmentsResponse,
    response_schema=_response,
)
