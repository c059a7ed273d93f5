"""CreateTopics (API key 19), versions 0-7: create topics with explicit partition counts (auto-creation, tooling).

Rules: v1 adds ``validate_only`` and per-topic error messages, v2 the throttle time, v5 is flexible and returns the
created topic's partition count, replication factor and configs, v7 its topic id. -1 partitions / replication factor
(v4+) means the broker's default. A topic's result has one tagged field (v5+, tag 0): the error that kept the broker
from describing the new topic's configs.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int8, Int16, Int32, Uuid
from ._versioned import array, nullable_array, nullable_string, register_api, since, string, struct, tagged

KEY = 19
VERSIONS = range(8)
FIRST_FLEXIBLE = 5


@dataclass(frozen=True, slots=True)
class CreatableReplicaAssignment:
    partition_index: int
    broker_ids: tuple[int, ...]
    tags: dict[int, bytes] | None = None  # v5+


@dataclass(frozen=True, slots=True)
class CreatableTopicConfig:
    name: str
    value: str | None
    tags: dict[int, bytes] | None = None  # v5+


@dataclass(frozen=True, slots=True)
class CreatableTopic:
    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: tuple[CreatableReplicaAssignment, ...] = ()
    configs: tuple[CreatableTopicConfig, ...] = ()
    tags: dict[int, bytes] | None = None  # v5+


@dataclass(frozen=True, slots=True)
class CreateTopicsRequest:
    topics: tuple[CreatableTopic, ...]
    timeout_ms: int = 30_000
    validate_only: bool = False  # v1+
    tags: dict[int, bytes] | None = None  # v5+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    assignment = struct(flex, "partition_index" / Int32, "broker_ids" / array(flex, Int32))
    config = struct(flex, "name" / string(flex), "value" / nullable_string(flex))
    topic = struct(
        flex,
        "name" / string(flex),
        "num_partitions" / Int32,
        "replication_factor" / Int16,
        "assignments" / array(flex, assignment),
        "configs" / array(flex, config),
    )
    return struct(
        flex,
        "topics" / array(flex, topic),
        "timeout_ms" / Int32,
        *since(v, 1, "validate_only" / Boolean),  # v1
    )


@dataclass(frozen=True, slots=True)
class CreatableTopicConfigResult:
    name: str
    value: str | None
    read_only: bool
    config_source: int
    is_sensitive: bool
    tags: dict[int, bytes] | None = None


@dataclass(frozen=True, slots=True)
class CreatableTopicResult:
    name: str
    error_code: int
    topic_id: bytes = bytes(16)  # v7+
    error_message: str | None = None  # v1+
    num_partitions: int = -1  # v5+
    replication_factor: int = -1  # v5+
    configs: tuple[CreatableTopicConfigResult, ...] | None = None  # v5+
    topic_config_error_code: int | None = None  # v5+ tagged field 0
    tags: dict[int, bytes] | None = None  # v5+


@dataclass(frozen=True, slots=True)
class CreateTopicsResponse:
    topics: tuple[CreatableTopicResult, ...]
    throttle_time_ms: int = 0  # v2+
    tags: dict[int, bytes] | None = None  # v5+


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    config = struct(
        flex,
        "name" / string(flex),
        "value" / nullable_string(flex),
        "read_only" / Boolean,
        "config_source" / Int8,
        "is_sensitive" / Boolean,
    )
    topic = struct(
        flex,
        "name" / string(flex),
        *since(v, 7, "topic_id" / Uuid),  # v7
        "error_code" / Int16,
        *since(v, 1, "error_message" / nullable_string(flex)),  # v1
        *since(v, 5, "num_partitions" / Int32, "replication_factor" / Int16),  # v5
        *since(v, 5, "configs" / nullable_array(flex, config)),  # v5
        tagged=tagged(v, (5, 0, "topic_config_error_code", Int16)),  # v5: tag 0
    )
    return struct(
        flex,
        *since(v, 2, "throttle_time_ms" / Int32),  # v2
        "topics" / array(flex, topic),
    )


SPEC = register_api(
    key=KEY,
    name="CreateTopics",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=CreateTopicsRequest,
    request_schema=_request,
    response_type=CreateTopicsResponse,
    response_schema=_response,
)
