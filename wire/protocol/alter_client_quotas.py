"""AlterClientQuotas (API key 49), versions 0-1: set or remove quotas of client entities (KIP-546).

Rules: each op sets ``value`` (float64) for ``key``, or removes it. v1 is flexible.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Float64, Int16, Int32
from ._versioned import array, nullable_string, register_api, string, struct

KEY = 49
VERSIONS = range(2)
FIRST_FLEXIBLE = 1


@dataclass(frozen=True, slots=True)
class EntityData:
    entity_type: str
    entity_name: str | None
    tags: dict[int, bytes] | None = None  # v1+


@dataclass(frozen=True, slots=True)
class OpData:
    key: str
    value: float
    remove: bool
    tags: dict[int, bytes] | None = None  # v1+


@dataclass(frozen=True, slots=True)
class EntryData:
    entity: tuple[EntityData, ...]
    ops: tuple[OpData, ...]
    tags: dict[int, bytes] | None = None  # v1+


@dataclass(frozen=True, slots=True)
class AlterClientQuotasRequest:
    entries: tuple[EntryData, ...]
    validate_only: bool
    tags: dict[int, bytes] | None = None  # v1+


@dataclass(frozen=True, slots=True)
class EntryDataResponse:
    error_code: int
    error_message: str | None
    entity: tuple[EntityData, ...]
    tags: dict[int, bytes] | None = None  # v1+


@dataclass(frozen=True, slots=True)
class AlterClientQuotasResponse:
    throttle_time_ms: int
    entries: tuple[EntryDataResponse, ...]
    tags: dict[int, bytes] | None = None  # v1+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    entity_data = struct(flex, "entity_type" / string(flex), "entity_name" / nullable_string(flex))
    op_data = struct(flex, "key" / string(flex), "value" / Float64, "remove" / Boolean)
    entry_data = struct(flex, "entity" / array(flex, entity_data), "ops" / array(flex, op_data))
    return struct(flex, "entries" / array(flex, entry_data), "validate_only" / Boolean)


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    entity_data = struct(flex, "entity_type" / string(flex), "entity_name" / nullable_string(flex))
    entry_data = struct(
        flex,
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
        "entity" / array(flex, entity_data),
    )
    return struct(flex, "throttle_time_ms" / Int32, "entries" / array(flex, entry_data))


SPEC = register_api(
    key=KEY,
    name="AlterClientQuotas",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=AlterClientQuotasRequest,
    request_schema=_request,
    response_type=AlterClientQuotasResponse,
    response_schema=_response,
)
