"""DescribeLogDirs (API key 35), versions 0-5: a broker's log directories and the size of each partition in them.

Rules: null ``topics`` asks for every partition. v1 equals v0 (answers may come before throttling), v2 is flexible,
v3 adds a top-level error code, v4 each directory's total and usable bytes, v5 whether it is cordoned. Kafka 4.0
removed v0 from its brokers.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int16, Int32, Int64
from ._versioned import array, nullable_array, register_api, since, string, struct

KEY = 35
VERSIONS = range(6)
FIRST_FLEXIBLE = 2


@dataclass(frozen=True, slots=True)
class DescribableLogDirTopic:
    topic: str
    partitions: tuple[int, ...]
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class DescribeLogDirsRequest:
    topics: tuple[DescribableLogDirTopic, ...] | None
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class DescribeLogDirsPartition:
    partition_index: int
    partition_size: int
    offset_lag: int
    is_future_key: bool
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class DescribeLogDirsTopic:
    name: str
    partitions: tuple[DescribeLogDirsPartition, ...]
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class DescribeLogDirsResult:
    error_code: int
    log_dir: str
    topics: tuple[DescribeLogDirsTopic, ...]
    total_bytes: int = -1  # v4+
    usable_bytes: int = -1  # v4+
    is_cordoned: bool = False  # v5+
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class DescribeLogDirsResponse:
    throttle_time_ms: int
    error_code: int = 0  # v3+
    results: tuple[DescribeLogDirsResult, ...] = ()
    tags: dict[int, bytes] | None = None  # v2+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    topic = struct(flex, "topic" / string(flex), "partitions" / array(flex, Int32))
    return struct(flex, "topics" / nullable_array(flex, topic))


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    partition = struct(
        flex,
        "partition_index" / Int32,
        "partition_size" / Int64,
        "offset_lag" / Int64,
        "is_future_key" / Boolean,
    )
    topic = struct(flex, "name" / string(flex), "partitions" / array(flex, partition))
    result = struct(
        flex,
        "error_code" / Int16,
        "log_dir" / string(flex),
        "topics" / array(flex, topic),
        *since(v, 4, "total_bytes" / Int64),  # v4
        *since(v, 4, "usable_bytes" / Int64),  # v4
        *since(v, 5, "is_cordoned" / Boolean),  # v5
    )
    return struct(
        flex,
        "throttle_time_ms" / Int32,
        *since(v, 3, "error_code" / Int16),  # v3
        "results" / array(flex, result),
    )


SPEC = register_api(
    key=KEY,
    name="DescribeLogDirs",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=DescribeLogDirsRequest,
    request_schema=_request,
    response_type=DescribeLogDirsResponse,
    response_schema=_response,
)
