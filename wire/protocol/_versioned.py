"""Helpers to declare one schema per version from a single field list (used by fetch, list_offsets, create_topics).

Rules: ``since(version, first, *fields)`` keeps fields introduced in ``first`` or later; the type helpers pick the
classic or the flexible (compact) form; :func:`struct` appends the tagged-field section in flexible versions.
"""

from __future__ import annotations

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
    String,
    TaggedFields,
)


def since(version: int, first: int, *fields: c.Construct) -> list[c.Construct]:
    """``fields`` if ``version`` is at least ``first``, else nothing."""
    return list(fields) if version >= first else []


def until(version: int, last: int, *fields: c.Construct) -> list[c.Construct]:
    """``fields`` if ``version`` is at most ``last``, else nothing."""
    return list(fields) if version <= last else []


def struct(flexible: bool, *fields: c.Construct) -> c.Struct:
    """A struct; flexible versions end it with the tagged-field section."""
    return c.Struct(*fields, *(["tags" / TaggedFields] if flexible else []))


def string(flexible: bool) -> c.Construct:
    return CompactString if flexible else String


def nullable_string(flexible: bool) -> c.Construct:
    return CompactNullableString if flexible else NullableString


def bytes_(flexible: bool) -> c.Construct:
    return CompactBytes if flexible else Bytes


def nullable_bytes(flexible: bool) -> c.Construct:
    return CompactNullableBytes if flexible else NullableBytes


def array(flexible: bool, element: c.Construct) -> c.Construct:
    return CompactArray(element) if flexible else Array(element)


def nullable_array(flexible: bool, element: c.Construct) -> c.Construct:
    return CompactNullableArray(element) if flexible else NullableArray(element)
