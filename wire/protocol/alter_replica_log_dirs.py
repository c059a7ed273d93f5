"""AlterReplicaLogDirs (API key 34), versions 0-2: move partition replicas between a broker's log directories.

Rules: v1 equals v0 (answers may come before throttling), v2 is flexible. Kafka 4.0 removed v0 from its brokers.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32
from ._versioned import array, register_api, string, struct

KEY = 34
VERSIONS = range(3)
FIRST_FLEXIBLE = 2


@dataclass(frozen=True, slots=True)
class AlterReplicaLogDirTopic:
    name: str
    partitions: tuple[int, ...]
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class AlterReplicaLogDir:
    path: str
    topics: tuple[AlterReplicaLogDirTopic, ...]
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class AlterReplicaLogDirsRequest:
    dirs: tuple[AlterReplicaLogDir, ...]
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class AlterReplicaLogDirPartitionResult:
    partition_index: int
    error_code: int
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class AlterReplicaLogDirTopicResult:
    topic_name: str
    partitions: tuple[AlterReplicaLogDirPartitionResult, ...]
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class AlterReplicaLogDirsResponse:
    throttle_time_ms: int
    results: tuple[AlterReplicaLogDirTopicResult, ...]
    tags: dict[int, bytes] | None = None  # v2+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    topic = struct(flex, "name" / string(flex), "partitions" / array(flex, Int32))
    log_dir = struct(flex, "path" / string(flex), "topics" / array(flex, topic))
    return struct(flex, "dirs" / array(flex, log_dir))


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    partition_result = struct(flex, "partition_index" / Int32, "error_code" / Int16)
    topic_result = struct(
        flex,
        "topic_name" / string(flex),
        "partitions" / array(flex, partition_result),
    )
    return struct(
        flex,
        "throttle_time_ms" / Int32,
        "results" / array(flex, topic_result),
    )


SPEC = register_api(
    key=KEY,
    name="AlterReplicaLogDirs",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=AlterReplicaLogDirsRequest,
    request_schema=_request,
    response_type=AlterReplicaLogDirsResponse,
    response_schema=_response,
)
