"""OffsetDelete (API key 47), version 0: delete a group's committed offsets for partitions it no longer consumes
(KIP-496).

Rules: not flexible; the answer has a top-level error code and one per partition.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32
from ._versioned import array, register_api, string, struct

KEY = 47
VERSIONS = range(1)
FIRST_FLEXIBLE = None


@dataclass(frozen=True, slots=True)
class OffsetDeleteRequestPartition:
    partition_index: int


@dataclass(frozen=True, slots=True)
class OffsetDeleteRequestTopic:
    name: str
    partitions: tuple[OffsetDeleteRequestPartition, ...]


@dataclass(frozen=True, slots=True)
class OffsetDeleteRequest:
    group_id: str
    topics: tuple[OffsetDeleteRequestTopic, ...]


@dataclass(frozen=True, slots=True)
class OffsetDeleteResponsePartition:
    partition_index: int
    error_code: int


@dataclass(frozen=True, slots=True)
class OffsetDeleteResponseTopic:
    name: str
    partitions: tuple[OffsetDeleteResponsePartition, ...]


@dataclass(frozen=True, slots=True)
class OffsetDeleteResponse:
    error_code: int
    throttle_time_ms: int
    topics: tuple[OffsetDeleteResponseTopic, ...]


def _request(v: int) -> c.Construct:
    partition = struct(False, "partition_index" / Int32)
    topic = struct(False, "name" / string(False), "partitions" / array(False, partition))
    return struct(False, "group_id" / string(False), "topics" / array(False, topic))


def _response(v: int) -> c.Construct:
    partition = struct(False, "partition_index" / Int32, "error_code" / Int16)
    topic = struct(False, "name" / string(False), "partitions" / array(False, partition))
    return struct(False, "error_code" / Int16, "throttle_time_ms" / Int32, "topics" / array(False, topic))


SPEC = register_api(
    key=KEY,
    name="OffsetDelete",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=OffsetDeleteRequest,
    request_schema=_request,
    response_type=OffsetDeleteResponse,
    response_schema=_response,
)
