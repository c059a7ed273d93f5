"""Checking a golden vector: a hand-written frame against the encoder, the decoder and every truncation."""

from __future__ import annotations

from wire.streams import assert_strict_framing

from bruce.wire.protocol.base import decode_request, decode_response, encode_request, encode_response


def request_frame(body: object, version: int, expected_hex: str) -> bytes:
    """``body`` encoded at ``version`` (correlation id 7, client id "c"), checked against the expected bytes, which
    decode back to it and reject every truncation and trailing data."""
    frame = encode_request(body, version=version, correlation_id=7, client_id="c")
    expected = bytes.fromhex(expected_hex)
    assert frame == len(expected).to_bytes(4, "big") + expected
    assert assert_strict_framing(decode_request, expected)[1] == body
    return expected


def response_frame(api_key: int, version: int, body: object, frame_hex: str) -> None:
    """``frame_hex`` decodes to ``body`` (correlation id 9), encodes back byte for byte, and rejects damage."""
    frame = bytes.fromhex(frame_hex)
    assert assert_strict_framing(lambda f: decode_response(api_key, version, f), frame) == (9, body)
    assert encode_response(body, version=version, correlation_id=9)[4:] == frame
