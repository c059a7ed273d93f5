"""DescribeAcls (API key 29), versions 0-3: the ACLs that match a filter.

Rules: a filter names a resource type, name and pattern type (v1+; 1 any, 2 match, 3 literal, 4 prefixed), a
principal, a host, an operation and a permission type; null strings match anything. v2 is flexible, v3 adds the user
resource type. Kafka 4.0 removed v0 from its brokers.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int8, Int16, Int32
from ._versioned import array, nullable_string, register_api, since, string, struct

KEY = 29
VERSIONS = range(4)
FIRST_FLEXIBLE = 2


@dataclass(frozen=True, slots=True)
class DescribeAclsRequest:
    resource_type_filter: int
    resource_name_filter: str | None
    pattern_type_filter: int = 3  # v1+
    principal_filter: str | None = None
    host_filter: str | None = None
    operation: int = 0
    permission_type: int = 0
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class AclDescription:
    principal: str
    host: str
    operation: int
    permission_type: int
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class DescribeAclsResource:
    resource_type: int
    resource_name: str
    pattern_type: int = 3  # v1+
    acls: tuple[AclDescription, ...] = ()
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class DescribeAclsResponse:
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    resources: tuple[DescribeAclsResource, ...]
    tags: dict[int, bytes] | None = None  # v2+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    return struct(
        flex,
        "resource_type_filter" / Int8,
        "resource_name_filter" / nullable_string(flex),
        *since(v, 1, "pattern_type_filter" / Int8),  # v1
        "principal_filter" / nullable_string(flex),
        "host_filter" / nullable_string(flex),
        "operation" / Int8,
        "permission_type" / Int8,
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    acl_description = struct(
        flex,
        "principal" / string(flex),
        "host" / string(flex),
        "operation" / Int8,
        "permission_type" / Int8,
    )
    resource = struct(
        flex,
        "resource_type" / Int8,
        "resource_name" / string(flex),
        *since(v, 1, "pattern_type" / Int8),  # v1
        "acls" / array(flex, acl_description),
    )
    return struct(
        flex,
        "throttle_time_ms" / Int32,
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
        "resources" / array(flex, resource),
    )


SPEC = register_api(
    key=KEY,
    name="DescribeAcls",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=DescribeAclsRequest,
    request_schema=_request,
    response_type=DescribeAclsResponse,
    response_schema=_response,
)
