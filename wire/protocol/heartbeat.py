"""Heartbeat (API key 12), versions 0-4: a member of a classic group tells its coordinator it is alive; the answer's
error (REBALANCE_IN_PROGRESS, ...) tells it to rejoin.

Rules: v1 adds the throttle time, v3 the static member's instance id, v4 is flexible.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32
from ._versioned import nullable_string, register_api, since, string, struct

KEY = 12
VERSIONS = range(5)
FIRST_FLEXIBLE = 4


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None  # v3+
    tags: dict[int, bytes] | None = None  # v4+


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    throttle_time_ms: int = 0  # v1+
    error_code: int = 0
    tags: dict[int, bytes] | None = None  # v4+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    return struct(
        flex,
        "group_id" / string(flex),
        "generation_id" / Int32,
        "member_id" / string(flex),
        *since(v, 3, "group_instance_id" / nullable_string(flex)),  # v3
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    return struct(
        flex,
        *since(v, 1, "throttle_time_ms" / Int32),  # v1
        "error_code" / Int16,
    )


SPEC = register_api(
    key=KEY,
    name="Heartbeat",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=HeartbeatRequest,
    request_schema=_request,
    response_type=HeartbeatResponse,
    response_schema=_response,
)
