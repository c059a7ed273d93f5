"""Hypothesis strategies derived from a version's construct schema: every value the schema can build.

``body_values(spec, version, request=...)`` yields the request or response dataclass of an API at one version, with
every field that version has filled in and the others at their defaults; with ``full=True`` every array has an
element and nothing nullable is null, so every field of every nested struct is on the wire. Integers lean on the edges
(0, the minimum, the maximum) and on distinctive numbers, so a misplaced field shows.
"""

from __future__ import annotations

import functools
import itertools
import struct
from collections.abc import Iterator

import construct as c
from hypothesis import strategies as st

from bruce.wire import primitives
from bruce.wire.protocol.base import REGISTRY, ApiSpec, from_container


def _ints(fmtstr: str) -> st.SearchStrategy[int]:
    bits = 8 * struct.calcsize(fmtstr)
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if fmtstr[-1].islower() else (0, (1 << bits) - 1)
    return st.sampled_from([0, low, high, 0x44 + low // 2]) | st.integers(low, high)


def _raw_tags(known: frozenset[int], full: bool) -> st.SearchStrategy:
    tags = st.dictionaries(st.integers(0, 300).filter(lambda tag: tag not in known), st.binary(max_size=6), min_size=1)
    return tags if full else st.none() | tags


def _maybe_null(value: st.SearchStrategy, nullable: bool, full: bool) -> st.SearchStrategy:
    return st.none() | value if nullable and not full else value


def from_schema(sc: c.Construct, *, full: bool = False) -> st.SearchStrategy:
    """A strategy for the Python values ``sc`` builds (dicts for structs)."""
    if isinstance(sc, c.Renamed):
        return from_schema(sc.subcon, full=full)
    if isinstance(sc, primitives._TaggedStruct):
        fields = {sub.name: from_schema(sub, full=full) for sub in sc.subcon.subcons if sub.name != "tags"}
        for name, schema in sc.tagged.values():
            fields[name] = _maybe_null(from_schema(schema, full=full), True, full)
        return st.fixed_dictionaries({**fields, "tags": _raw_tags(frozenset(sc.tagged), full)})
    if isinstance(sc, c.Struct):
        return st.fixed_dictionaries({sub.name: from_schema(sub, full=full) for sub in sc.subcons if sub.name})
    if isinstance(sc, primitives._NullableStruct):
        return _maybe_null(from_schema(sc.subcon, full=full), True, full)
    if isinstance(sc, c.FormatField) and sc.fmtstr[-1] == "d":
        return st.floats(allow_nan=False)
    if isinstance(sc, c.FormatField):
        return _ints(sc.fmtstr)
    if sc is c.Flag:
        return st.booleans()
    if isinstance(sc, c.Bytes):
        return st.binary(min_size=sc.length, max_size=sc.length)
    if sc is primitives.TaggedFields:
        return _raw_tags(frozenset(), full)
    if isinstance(sc, primitives._Sized):
        most = 3 if full else 12 if sc.text else 40  # full values are small: every byte of them gets cut
        value = st.text(min_size=full, max_size=most) if sc.text else st.binary(min_size=full, max_size=most)
        return _maybe_null(value, sc.nullable, full)
    if isinstance(sc, primitives._Array):
        elements = st.lists(from_schema(sc.subcon, full=full), min_size=full, max_size=1 if full else 3)
        return _maybe_null(elements, sc.nullable, full)
    raise TypeError(f"no strategy for {sc!r}")


def body_values(spec: ApiSpec, version: int, *, request: bool, full: bool = False) -> st.SearchStrategy:
    """Request (or response) dataclasses of ``spec`` at ``version``."""
    return _body_values(spec.key, version, request, full)


@functools.cache
def _body_values(api_key: int, version: int, request: bool, full: bool) -> st.SearchStrategy:
    spec = REGISTRY[api_key]
    schema = (spec.requests if request else spec.responses)[version]
    cls = spec.request_type if request else spec.response_type
    return from_schema(schema, full=full).map(lambda value: from_container(cls, value))


def distinct_value(sc: c.Construct) -> object:
    """One value ``sc`` builds in which every field differs from every other (ints count up, strings and bytes name
    their number, arrays have one element, nothing nullable is null, tagged fields are present, no unknown tags), so a
    field read in another one's place shows. The same schema always gives the same value."""
    return _distinct(sc, iter(range(1, 1 << 20)), itertools.cycle((True, False)))


def _distinct(sc: c.Construct, counter: Iterator[int], flips: Iterator[bool]) -> object:
    if isinstance(sc, c.Renamed):
        return _distinct(sc.subcon, counter, flips)
    if isinstance(sc, primitives._TaggedStruct):
        out = {sub.name: _distinct(sub, counter, flips) for sub in sc.subcon.subcons if sub.name not in (None, "tags")}
        out.update({name: _distinct(schema, counter, flips) for name, schema in sc.tagged.values()})
        return {**out, "tags": None}
    if isinstance(sc, c.Struct):
        out = {sub.name: _distinct(sub, counter, flips) for sub in sc.subcons if sub.name and sub.name != "tags"}
        return {**out, "tags": None} if any(sub.name == "tags" for sub in sc.subcons) else out
    if isinstance(sc, primitives._NullableStruct):
        return _distinct(sc.subcon, counter, flips)
    n = next(counter)
    if isinstance(sc, c.FormatField):
        if sc.fmtstr[-1] == "d":
            return n + 0.5
        bits = 8 * struct.calcsize(sc.fmtstr)
        return n % (1 << (bits - 1)) if bits < 32 else n * 0x10001  # wide types get values their narrow kin cannot hold
    if sc is c.Flag:
        return next(flips)  # booleans alternate, so two neighbouring ones differ
    if isinstance(sc, c.Bytes):
        return n.to_bytes(sc.length, "big")
    if sc is primitives.TaggedFields:
        return None
    if isinstance(sc, primitives._Sized):
        return f"s{n}" if sc.text else f"b{n}".encode()
    if isinstance(sc, primitives._Array):
        return [_distinct(sc.subcon, counter, flips)]
    raise TypeError(f"no distinct value for {sc!r}")
