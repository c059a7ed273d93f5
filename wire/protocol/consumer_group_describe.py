"""ConsumerGroupDescribe (API key 69), versions 0-1: the state, epochs, assignor and members of KIP-848 consumer
groups, each member with its subscription, current and target assignment.

Rules: flexible from v0. v1 answers each member's type (KIP-1099: -1 unknown, 0 classic, 1 consumer); its request
equals v0's. Authorized operations are a 32-bit mask (-2147483648 when not asked for).
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int8, Int16, Int32, Uuid
from ._versioned import array, nullable_string, register_api, since, string, struct

KEY = 69
VERSIONS = range(2)
FIRST_FLEXIBLE = 0


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescribeRequest:
    group_ids: tuple[str, ...]
    include_authorized_operations: bool
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescribeTopicPartitions:
    topic_id: bytes
    topic_name: str
    partitions: tuple[int, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescribeAssignment:
    topic_partitions: tuple[ConsumerGroupDescribeTopicPartitions, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class Member:
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: ConsumerGroupDescribeAssignment
    target_assignment: ConsumerGroupDescribeAssignment
    instance_id: str | None = None
    rack_id: str | None = None
    subscribed_topic_regex: str | None = None
    member_type: int = -1  # v1+
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescription:
    error_code: int
    error_message: str | None = None
    group_id: str = ""
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[Member, ...] = ()
    authorized_operations: int = -2147483648
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescribeResponse:
    throttle_time_ms: int
    groups: tuple[ConsumerGroupDescription, ...]
    tags: dict[int, bytes] | None = None  # v0+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    return struct(
        flex,
        "group_ids" / array(flex, string(flex)),
        "include_authorized_operations" / Boolean,
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    topic_partitions = struct(flex, "topic_id" / Uuid, "topic_name" / string(flex), "partitions" / array(flex, Int32))
    assignment = struct(flex, "topic_partitions" / array(flex, topic_partitions))
    member = struct(
        flex,
        "member_id" / string(flex),
        "instance_id" / nullable_string(flex),
        "rack_id" / nullable_string(flex),
        "member_epoch" / Int32,
        "client_id" / string(flex),
        "client_host" / string(flex),
        "subscribed_topic_names" / array(flex, string(flex)),
        "subscribed_topic_regex" / nullable_string(flex),
        "assignment" / assignment,
        "target_assignment" / assignment,
        *since(v, 1, "member_type" / Int8),  # v1
    )
    described_group = struct(
        flex,
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
        "group_id" / string(flex),
        "group_state" / string(flex),
        "group_epoch" / Int32,
        "assignment_epoch" / Int32,
        "assignor_name" / string(flex),
        "members" / array(flex, member),
        "authorized_operations" / Int32,
    )
    return struct(flex, "throttle_time_ms" / Int32, "groups" / array(flex, described_group))


SPEC = register_api(
    key=KEY,
    name="ConsumerGroupDescribe",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=ConsumerGroupDescribeRequest,
    request_schema=_request,
    response_type=ConsumerGroupDescribeResponse,
    response_schema=_response,
)
