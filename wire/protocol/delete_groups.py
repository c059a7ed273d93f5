"""DeleteGroups (API key 42), versions 0-2: delete empty groups.

Rules: v1 equals v0 (answers may come before throttling), v2 is flexible.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32
from ._versioned import array, register_api, string, struct

KEY = 42
VERSIONS = range(3)
FIRST_FLEXIBLE = 2


@dataclass(frozen=True, slots=True)
class DeleteGroupsRequest:
    groups_names: tuple[str, ...]
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class DeletableGroupResult:
    group_id: str
    error_code: int
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class DeleteGroupsResponse:
    throttle_time_ms: int
    results: tuple[DeletableGroupResult, ...]
    tags: dict[int, bytes] | None = None  # v2+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    return struct(flex, "groups_names" / array(flex, string(flex)))


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    result = struct(flex, "group_id" / string(flex), "error_code" / Int16)
    return struct(flex, "throttle_time_ms" / Int32, "results" / array(flex, result))


SPEC = register_api(
    key=KEY,
    name="DeleteGroups",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=DeleteGroupsRequest,
    request_schema=_request,
    response_type=DeleteGroupsResponse,
    response_schema=_response,
)
