"""Fuzz the input-datagram parser.

Invariant: for any bytes, ``parse_datagram`` returns a Datagram or raises MalformedInput (UnsupportedApiKey and
UnsupportedVersion are subclasses) — never anything else — and its outcome equals the construct spec's
(``parse_datagram_schema``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import atheris

with atheris.instrument_imports(include=["bruce.wire"]):
    from bruce.wire.datagram import Datagram, parse_datagram, parse_datagram_schema
    from bruce.wire.errors import MalformedInput


def outcome(parse: Callable[[bytes], Datagram], data: bytes) -> Datagram | tuple:
    try:
        return parse(data)
    except MalformedInput as e:
        return (type(e).__name__, getattr(e, "api_key", None), getattr(e, "version", None))


def test_one_input(data: bytes) -> None:
    fast = outcome(parse_datagram, data)
    spec = outcome(parse_datagram_schema, data)
    if fast != spec:
        raise AssertionError(f"fast parser {fast!r} != spec {spec!r}")


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
