"""SaslHandshake and SaslAuthenticate golden vectors, written from the field lists of Kafka's SaslHandshake*.json and
SaslAuthenticate*.json (every version also round trips in tests/wire/test_protocol_round_trips)."""

from __future__ import annotations

from bruce.wire.protocol import sasl_authenticate, sasl_handshake
from bruce.wire.protocol.base import decode_response, encode_request

SCRAM_SHA_512 = "000d534352414d2d5348412d353132"  # string "SCRAM-SHA-512"
PLAIN = "0005504c41494e"  # string "PLAIN"


def test_sasl_handshake_v1_request_golden() -> None:
    frame = encode_request(sasl_handshake.SaslHandshakeRequest("PLAIN"), version=1, correlation_id=2, client_id="c")
    expected = bytes.fromhex(
        "0011" "0001" "00000002" "0001" "63"  # header v1: SaslHandshake v1, correlation id 2, client id "c"
        + PLAIN  # mechanism
    )  # fmt: skip
    assert frame == len(expected).to_bytes(4, "big") + expected


def test_sasl_handshake_response_golden() -> None:
    frame = bytes.fromhex(
        "00000002"  # response header v0: correlation id 2
        "0021"  # error 33 UNSUPPORTED_SASL_MECHANISM
        "00000002" + SCRAM_SHA_512 + PLAIN  # the broker's enabled mechanisms
    )  # fmt: skip
    assert decode_response(sasl_handshake.KEY, 1, frame) == (
        2,
        sasl_handshake.SaslHandshakeResponse(33, ("SCRAM-SHA-512", "PLAIN")),
    )


def test_sasl_authenticate_v1_request_golden() -> None:
    request = sasl_authenticate.SaslAuthenticateRequest(b"n,,n=u,r=x")
    frame = encode_request(request, version=1, correlation_id=3, client_id="c")
    expected = bytes.fromhex(
        "0024" "0001" "00000003" "0001" "63"  # header v1: SaslAuthenticate v1
        "0000000a" "6e2c2c6e3d752c723d78"  # auth bytes (int32 length)
    )  # fmt: skip
    assert frame[4:] == expected


def test_sasl_authenticate_v2_request_golden() -> None:
    request = sasl_authenticate.SaslAuthenticateRequest(b"n,,n=u,r=x")
    frame = encode_request(request, version=2, correlation_id=3, client_id="c")
    expected = bytes.fromhex(
        "0024" "0002" "00000003" "0001" "63" "00"  # header v2: + no tagged fields
        "0b" "6e2c2c6e3d752c723d78"  # compact bytes: length + 1
        "00"  # request tags
    )  # fmt: skip
    assert frame[4:] == expected


def test_sasl_authenticate_v1_response_golden() -> None:
    frame = bytes.fromhex(
        "00000003"  # response header v0
        "003a"  # error 58 SASL_AUTHENTICATION_FAILED
        "0003" "626164"  # error message "bad"
        "00000000"  # auth bytes: empty
        "0000000000000444"  # session lifetime ms (v1+)
    )  # fmt: skip
    assert decode_response(sasl_authenticate.KEY, 1, frame) == (
        3,
        sasl_authenticate.SaslAuthenticateResponse(58, "bad", b"", session_lifetime_ms=0x444),
    )


def test_sasl_authenticate_v2_response_golden() -> None:
    frame = bytes.fromhex(
        "00000003" "00"  # response header v1: + no tags
        "0000"  # no error
        "00"  # error message: compact null
        "03" "7631"  # auth bytes "v1"
        "0000000000000000"  # session lifetime 0: no limit
        "00"  # tags
    )  # fmt: skip
    assert decode_response(sasl_authenticate.KEY, 2, frame) == (
        3,
        sasl_authenticate.SaslAuthenticateResponse(0, None, b"v1", session_lifetime_ms=0),
    )


def test_sasl_authenticate_request_repr_hides_the_token() -> None:
    request = sasl_authenticate.SaslAuthenticateRequest(b"\0user\0hunter2")
    assert "hunter2" not in repr(request) and "hunter2" not in str(request)
