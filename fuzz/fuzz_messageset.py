"""Fuzz the message-set decoder (magic 0/1, every codec).

Invariant: for any bytes, ``decode_message_set`` returns records or raises MalformedInput — never anything else —
and never decompresses more than its bound.
"""

import contextlib
import sys

import atheris

with atheris.instrument_imports(include=["bruce.wire"]):
    from bruce.wire.errors import MalformedInput
    from bruce.wire.messageset import decode_message_set


def test_one_input(data: bytes) -> None:
    with contextlib.suppress(MalformedInput):
        decode_message_set(data, max_decompressed_size=1 << 20)


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
