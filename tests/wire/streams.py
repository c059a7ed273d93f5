"""The stream-feeding invariant, reusable by every parser's tests: a parser fed a valid input whole, truncated at every
byte, and with trailing data either returns or raises ``MalformedInput`` (or a subclass) — never anything else.

``outcomes(parse, data)`` runs every variant and returns what happened; ``assert_only_malformed`` checks the
invariant over any inputs; ``assert_strict_framing`` additionally requires that every truncation and every trailing
variant is *rejected* (formats whose length is fixed by their own fields).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from bruce.wire.errors import MalformedInput

TRAILING_JUNK = (b"\x00", b"\xff", b"\x00\x00\x00\x01", b"junk" * 5)


def truncations(data: bytes) -> Iterator[bytes]:
    """``data`` cut at every byte: the empty prefix up to all but the last byte."""
    for i in range(len(data)):
        yield data[:i]


def with_trailing(data: bytes) -> Iterator[bytes]:
    """``data`` followed by a few kinds of trailing bytes."""
    for junk in TRAILING_JUNK:
        yield data + junk


def variants(data: bytes) -> Iterator[tuple[str, bytes]]:
    yield "whole", data
    for cut in truncations(data):
        yield f"truncated at {len(cut)}", cut
    for extra in with_trailing(data):
        yield f"trailing {extra[len(data) :]!r}", extra


def run(parse: Callable[[bytes], Any], data: bytes) -> Any:
    """``parse(data)``'s result, or the ``MalformedInput`` it raised; any other exception propagates."""
    try:
        return parse(data)
    except MalformedInput as e:
        return e


def assert_only_malformed(parse: Callable[[bytes], Any], inputs: Iterable[bytes]) -> None:
    """Every input parses or raises ``MalformedInput``; another exception fails the test naming the input."""
    for data in inputs:
        try:
            parse(data)
        except MalformedInput:
            pass
        except Exception as e:  # pragma: no cover - the failure path of the invariant
            raise AssertionError(f"{type(e).__name__}: {e} on input {data.hex()}") from e


def outcomes(parse: Callable[[bytes], Any], data: bytes) -> dict[str, Any]:
    """Run every variant of ``data``; each maps to the parse result or the ``MalformedInput`` raised."""
    results = {}
    for name, variant in variants(data):
        try:
            results[name] = parse(variant)
        except MalformedInput as e:
            results[name] = e
        except Exception as e:  # pragma: no cover - the failure path of the invariant
            raise AssertionError(f"{name}: {type(e).__name__}: {e} on input {variant.hex()}") from e
    return results


def assert_strict_framing(parse: Callable[[bytes], Any], data: bytes) -> Any:
    """``data`` parses whole; every truncation and every trailing variant raises ``MalformedInput``. Returns the
    parse of the whole input."""
    results = outcomes(parse, data)
    whole = results.pop("whole")
    assert not isinstance(whole, MalformedInput), f"the whole input did not parse: {whole}"
    accepted = [name for name, r in results.items() if not isinstance(r, MalformedInput)]
    assert accepted == [], f"accepted damaged input: {accepted}"
    return whole
