"""DescribeClientQuotas (API key 48), versions 0-1: the quotas of client entities (user, client id, IP) that match
filters (KIP-546).

Rules: a component's ``match_type`` is 0 exact name, 1 the default entity, 2 any entity; quota values are float64.
v1 is flexible.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Float64, Int8, Int16, Int32
from ._versioned import array, nullable_array, nullable_string, register_api, string, struct

KEY = 48
VERSIONS = range(2)
FIRST_FLEXIBLE = 1


@dataclass(frozen=True, slots=True)
class ComponentData:
    entity_type: str
    match_type: int
    match: str | None
    tags: dict[int, bytes] | None = None  # v1+


@dataclass(frozen=True, slots=True)
class DescribeClientQuotasRequest:
    components: tuple[ComponentData, ...]
    strict: bool
    tags: dict[int, bytes] | None = None  # v1+


@dataclass(frozen=True, slots=True)
class DescribeClientQuotasEntityData:
    entity_type: str
    entity_name: str | None
    tags: dict[int, bytes] | None = None  # v1+


@dataclass(frozen=True, slots=True)
class ValueData:
    key: str
    value: float
    tags: dict[int, bytes] | None = None  # v1+


@dataclass(frozen=True, slots=True)
class DescribeClientQuotasEntryData:
    entity: tuple[DescribeClientQuotasEntityData, ...]
    values: tuple[ValueData, ...]
    tags: dict[int, bytes] | None = None  # v1+


@dataclass(frozen=True, slots=True)
class DescribeClientQuotasResponse:
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    entries: tuple[DescribeClientQuotasEntryData, ...] | None
    tags: dict[int, bytes] | None = None  # v1+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    component_data = struct(flex, "entity_type" / string(flex), "match_type" / Int8, "match" / nullable_string(flex))
    return struct(flex, "components" / array(flex, component_data), "strict" / Boolean)


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    entity_data = struct(flex, "entity_type" / string(flex), "entity_name" / nullable_string(flex))
    value_data = struct(flex, "key" / string(flex), "value" / Float64)
    entry_data = struct(flex, "entity" / array(flex, entity_data), "values" / array(flex, value_data))
    return struct(
        flex,
        "throttle_time_ms" / Int32,
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
        "entries" / nullable_array(flex, entry_data),
    )


SPEC = register_api(
    key=KEY,
    name="DescribeClientQuotas",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=DescribeClientQuotasRequest,
    request_schema=_request,
    response_type=DescribeClientQuotasResponse,
    response_schema=_response,
)
