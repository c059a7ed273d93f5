"""SyncGroup (API key 14), versions 0-5: after JoinGroup, the leader of a classic group sends every member's assignment
and each member gets its own.

Rules: ``assignment`` is the protocol's own bytes (for consumers: the assigned partitions, kept raw here). v1 adds
the throttle time, v3 the static member's instance id, v4 is flexible, v5 sends and answers the protocol type and name
(KIP-559).
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32
from ._versioned import array, blob, nullable_string, register_api, since, string, struct

KEY = 14
VERSIONS = range(6)
FIRST_FLEXIBLE = 4


@dataclass(frozen=True, slots=True)
class SyncGroupRequestAssignment:
    member_id: str
    assignment: bytes
    tags: dict[int, bytes] | None = None  # v4+


@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None  # v3+
    protocol_type: str | None = None  # v5+
    protocol_name: str | None = None  # v5+
    assignments: tuple[SyncGroupRequestAssignment, ...] = ()
    tags: dict[int, bytes] | None = None  # v4+


@dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    throttle_time_ms: int = 0  # v1+
    error_code: int = 0
    protocol_type: str | None = None  # v5+
    protocol_name: str | None = None  # v5+
    assignment: bytes = b""
    tags: dict[int, bytes] | None = None  # v4+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    assignment = struct(flex, "member_id" / string(flex), "assignment" / blob(flex))
    return struct(
        flex,
        "group_id" / string(flex),
        "generation_id" / Int32,
        "member_id" / string(flex),
        *since(v, 3, "group_instance_id" / nullable_string(flex)),  # v3
        *since(v, 5, "protocol_type" / nullable_string(flex)),  # v5
        *since(v, 5, "protocol_name" / nullable_string(flex)),  # v5
        "assignments" / array(flex, assignment),
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    return struct(
        flex,
        *since(v, 1, "throttle_time_ms" / Int32),  # v1
        "error_code" / Int16,
        *since(v, 5, "protocol_type" / nullable_string(flex)),  # v5
        *since(v, 5, "protocol_name" / nullable_string(flex)),  # v5
        "assignment" / blob(flex),
    )


SPEC = register_api(
    key=KEY,
    name="SyncGroup",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=SyncGroupRequest,
    request_schema=_request,
    response_type=SyncGroupResponse,
    response_schema=_response,
)
