"""The stream-feeding invariant, for every parser's tests: fed a valid input whole, truncated at every byte, or with
trailing data, a parser returns or raises ``MalformedInput`` (or a subclass), never anything else.

``run`` feeds one input and fails the test on any other exception; ``assert_only_malformed`` feeds many;
``assert_strict_framing`` also requires every truncation and every trailing variant to be *rejected* (formats whose
length is fixed by their own fields).
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


def run(parse: Callable[[bytes], Any], data: bytes) -> Any:
    """``parse(data)``'s result, or the ``MalformedInput`` it raised; any other exception fails the test."""
    try:
        return parse(data)
    except MalformedInput as e:
        return e
    except Exception as e:  # pragma: no cover - the failure path of the invariant
        raise AssertionError(f"{type(e).__name__}: {e} on input {bytes(data).hex()}") from e


def assert_only_malformed(parse: Callable[[bytes], Any], inputs: Iterable[bytes]) -> None:
    """Every input parses or raises ``MalformedInput``."""
    for data in inputs:
        run(parse, data)


def assert_strict_framing(parse: Callable[[bytes], Any], data: bytes) -> Any:
    """``data`` parses whole; every truncation and every trailing variant raises ``MalformedInput``. Returns the
    parse of the whole input."""
    whole = run(parse, data)
    assert not isinstance(whole, MalformedInput), f"the whole input did not parse: {whole}"
    damaged = [*truncations(data), *with_trailing(data)]
    accepted = [variant.hex() for variant in damaged if not isinstance(run(parse, variant), MalformedInput)]
    assert accepted == [], f"accepted damaged input: {accepted}"
    return whole
