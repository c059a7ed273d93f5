"""Fuzz Fetch response decoding (v0-v12) and the records inside: MalformedInput or a value, nothing else.

The first input byte picks the version; the rest is the response frame (without its size prefix).
Run: ``python fuzz/fuzz_fetch_response.py fuzz/corpus/fetch_response -max_total_time=60``.
"""

from __future__ import annotations

import contextlib
import sys

import atheris

with atheris.instrument_imports(include=["bruce.wire"]):
    from bruce.wire.errors import MalformedInput
    from bruce.wire.protocol import fetch
    from bruce.wire.protocol.base import decode_response
    from bruce.wire.records import decode_records


def test_one_input(data: bytes) -> None:
    if not data:
        return
    version = data[0] % len(fetch.VERSIONS)
    try:
        _, body = decode_response(fetch.KEY, version, data[1:])
    except MalformedInput:
        return
    for topic in body.responses:
        for partition in topic.partitions:
            with contextlib.suppress(MalformedInput):
                decode_records(partition.records or b"")


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
