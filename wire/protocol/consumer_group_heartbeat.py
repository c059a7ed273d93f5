"""ConsumerGroupHeartbeat (API key 68), versions 0-1: the KIP-848 consumer group protocol: a member joins (epoch 0),
stays (its current epoch) or leaves (-1; -2 for a static member that will come back) with one heartbeat, and gets its
assignment in the answer.

Rules:
- Flexible from v0. Null means "unchanged since the last heartbeat" for the request's optional fields (instance id,
  rack, rebalance timeout -1, subscribed topics, regex, server assignor, owned partitions).
- v1 adds the subscribed topic regex and requires the member to choose its own member id (KIP-1082).
- The answer's ``assignment`` is null when it did not change; its partitions are named by topic id.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32, Uuid
from ._versioned import array, nullable_array, nullable_string, nullable_struct, register_api, since, string, struct

KEY = 68
VERSIONS = range(2)
FIRST_FLEXIBLE = 0


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatTopicPartitions:
    topic_id: bytes
    partitions: tuple[int, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None  # v1+
    server_assignor: str | None = None
    topic_partitions: tuple[ConsumerGroupHeartbeatTopicPartitions, ...] | None = None
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatAssignment:
    topic_partitions: tuple[ConsumerGroupHeartbeatTopicPartitions, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatResponse:
    throttle_time_ms: int
    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: ConsumerGroupHeartbeatAssignment | None = None
    tags: dict[int, bytes] | None = None  # v0+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    topic_partitions = struct(flex, "topic_id" / Uuid, "partitions" / array(flex, Int32))
    return struct(
        flex,
        "group_id" / string(flex),
        "member_id" / string(flex),
        "member_epoch" / Int32,
        "instance_id" / nullable_string(flex),
        "rack_id" / nullable_string(flex),
        "rebalance_timeout_ms" / Int32,
        "subscribed_topic_names" / nullable_array(flex, string(flex)),
        *since(v, 1, "subscribed_topic_regex" / nullable_string(flex)),  # v1
        "server_assignor" / nullable_string(flex),
        "topic_partitions" / nullable_array(flex, topic_partitions),
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    topic_partitions = struct(flex, "topic_id" / Uuid, "partitions" / array(flex, Int32))
    assignment = struct(flex, "topic_partitions" / array(flex, topic_partitions))
    return struct(
        flex,
        "throttle_time_ms" / Int32,
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
        "member_id" / nullable_string(flex),
        "member_epoch" / Int32,
        "heartbeat_interval_ms" / Int32,
        "assignment" / nullable_struct(assignment),
    )


SPEC = register_api(
    key=KEY,
    name="ConsumerGroupHeartbeat",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=ConsumerGroupHeartbeatRequest,
    request_schema=_request,
    response_type=ConsumerGroupHeartbeatResponse,
    response_schema=_response,
)
