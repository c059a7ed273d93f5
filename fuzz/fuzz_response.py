"""Fuzz the Kafka protocol decoders: every registered API's responses at every version, the records inside Fetch
responses, and request frames.

Input: byte 0 is the API key and byte 1 the version of a response frame (without its size prefix) that follows; an
input naming no registered API or version is skipped. Byte 0 = 0xff instead marks a request frame (without its size
prefix), whose own header names its API and version.

Invariants:
- ``decode_response`` / ``decode_request`` return a value or raise MalformedInput, never anything else;
- a decoded value encodes again and decodes to the same value;
- the records of a decoded Fetch response decode or raise MalformedInput.

Run: ``python fuzz/fuzz_response.py fuzz/corpus/response -max_total_time=60``; seeds: ``fuzz/make_seeds.py``.
"""

from __future__ import annotations

import contextlib
import sys

import atheris

with atheris.instrument_imports(include=["bruce.wire"]):
    from bruce.wire.errors import MalformedInput
    from bruce.wire.protocol import fetch
    from bruce.wire.protocol.base import REGISTRY, decode_request, decode_response, encode_request, encode_response
    from bruce.wire.records import decode_records

REQUEST_MARKER = 0xFF


def _request(frame: bytes) -> None:
    try:
        header, body = decode_request(frame)
    except MalformedInput:
        return
    again = encode_request(
        body, version=header.api_version, correlation_id=header.correlation_id, client_id=header.client_id
    )
    back, body_back = decode_request(again[4:])
    if body_back != body or (back.api_key, back.correlation_id, back.client_id) != (
        header.api_key,
        header.correlation_id,
        header.client_id,
    ):
        raise AssertionError(f"request {header} does not survive a round trip: {body!r} != {body_back!r}")


def _response(api_key: int, version: int, frame: bytes) -> None:
    try:
        correlation_id, body = decode_response(api_key, version, frame)
    except MalformedInput:
        return
    again = encode_response(body, version=version, correlation_id=correlation_id)[4:]
    if decode_response(api_key, version, again) != (correlation_id, body):
        raise AssertionError(f"API {api_key} v{version} response does not survive a round trip: {body!r}")
    if api_key == fetch.KEY:
        for topic in body.responses:
            for partition in topic.partitions:
                with contextlib.suppress(MalformedInput):
                    decode_records(partition.records or b"")


def test_one_input(data: bytes) -> None:
    if data[:1] == bytes([REQUEST_MARKER]):
        _request(data[1:])
        return
    if len(data) < 2:
        return
    spec = REGISTRY.get(data[0])
    if spec is not None and data[1] in spec.responses:
        _response(spec.key, data[1], data[2:])


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
