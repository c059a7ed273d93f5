"""DeleteRecords (API key 21), versions 0-2: move the log start offset of partitions forward (an offset of -1:
to the high watermark).

Rules: v1 equals v0 (answers may come before throttling), v2 is flexible. The answer gives each partition's new low
watermark.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32, Int64
from ._versioned import array, register_api, string, struct

KEY = 21
VERSIONS = range(3)
FIRST_FLEXIBLE = 2


@dataclass(frozen=True, slots=True)
class DeleteRecordsPartition:
    partition_index: int
    offset: int
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class DeleteRecordsTopic:
    name: str
    partitions: tuple[DeleteRecordsPartition, ...]
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class DeleteRecordsRequest:
    topics: tuple[DeleteRecordsTopic, ...]
    timeout_ms: int
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class DeleteRecordsPartitionResult:
    partition_index: int
    low_watermark: int
    error_code: int
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class DeleteRecordsTopicResult:
    name: str
    partitions: tuple[DeleteRecordsPartitionResult, ...]
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class DeleteRecordsResponse:
    throttle_time_ms: int
    topics: tuple[DeleteRecordsTopicResult, ...]
    tags: dict[int, bytes] | None = None  # v2+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    partition = struct(flex, "partition_index" / Int32, "offset" / Int64)
    topic = struct(flex, "name" / string(flex), "partitions" / array(flex, partition))
    return struct(flex, "topics" / array(flex, topic), "timeout_ms" / Int32)


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    partition_result = struct(flex, "partition_index" / Int32, "low_watermark" / Int64, "error_code" / Int16)
    topic_result = struct(flex, "name" / string(flex), "partitions" / array(flex, partition_result))
    return struct(flex, "throttle_time_ms" / Int32, "topics" / array(flex, topic_result))


SPEC = register_api(
    key=KEY,
    name="DeleteRecords",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=DeleteRecordsRequest,
    request_schema=_request,
    response_type=DeleteRecordsResponse,
    response_schema=_response,
)
