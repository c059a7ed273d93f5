"""DescribeProducers (API key 61), version 0: the active producers (id, epoch, last sequence and timestamp, coordinator
epoch, open transaction's first offset) of partitions (KIP-664).

Rules: flexible from v0; sent to each partition's leader.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32, Int64
from ._versioned import array, nullable_string, register_api, string, struct

KEY = 61
VERSIONS = range(1)
FIRST_FLEXIBLE = 0


@dataclass(frozen=True, slots=True)
class TopicRequest:
    name: str
    partition_indexes: tuple[int, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class DescribeProducersRequest:
    topics: tuple[TopicRequest, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class ActiveProducerState:
    producer_id: int
    producer_epoch: int
    last_sequence: int = -1
    last_timestamp: int = -1
    coordinator_epoch: int = 0
    current_txn_start_offset: int = -1
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class PartitionResponse:
    partition_index: int
    error_code: int
    error_message: str | None = None
    active_producers: tuple[ActiveProducerState, ...] = ()
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class TopicResponse:
    name: str
    partitions: tuple[PartitionResponse, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class DescribeProducersResponse:
    throttle_time_ms: int
    topics: tuple[TopicResponse, ...]
    tags: dict[int, bytes] | None = None  # v0+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    topic_request = struct(flex, "name" / string(flex), "partition_indexes" / array(flex, Int32))
    return struct(flex, "topics" / array(flex, topic_request))


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    producer_state = struct(
        flex,
        "producer_id" / Int64,
        "producer_epoch" / Int32,
        "last_sequence" / Int32,
        "last_timestamp" / Int64,
        "coordinator_epoch" / Int32,
        "current_txn_start_offset" / Int64,
    )
    partition_response = struct(
        flex,
        "partition_index" / Int32,
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
        "active_producers" / array(flex, producer_state),
    )
    topic_response = struct(flex, "name" / string(flex), "partitions" / array(flex, partition_response))
    return struct(flex, "throttle_time_ms" / Int32, "topics" / array(flex, topic_response))


SPEC = register_api(
    key=KEY,
    name="DescribeProducers",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=DescribeProducersRequest,
    request_schema=_request,
    response_type=DescribeProducersResponse,
    response_schema=_response,
)
