"""DeleteAcls (API key 31), versions 0-3: remove the ACLs that match filters.

Rules: filters as DescribeAcls's (null strings match anything); the answer lists, per filter, the ACLs it removed.
v1 adds the pattern type, v2 is flexible, v3 adds the user resource type. Kafka 4.0 removed v0 from its brokers.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int8, Int16, Int32
from ._versioned import array, nullable_string, register_api, since, string, struct

KEY = 31
VERSIONS = range(4)
FIRST_FLEXIBLE = 2


@dataclass(frozen=True, slots=True)
class DeleteAclsFilter:
    resource_type_filter: int
    resource_name_filter: str | None
    pattern_type_filter: int = 3  # v1+
    principal_filter: str | None = None
    host_filter: str | None = None
    operation: int = 0
    permission_type: int = 0
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class DeleteAclsRequest:
    filters: tuple[DeleteAclsFilter, ...]
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class DeleteAclsMatchingAcl:
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str
    pattern_type: int = 3  # v1+
    principal: str = ""
    host: str = ""
    operation: int = 0
    permission_type: int = 0
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class DeleteAclsFilterResult:
    error_code: int
    error_message: str | None
    matching_acls: tuple[DeleteAclsMatchingAcl, ...]
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class DeleteAclsResponse:
    throttle_time_ms: int
    filter_results: tuple[DeleteAclsFilterResult, ...]
    tags: dict[int, bytes] | None = None  # v2+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    filter = struct(
        flex,
        "resource_type_filter" / Int8,
        "resource_name_filter" / nullable_string(flex),
        *since(v, 1, "pattern_type_filter" / Int8),  # v1
        "principal_filter" / nullable_string(flex),
        "host_filter" / nullable_string(flex),
        "operation" / Int8,
        "permission_type" / Int8,
    )
    return struct(flex, "filters" / array(flex, filter))


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    matching_acl = struct(
        flex,
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
        "resource_type" / Int8,
        "resource_name" / string(flex),
        *since(v, 1, "pattern_type" / Int8),  # v1
        "principal" / string(flex),
        "host" / string(flex),
        "operation" / Int8,
        "permission_type" / Int8,
    )
    filter_result = struct(
        flex,
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
        "matching_acls" / array(flex, matching_acl),
    )
    return struct(flex, "throttle_time_ms" / Int32, "filter_results" / array(flex, filter_result))


SPEC = register_api(
    key=KEY,
    name="DeleteAcls",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=DeleteAclsRequest,
    request_schema=_request,
    response_type=DeleteAclsResponse,
    response_schema=_response,
)
