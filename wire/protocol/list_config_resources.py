"""ListConfigResources (API key 74), versions 0-1: the config resources a cluster has: at v0 (then named
ListClientMetricsResources) the client metrics resources only; v1 those of the types asked for, all of them when none
(KIP-1142).

Rules: flexible from v0. v1 answers each resource's type.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int8, Int16, Int32
from ._versioned import array, register_api, since, string, struct

KEY = 74
VERSIONS = range(2)
FIRST_FLEXIBLE = 0


@dataclass(frozen=True, slots=True)
class ListConfigResourcesRequest:
    resource_types: tuple[int, ...] = ()  # v1+
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class ConfigResource:
    resource_name: str
    resource_type: int = 16  # v1+
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class ListConfigResourcesResponse:
    throttle_time_ms: int
    error_code: int
    config_resources: tuple[ConfigResource, ...]
    tags: dict[int, bytes] | None = None  # v0+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    return struct(
        flex,
        *since(v, 1, "resource_types" / array(flex, Int8)),  # v1
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    config_resource = struct(
        flex,
        "resource_name" / string(flex),
        *since(v, 1, "resource_type" / Int8),  # v1
    )
    return struct(
        flex,
        "throttle_time_ms" / Int32,
        "error_code" / Int16,
        "config_resources" / array(flex, config_resource),
    )


SPEC = register_api(
    key=KEY,
    name="ListConfigResources",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=ListConfigResourcesRequest,
    request_schema=_request,
    response_type=ListConfigResourcesResponse,
    response_schema=_response,
)
