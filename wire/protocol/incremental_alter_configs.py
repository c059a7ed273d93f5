"""IncrementalAlterConfigs (API key 44), versions 0-1: change single config keys of resources (KIP-339).

Rules: each config has an operation: 0 set, 1 delete, 2 append to a list, 3 subtract from a list. Resource types as
DescribeConfigs's. v1 is flexible.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int8, Int16, Int32
from ._versioned import array, nullable_string, register_api, string, struct

KEY = 44
VERSIONS = range(2)
FIRST_FLEXIBLE = 1


@dataclass(frozen=True, slots=True)
class IncrementalAlterableConfig:
    name: str
    config_operation: int
    value: str | None
    tags: dict[int, bytes] | None = None  # v1+


@dataclass(frozen=True, slots=True)
class IncrementalAlterConfigsResource:
    resource_type: int
    resource_name: str
    configs: tuple[IncrementalAlterableConfig, ...]
    tags: dict[int, bytes] | None = None  # v1+


@dataclass(frozen=True, slots=True)
class IncrementalAlterConfigsRequest:
    resources: tuple[IncrementalAlterConfigsResource, ...]
    validate_only: bool
    tags: dict[int, bytes] | None = None  # v1+


@dataclass(frozen=True, slots=True)
class IncrementalAlterConfigsResourceResponse:
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str
    tags: dict[int, bytes] | None = None  # v1+


@dataclass(frozen=True, slots=True)
class IncrementalAlterConfigsResponse:
    throttle_time_ms: int
    responses: tuple[IncrementalAlterConfigsResourceResponse, ...]
    tags: dict[int, bytes] | None = None  # v1+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    alterable_config = struct(flex, "name" / string(flex), "config_operation" / Int8, "value" / nullable_string(flex))
    alter_configs_resource = struct(
        flex,
        "resource_type" / Int8,
        "resource_name" / string(flex),
        "configs" / array(flex, alterable_config),
    )
    return struct(flex, "resources" / array(flex, alter_configs_resource), "validate_only" / Boolean)


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    alter_configs_resource_response = struct(
        flex,
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
        "resource_type" / Int8,
        "resource_name" / string(flex),
    )
    return struct(
        flex,
        "throttle_time_ms" / Int32,
        "responses" / array(flex, alter_configs_resource_response),
    )


SPEC = register_api(
    key=KEY,
    name="IncrementalAlterConfigs",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=IncrementalAlterConfigsRequest,
    request_schema=_request,
    response_type=IncrementalAlterConfigsResponse,
    response_schema=_response,
)
