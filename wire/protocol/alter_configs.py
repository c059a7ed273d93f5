"""AlterConfigs (API key 33), versions 0-2: replace the whole config of resources (deprecated by
IncrementalAlterConfigs, which changes single keys).

Rules: resource types as DescribeConfigs's. v1 equals v0 (answers may come before throttling), v2 is flexible.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int8, Int16, Int32
from ._versioned import array, nullable_string, register_api, string, struct

KEY = 33
VERSIONS = range(3)
FIRST_FLEXIBLE = 2


@dataclass(frozen=True, slots=True)
class AlterableConfig:
    name: str
    value: str | None
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class AlterConfigsResource:
    resource_type: int
    resource_name: str
    configs: tuple[AlterableConfig, ...]
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class AlterConfigsRequest:
    resources: tuple[AlterConfigsResource, ...]
    validate_only: bool
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class AlterConfigsResourceResponse:
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str
    tags: dict[int, bytes] | None = None  # v2+


@dataclass(frozen=True, slots=True)
class AlterConfigsResponse:
    throttle_time_ms: int
    responses: tuple[AlterConfigsResourceResponse, ...]
    tags: dict[int, bytes] | None = None  # v2+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    alterable_config = struct(flex, "name" / string(flex), "value" / nullable_string(flex))
    resource = struct(
        flex,
        "resource_type" / Int8,
        "resource_name" / string(flex),
        "configs" / array(flex, alterable_config),
    )
    return struct(flex, "resources" / array(flex, resource), "validate_only" / Boolean)


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    resource_response = struct(
        flex,
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
        "resource_type" / Int8,
        "resource_name" / string(flex),
    )
    return struct(flex, "throttle_time_ms" / Int32, "responses" / array(flex, resource_response))


SPEC = register_api(
    key=KEY,
    name="AlterConfigs",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=AlterConfigsRequest,
    request_schema=_request,
    response_type=AlterConfigsResponse,
    response_schema=_response,
)
