"""LeaveGroup (API key 13), versions 0-5: members leave a classic group.

Rules: v0-v2 name one member (``member_id``). v3+ name several (``members``, each with its instance id) and answer
per member. v1 adds the throttle time, v4 is flexible, v5 sends each member's reason (KIP-800).
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32
from ._versioned import array, nullable_string, register_api, since, string, struct, until

KEY = 13
VERSIONS = range(6)
FIRST_FLEXIBLE = 4


@dataclass(frozen=True, slots=True)
class MemberIdentity:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None  # v5+
    tags: dict[int, bytes] | None = None  # v4+


@dataclass(frozen=True, slots=True)
class LeaveGroupRequest:
    group_id: str
    member_id: str = ""  # v0-v2
    members: tuple[MemberIdentity, ...] = ()  # v3+
    tags: dict[int, bytes] | None = None  # v4+


@dataclass(frozen=True, slots=True)
class MemberResponse:
    member_id: str
    group_instance_id: str | None
    error_code: int
    tags: dict[int, bytes] | None = None  # v4+


@dataclass(frozen=True, slots=True)
class LeaveGroupResponse:
    throttle_time_ms: int = 0  # v1+
    error_code: int = 0
    members: tuple[MemberResponse, ...] = ()  # v3+
    tags: dict[int, bytes] | None = None  # v4+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    member_identity = struct(
        flex,
        "member_id" / string(flex),
        "group_instance_id" / nullable_string(flex),
        *since(v, 5, "reason" / nullable_string(flex)),  # v5
    )
    return struct(
        flex,
        "group_id" / string(flex),
        *until(v, 2, "member_id" / string(flex)),  # v0-v2
        *since(v, 3, "members" / array(flex, member_identity)),  # v3
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    member_response = struct(
        flex,
        "member_id" / string(flex),
        "group_instance_id" / nullable_string(flex),
        "error_code" / Int16,
    )
    return struct(
        flex,
        *since(v, 1, "throttle_time_ms" / Int32),  # v1
        "error_code" / Int16,
        *since(v, 3, "members" / array(flex, member_response)),  # v3
    )


SPEC = register_api(
    key=KEY,
    name="LeaveGroup",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=LeaveGroupRequest,
    request_schema=_request,
    response_type=LeaveGroupResponse,
    response_schema=_response,
)
