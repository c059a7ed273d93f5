"""CreateAcls (API key 30), versions 0-3: add ACLs.

Rules: each creation names a resource (type, name, pattern type from v1), a principal, a host, an operation and a
permission type; the answer has one result per creation, in order. v2 is flexible, v3 adds the user resource type.
Kafka 4.0 removed v0 from its brokers.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int8, Int16, Int32
from ._versioned import array, nullable_string, register_api, since, string, struct

KEY = 30
VERSIONS = range(4)
FIRST_FLEXIBLE = 2


@dataclass(frozen=True, slots=True)
class AclCreation:
    resource_type: int
    resource_name: str
    resource_pattern_type: int = 3  # v1+
    principal: str = ""
    host: str = ""
    operation: int = 0
    permission_type: int = 0
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class CreateAclsRequest:
    creations: tuple[AclCreation, ...]
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class AclCreationResult:
    error_code: int
    error_message: str | None
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class CreateAclsResponse:
    throttle_time_ms: int
    results: tuple[AclCreationResult, ...]
    tags: dict[int, bytes] | None = None  # v2+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    acl_creation = struct(
        flex,
        "resource_type" / Int8,
        "resource_name" / string(flex),
        *since(v, 1, "resource_pattern_type" / Int8),  # v1
        "principal" / string(flex),
        "host" / string(flex),
        "operation" / Int8,
        "permission_type" / Int8,
    )
    return struct(flex, "creations" / array(flex, acl_creation))


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    acl_creation_result = struct(flex, "error_code" / Int16, "error_message" / nullable_string(flex))
    return struct(flex, "throttle_time_ms" / Int32, "results" / array(flex, acl_creation_result))


SPEC = register_api(
    key=KEY,
    name="CreateAcls",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=CreateAclsRequest,
    request_schema=_request,
    response_type=CreateAclsResponse,
    response_schema=_response,
)
