"""DescribeTopicPartitions (API key 75), version 0: topics and their partitions, with the eligible leader replicas and
last known ELR (KIP-966), page by page: what admin clients (and librdkafka's describe_topics) ask instead of Metadata.

Rules: flexible from v0. ``response_partition_limit`` bounds one answer; the answer's ``next_cursor`` (null: the last
page) is the request's ``cursor`` for the next one. Both are nullable structs.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int16, Int32, Uuid
from ._versioned import array, nullable_array, nullable_string, nullable_struct, register_api, string, struct

KEY = 75
VERSIONS = range(1)
FIRST_FLEXIBLE = 0


@dataclass(frozen=True, slots=True)
class DescribeTopicPartitionsTopic:
    name: str
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class DescribeTopicPartitionsCursor:
    topic_name: str
    partition_index: int
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class DescribeTopicPartitionsRequest:
    topics: tuple[DescribeTopicPartitionsTopic, ...]
    response_partition_limit: int = 2000
    cursor: DescribeTopicPartitionsCursor | None = None
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class DescribeTopicPartitionsResponsePartition:
    error_code: int
    partition_index: int
    leader_id: int
    leader_epoch: int = -1
    replica_nodes: tuple[int, ...] = ()
    isr_nodes: tuple[int, ...] = ()
    eligible_leader_replicas: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None
    offline_replicas: tuple[int, ...] = ()
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class DescribeTopicPartitionsResponseTopic:
    error_code: int
    name: str | None
    topic_id: bytes
    is_internal: bool = False
    partitions: tuple[DescribeTopicPartitionsResponsePartition, ...] = ()
    topic_authorized_operations: int = -2147483648
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class DescribeTopicPartitionsResponse:
    throttle_time_ms: int
    topics: tuple[DescribeTopicPartitionsResponseTopic, ...]
    next_cursor: DescribeTopicPartitionsCursor | None = None
    tags: dict[int, bytes] | None = None  # v0+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    topic_request = struct(flex, "name" / string(flex))
    cursor = struct(flex, "topic_name" / string(flex), "partition_index" / Int32)
    return struct(
        flex,
        "topics" / array(flex, topic_request),
        "response_partition_limit" / Int32,
        "cursor" / nullable_struct(cursor),
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    partition = struct(
        flex,
        "error_code" / Int16,
        "partition_index" / Int32,
        "leader_id" / Int32,
        "leader_epoch" / Int32,
        "replica_nodes" / array(flex, Int32),
        "isr_nodes" / array(flex, Int32),
        "eligible_leader_replicas" / nullable_array(flex, Int32),
        "last_known_elr" / nullable_array(flex, Int32),
        "offline_replicas" / array(flex, Int32),
    )
    topic = struct(
        flex,
        "error_code" / Int16,
        "name" / nullable_string(flex),
        "topic_id" / Uuid,
        "is_internal" / Boolean,
        "partitions" / array(flex, partition),
        "topic_authorized_operations" / Int32,
    )
    cursor = struct(flex, "topic_name" / string(flex), "partition_index" / Int32)
    return struct(
        flex,
        "throttle_time_ms" / Int32,
        "topics" / array(flex, topic),
        "next_cursor" / nullable_struct(cursor),
    )


SPEC = register_api(
    key=KEY,
    name="DescribeTopicPartitions",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=DescribeTopicPartitionsRequest,
    request_schema=_request,
    response_type=DescribeTopicPartitionsResponse,
    response_schema=_response,
)
