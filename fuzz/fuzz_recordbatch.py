"""Fuzz RecordBatch v2 decoding: the hand-written decoder and the schema agree on every input (same value or both
MalformedInput), and ``decode_records`` either decodes or raises MalformedInput — nothing else.

The input is tried as is and with its length and CRC-32C fixed up, so mutations reach the record parser.
Run: ``python fuzz/fuzz_recordbatch.py fuzz/corpus/recordbatch -max_total_time=60``.
"""

from __future__ import annotations

import struct
import sys

import atheris

with atheris.instrument_imports(include=["bruce.wire"]):
    from bruce.wire.crc import crc32c
    from bruce.wire.errors import MalformedInput
    from bruce.wire.recordbatch import decode_record_batch, decode_record_batch_with_schema
    from bruce.wire.records import decode_records


def _outcome(parse, data: bytes):
    try:
        return parse(data)
    except MalformedInput:
        return MalformedInput


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
        fast = _outcome(decode_record_batch, candidate)
        schema = _outcome(decode_record_batch_with_schema, candidate)
        assert fast == schema, (fast, schema)
        _outcome(decode_records, candidate)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
