"""DescribeConfigs (API key 32), versions 0-4: the configs of topics, brokers, broker loggers, client metrics or groups.

Rules:
- A resource is a type (2 topic, 4 broker, 8 broker logger, 16 client metrics, 32 group) and a name; null
  ``configuration_keys`` asks for all of them.
- v0 answers ``is_default``; v1 replaces it by ``config_source`` and can ask for synonyms (``include_synonyms``);
  v3 asks for documentation and answers each config's type and documentation; v4 is flexible. Kafka 4.0 removed v0
  from its brokers.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int8, Int16, Int32
from ._versioned import array, nullable_array, nullable_string, register_api, since, string, struct, until

KEY = 32
VERSIONS = range(5)
FIRST_FLEXIBLE = 4


@dataclass(frozen=True, slots=True)
class DescribeConfigsResource:
    resource_type: int
    resource_name: str
    configuration_keys: tuple[str, ...] | None
    tags: dict[int, bytes] | None = None  # v4+


@dataclass(frozen=True, slots=True)
class DescribeConfigsRequest:
    resources: tuple[DescribeConfigsResource, ...]
    include_synonyms: bool = False  # v1+
    include_documentation: bool = False  # v3+
    tags: dict[int, bytes] | None = None  # v4+


@dataclass(frozen=True, slots=True)
class DescribeConfigsSynonym:
    name: str
    value: str | None
    source: int
    tags: dict[int, bytes] | None = None  # v4+


@dataclass(frozen=True, slots=True)
class DescribeConfigsResourceResult:
    name: str
    value: str | None
    read_only: bool
    config_source: int = -1  # v1+
    is_default: bool = False  # v0 only
    is_sensitive: bool = False
    synonyms: tuple[DescribeConfigsSynonym, ...] = ()  # v1+
    config_type: int = 0  # v3+
    documentation: str | None = None  # v3+
    tags: dict[int, bytes] | None = None  # v4+


@dataclass(frozen=True, slots=True)
class DescribeConfigsResult:
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str
    configs: tuple[DescribeConfigsResourceResult, ...]
    tags: dict[int, bytes] | None = None  # v4+


@dataclass(frozen=True, slots=True)
class DescribeConfigsResponse:
    throttle_time_ms: int
    results: tuple[DescribeConfigsResult, ...]
    tags: dict[int, bytes] | None = None  # v4+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    resource = struct(
        flex,
        "resource_type" / Int8,
        "resource_name" / string(flex),
        "configuration_keys" / nullable_array(flex, string(flex)),
    )
    return struct(
        flex,
        "resources" / array(flex, resource),
        *since(v, 1, "include_synonyms" / Boolean),  # v1
        *since(v, 3, "include_documentation" / Boolean),  # v3
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    synonym = struct(flex, "name" / string(flex), "value" / nullable_string(flex), "source" / Int8)
    resource_result = struct(
        flex,
        "name" / string(flex),
        "value" / nullable_string(flex),
        "read_only" / Boolean,
        *since(v, 1, "config_source" / Int8),  # v1
        *until(v, 0, "is_default" / Boolean),  # v0 only
        "is_sensitive" / Boolean,
        *since(v, 1, "synonyms" / array(flex, synonym)),  # v1
        *since(v, 3, "config_type" / Int8),  # v3
        *since(v, 3, "documentation" / nullable_string(flex)),  # v3
    )
    result = struct(
        flex,
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
        "resource_type" / Int8,
        "resource_name" / string(flex),
        "configs" / array(flex, resource_result),
    )
    return struct(flex, "throttle_time_ms" / Int32, "results" / array(flex, result))


SPEC = register_api(
    key=KEY,
    name="DescribeConfigs",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=DescribeConfigsRequest,
    request_schema=_request,
    response_type=DescribeConfigsResponse,
    response_schema=_response,
)
