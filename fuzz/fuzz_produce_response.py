"""Fuzz the Produce response decoder, every version (the first input byte picks the version).

Invariant: for any bytes, ``decode_response(0, version, frame)`` returns (correlation id, body) or raises
MalformedInput — never anything else.
"""

import contextlib
import sys

import atheris

with atheris.instrument_imports(include=["bruce.wire"]):
    from bruce.wire.errors import MalformedInput
    from bruce.wire.protocol import produce  # noqa: F401 - registers the API
    from bruce.wire.protocol.base import decode_response

VERSIONS = 12


def test_one_input(data: bytes) -> None:
    if not data:
        return
    with contextlib.suppress(MalformedInput):
        decode_response(0, data[0] % VERSIONS, data[1:])


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
