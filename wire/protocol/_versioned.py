"""How API modules declare their schemas: one function per direction builds any version's schema from one field list.

Rules:
- ``since(v, first, *fields)`` keeps fields that version ``v`` has (introduced in ``first``); ``until(v, last,
  *fields)`` those it still has (removed after ``last``). Each such field carries a ``# vN`` comment in its module.
- The type helpers pick the classic or the flexible (compact, KIP-482) form of a type; :func:`struct` ends a flexible
  version's struct with the tagged-field section, and decodes the tagged fields given in ``tagged`` by name
  (:func:`tagged` picks those a version has).
- :func:`register_api` builds every version's request and response schema and registers the API.
"""

from __future__ import annotations

from collections.abc import Callable

import construct as c

from ..primitives import (
    Array,
    Bytes,
    CompactArray,
    CompactBytes,
    CompactNullableArray,
    CompactNullableBytes,
    CompactNullableString,
    CompactString,
    NullableArray,
    NullableBytes,
    NullableString,
    NullableStruct,
    String,
    TaggedFields,
    TaggedStruct,
)
from .base import ApiSpec, Schemas, register


def since(version: int, first: int, *fields: c.Construct) -> list[c.Construct]:
    """``fields`` if ``version`` is at least ``first``, else nothing."""
    return list(fields) if version >= first else []


def until(version: int, last: int, *fields: c.Construct) -> list[c.Construct]:
    """``fields`` if ``version`` is at most ``last``, else nothing."""
    return list(fields) if version <= last else []


def struct(
    flexible: bool, *fields: c.Construct, tagged: dict[int, tuple[str, c.Construct]] | None = None
) -> c.Construct:
    """A struct; flexible versions end it with the tagged-field section, whose ``tagged`` fields ``{tag: (name,
    schema)}`` are decoded by name (the others stay raw in ``tags``)."""
    if not flexible:
        return c.Struct(*fields)
    if tagged:
        return TaggedStruct(*fields, tagged=tagged)
    return c.Struct(*fields, "tags" / TaggedFields)


def tagged(version: int, *fields: tuple[int, int, str, c.Construct]) -> dict[int, tuple[str, c.Construct]] | None:
    """The tagged fields ``(first version, tag, name, schema)`` that ``version`` has, as :func:`struct` takes them."""
    present = {tag: (name, schema) for first, tag, name, schema in fields if version >= first}
    return present or None


def string(flexible: bool) -> c.Construct:
    return CompactString if flexible else String


def nullable_string(flexible: bool) -> c.Construct:
    return CompactNullableString if flexible else NullableString


def blob(flexible: bool) -> c.Construct:
    """BYTES (non-nullable) in its classic or compact form."""
    return CompactBytes if flexible else Bytes


def nullable_bytes(flexible: bool) -> c.Construct:
    return CompactNullableBytes if flexible else NullableBytes


def array(flexible: bool, element: c.Construct) -> c.Construct:
    return CompactArray(element) if flexible else Array(element)


def nullable_array(flexible: bool, element: c.Construct) -> c.Construct:
    return CompactNullableArray(element) if flexible else NullableArray(element)


def nullable_struct(schema: c.Construct) -> c.Construct:
    """A struct field that may be null (an int8 marker before it)."""
    return NullableStruct(schema)


def register_api(
    *,
    key: int,
    name: str,
    versions: range,
    first_flexible: int | None,
    request_type: type,
    request_schema: Callable[[int], c.Construct],
    response_type: type,
    response_schema: Callable[[int], c.Construct],
) -> ApiSpec:
    """Register an API: its request and response schema for every version in ``versions`` (each built on first use)."""
    return register(
        ApiSpec(
            key=key,
            name=name,
            requests=Schemas(versions, request_schema),
            responses=Schemas(versions, response_schema),
            request_type=request_type,
            response_type=response_type,
            first_flexible=first_flexible,
        )
    )
