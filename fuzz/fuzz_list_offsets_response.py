"""Fuzz ListOffsets response decoding (v0-v9): MalformedInput or a value, nothing else; a decoded value re-encodes
to the same frame.

The first input byte picks the version; the rest is the response frame (without its size prefix).
Run: ``python fuzz/fuzz_list_offsets_response.py fuzz/corpus/list_offsets_response -max_total_time=60``.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["bruce.wire"]):
    from bruce.wire.errors import MalformedInput
    from bruce.wire.protocol import list_offsets
    from bruce.wire.protocol.base import decode_response, encode_response


def test_one_input(data: bytes) -> None:
    if not data:
        return
    version = data[0] % len(list_offsets.VERSIONS)
    try:
        correlation_id, body = decode_response(list_offsets.KEY, version, data[1:])
    except MalformedInput:
        return
    if not list_offsets.SPEC.is_flexible(version):  # flexible frames may encode a varint non-canonically
        assert encode_response(body, version=version, correlation_id=correlation_id)[4:] == data[1:]


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
