"""CreatePartitions (API key 37), versions 0-3: raise the partition count of topics.

Rules: a topic's ``count`` is its new total; ``assignments`` (null: the broker chooses) gives the replicas of each
new partition. v1 equals v0, v2 is flexible, v3 may answer THROTTLING_QUOTA_EXCEEDED (KIP-599).
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int16, Int32
from ._versioned import array, nullable_array, nullable_string, register_api, string, struct

KEY = 37
VERSIONS = range(4)
FIRST_FLEXIBLE = 2


@dataclass(frozen=True, slots=True)
class CreatePartitionsAssignment:
    broker_ids: tuple[int, ...]
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class CreatePartitionsTopic:
    name: str
    count: int
    assignments: tuple[CreatePartitionsAssignment, ...] | None
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class CreatePartitionsRequest:
    topics: tuple[CreatePartitionsTopic, ...]
    timeout_ms: int
    validate_only: bool
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class CreatePartitionsTopicResult:
    name: str
    error_code: int
    error_message: str | None = None
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class CreatePartitionsResponse:
    throttle_time_ms: int
    results: tuple[CreatePartitionsTopicResult, ...]
    tags: dict[int, bytes] | None = None  # v2+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    assignment = struct(flex, "broker_ids" / array(flex, Int32))
    topic = struct(
        flex,
        "name" / string(flex),
        "count" / Int32,
        "assignments" / nullable_array(flex, assignment),
    )
    return struct(flex, "topics" / array(flex, topic), "timeout_ms" / Int32, "validate_only" / Boolean)


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    topic_result = struct(
        flex,
        "name" / string(flex),
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
    )
    return struct(flex, "throttle_time_ms" / Int32, "results" / array(flex, topic_result))


SPEC = register_api(
    key=KEY,
    name="CreatePartitions",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=CreatePartitionsRequest,
    request_schema=_request,
    response_type=CreatePartitionsResponse,
    response_schema=_response,
)
