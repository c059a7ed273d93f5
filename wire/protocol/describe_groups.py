"""DescribeGroups (API key 15), versions 0-6: the state, protocol and members of classic groups.

Rules: v1 adds the throttle time, v3 the authorized operations (a 32-bit mask; -2147483648 when not asked for), v4
each member's instance id, v5 is flexible, v6 an error message per group (GROUP_ID_NOT_FOUND for an unknown group,
KIP-1043). A member's metadata and assignment are the protocol's own bytes (kept raw here).
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int16, Int32
from ._versioned import array, blob, nullable_string, register_api, since, string, struct

KEY = 15
VERSIONS = range(7)
FIRST_FLEXIBLE = 5


@dataclass(frozen=True, slots=True)
class DescribeGroupsRequest:
    groups: tuple[str, ...]
    include_authorized_operations: bool = False  # v3+
    tags: dict[int, bytes] | None = None  # v5+


@dataclass(frozen=True, slots=True)
class DescribedGroupMember:
    member_id: str
    group_instance_id: str | None = None  # v4+
    client_id: str = ""
    client_host: str = ""
    member_metadata: bytes = b""
    member_assignment: bytes = b""
    tags: dict[int, bytes] | None = None  # v5+


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    error_code: int
    error_message: str | None = None  # v6+
    group_id: str = ""
    group_state: str = ""
    protocol_type: str = ""
    protocol_data: str = ""
    members: tuple[DescribedGroupMember, ...] = ()
    authorized_operations: int = -2147483648  # v3+
    tags: dict[int, bytes] | None = None  # v5+


@dataclass(frozen=True, slots=True)
class DescribeGroupsResponse:
    throttle_time_ms: int = 0  # v1+
    groups: tuple[DescribedGroup, ...] = ()
    tags: dict[int, bytes] | None = None  # v5+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    return struct(
        flex,
        "groups" / array(flex, string(flex)),
        *since(v, 3, "include_authorized_operations" / Boolean),  # v3
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    member = struct(
        flex,
        "member_id" / string(flex),
        *since(v, 4, "group_instance_id" / nullable_string(flex)),  # v4
        "client_id" / string(flex),
        "client_host" / string(flex),
        "member_metadata" / blob(flex),
        "member_assignment" / blob(flex),
    )
    group = struct(
        flex,
        "error_code" / Int16,
        *since(v, 6, "error_message" / nullable_string(flex)),  # v6
        "group_id" / string(flex),
        "group_state" / string(flex),
        "protocol_type" / string(flex),
        "protocol_data" / string(flex),
        "members" / array(flex, member),
        *since(v, 3, "authorized_operations" / Int32),  # v3
    )
    return struct(
        flex,
        *since(v, 1, "throttle_time_ms" / Int32),  # v1
        "groups" / array(flex, group),
    )


SPEC = register_api(
    key=KEY,
    name="DescribeGroups",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=DescribeGroupsRequest,
    request_schema=_request,
    response_type=DescribeGroupsResponse,
    response_schema=_response,
)
