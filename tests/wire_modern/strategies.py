"""Hypothesis strategies derived from a version's construct schema: every value the schema can build.

``body_values(spec, version, request=...)`` yields the request or response dataclass of an API at one version, with
every field that version has filled in and the others at their defaults.
"""

from __future__ import annotations

import struct

import construct as c
from hypothesis import strategies as st

from bruce.wire import primitives
from bruce.wire.protocol.base import ApiSpec, from_container


def _ints(fmtstr: str) -> st.SearchStrategy[int]:
    bits = 8 * struct.calcsize(fmtstr)
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if fmtstr[-1].islower() else (0, (1 << bits) - 1)
    return st.sampled_from([0, low, high, 0x44 + low // 2]) | st.integers(low, high)


def from_schema(sc: c.Construct) -> st.SearchStrategy:
    """A strategy for the Python values ``sc`` builds (dicts for structs)."""
    if isinstance(sc, c.Renamed):
        return from_schema(sc.subcon)
    if isinstance(sc, c.Struct):
        return st.fixed_dictionaries({sub.name: from_schema(sub) for sub in sc.subcons if sub.name})
    if isinstance(sc, c.FormatField):
        return _ints(sc.fmtstr)
    if sc is c.Flag:
        return st.booleans()
    if isinstance(sc, c.Bytes):
        return st.binary(min_size=sc.length, max_size=sc.length)
    if sc is primitives.TaggedFields:
        return st.none() | st.dictionaries(st.integers(0, 300), st.binary(max_size=6), min_size=1, max_size=3)
    if isinstance(sc, primitives._Sized):
        value = st.text(max_size=12) if sc.text else st.binary(max_size=40)
        return (st.none() | value) if sc.nullable else value
    if isinstance(sc, primitives._Array):
        items = st.lists(from_schema(sc.subcon), max_size=3)
        return (st.none() | items) if sc.nullable else items
    raise TypeError(f"no strategy for {sc!r}")


def body_values(spec: ApiSpec, version: int, *, request: bool) -> st.SearchStrategy:
    """Request (or response) dataclasses of ``spec`` at ``version``."""
    schema = (spec.requests if request else spec.responses)[version]
    cls = spec.request_type if request else spec.response_type
    return from_schema(schema).map(lambda value: from_container(cls, value))
