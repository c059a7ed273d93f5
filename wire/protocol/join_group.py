"""JoinGroup (API key 11), versions 0-9: a member of a classic consumer group (or Connect, or a stream) asks to join
it, offering its protocols (assignors) with their metadata; the coordinator answers with the generation, the chosen
protocol and, to the leader, every member's metadata.

Rules:
- v1 adds the rebalance timeout; from v4 a new member is answered MEMBER_ID_REQUIRED with an id to join again with;
  v5 adds the static member's instance id, v6 is flexible, v7 answers the protocol type (and makes the protocol name
  nullable), v8 sends a reason (KIP-800), v9 answers ``skip_assignment``.
- ``metadata`` is the protocol's own bytes (for consumers: the subscription, kept raw here).
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int16, Int32
from ._versioned import array, blob, nullable_string, register_api, since, string, struct

KEY = 11
VERSIONS = range(10)
FIRST_FLEXIBLE = 6


@dataclass(frozen=True, slots=True)
class JoinGroupRequestProtocol:
    name: str
    metadata: bytes
    tags: dict[int, bytes] | None = None  # v6+


@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int = -1  # v1+
    member_id: str = ""
    group_instance_id: str | None = None  # v5+
    protocol_type: str = ""
    protocols: tuple[JoinGroupRequestProtocol, ...] = ()
    reason: str | None = None  # v8+
    tags: dict[int, bytes] | None = None  # v6+


@dataclass(frozen=True, slots=True)
class JoinGroupResponseMember:
    member_id: str
    group_instance_id: str | None = None  # v5+
    metadata: bytes = b""
    tags: dict[int, bytes] | None = None  # v6+


@dataclass(frozen=True, slots=True)
class JoinGroupResponse:
    throttle_time_ms: int = 0  # v2+
    error_code: int = 0
    generation_id: int = -1
    protocol_type: str | None = None  # v7+
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False  # v9+
    member_id: str = ""
    members: tuple[JoinGroupResponseMember, ...] = ()
    tags: dict[int, bytes] | None = None  # v6+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    protocol = struct(flex, "name" / string(flex), "metadata" / blob(flex))
    return struct(
        flex,
        "group_id" / string(flex),
        "session_timeout_ms" / Int32,
        *since(v, 1, "rebalance_timeout_ms" / Int32),  # v1
        "member_id" / string(flex),
        *since(v, 5, "group_instance_id" / nullable_string(flex)),  # v5
        "protocol_type" / string(flex),
        "protocols" / array(flex, protocol),
        *since(v, 8, "reason" / nullable_string(flex)),  # v8
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    member = struct(
        flex,
        "member_id" / string(flex),
        *since(v, 5, "group_instance_id" / nullable_string(flex)),  # v5
        "metadata" / blob(flex),
    )
    return struct(
        flex,
        *since(v, 2, "throttle_time_ms" / Int32),  # v2
        "error_code" / Int16,
        "generation_id" / Int32,
        *since(v, 7, "protocol_type" / nullable_string(flex)),  # v7
        "protocol_name" / (nullable_string(flex) if v >= 7 else string(flex)),  # v7: nullable
        "leader" / string(flex),
        *since(v, 9, "skip_assignment" / Boolean),  # v9
        "member_id" / string(flex),
        "members" / array(flex, member),
    )


SPEC = register_api(
    key=KEY,
    name="JoinGroup",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=JoinGroupRequest,
    request_schema=_request,
    response_type=JoinGroupResponse,
    response_schema=_response,
)
