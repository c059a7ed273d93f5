"""Fuzz the columnar decoder (bruce.wire.columns): its C decoder (``_columns.c``) and its Python twin agree on every
input — the same columns byte for byte, or MalformedInput with the same reason — and neither raises anything else.

The input is tried as is and with its first entry's length and CRC-32C fixed up as a record batch's, so mutations
reach the record walker; decompression is bounded at 1 MiB. Without the extension (BRUCE_NO_EXTENSIONS=1) only the
Python decoder runs, which must then raise nothing but MalformedInput.
Run: ``python fuzz/fuzz_columns.py fuzz/corpus/columns -max_total_time=60``.
"""

from __future__ import annotations

import struct
import sys

import atheris

with atheris.instrument_imports(include=["bruce.wire"]):
    from bruce.wire import speedups
    from bruce.wire.columns import decode_columns, decode_columns_python
    from bruce.wire.crc import crc32c
    from bruce.wire.errors import MalformedInput

BOUND = 1 << 20


def _outcome(decode, data: bytes):
    try:
        return decode(data, max_decompressed_size=BOUND)
    except MalformedInput as e:
        return ("malformed", e.reason)


def _fixed(data: bytes) -> bytes:
    if len(data) < 21:
        return data
    out = bytearray(data)
    struct.pack_into(">i", out, 8, len(data) - 12)
    out[16] = 2
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def test_one_input(data: bytes) -> None:
    for candidate in (data, _fixed(data)):
        python = _outcome(decode_columns_python, candidate)
        if speedups.record_columns is not None:
            c = _outcome(decode_columns, candidate)
            assert c == python, (c, python)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
