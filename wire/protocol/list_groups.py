"""ListGroups (API key 16), versions 0-5: the groups a broker coordinates.

Rules: v1 adds the throttle time, v3 is flexible, v4 filters by state and answers each group's state (KIP-518), v5
filters by type and answers each group's type (``classic``, ``consumer``, ``share``, ``streams``; KIP-848).
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32
from ._versioned import array, register_api, since, string, struct

KEY = 16
VERSIONS = range(6)
FIRST_FLEXIBLE = 3


@dataclass(frozen=True, slots=True)
class ListGroupsRequest:
    states_filter: tuple[str, ...] = ()  # v4+
    types_filter: tuple[str, ...] = ()  # v5+
    tags: dict[int, bytes] | None = None  # v3+


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str = ""  # v4+
    group_type: str = ""  # v5+
    tags: dict[int, bytes] | None = None  # v3+


@dataclass(frozen=True, slots=True)
class ListGroupsResponse:
    throttle_time_ms: int = 0  # v1+
    error_code: int = 0
    groups: tuple[ListedGroup, ...] = ()
    tags: dict[int, bytes] | None = None  # v3+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    return struct(
        flex,
        *since(v, 4, "states_filter" / array(flex, string(flex))),  # v4
        *since(v, 5, "types_filter" / array(flex, string(flex))),  # v5
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    listed_group = struct(
        flex,
        "group_id" / string(flex),
        "protocol_type" / string(flex),
        *since(v, 4, "group_state" / string(flex)),  # v4
        *since(v, 5, "group_type" / string(flex)),  # v5
    )
    return struct(
        flex,
        *since(v, 1, "throttle_time_ms" / Int32),  # v1
        "error_code" / Int16,
        "groups" / array(flex, listed_group),
    )


SPEC = register_api(
    key=KEY,
    name="ListGroups",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=ListGroupsRequest,
    request_schema=_request,
    response_type=ListGroupsResponse,
    response_schema=_response,
)
