"""Every registered API at every version: requests and responses round trip through their frames, and a request or
response frame truncated at any byte or followed by trailing bytes is malformed. Values come from each version's own
schema (``strategies.body_values``), so a field a version has and its dataclass lacks (or the reverse) fails here; the
golden vectors in the per-API test files pin the bytes, tests/wire/test_interop_kafka_python.py every field."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bruce.wire.protocol.base import REGISTRY, decode_request, decode_response, encode_request, encode_response

from .strategies import body_values
from .streams import assert_strict_framing

CASES = [(spec, v) for _, spec in sorted(REGISTRY.items()) for v in spec.versions]
IDS = [f"{spec.name}-v{v}" for spec, v in CASES]
FAST = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(("spec", "version"), CASES, ids=IDS)
@FAST
@given(data=st.data())
def test_request_round_trip(spec, version: int, data: st.DataObject) -> None:
    body = data.draw(body_values(spec, version, request=True))
    correlation_id = data.draw(st.integers(-(2**31), 2**31 - 1))
    frame = encode_request(body, version=version, correlation_id=correlation_id, client_id="cid")
    header, back = decode_request(frame[4:])
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
        spec.key,
        version,
        correlation_id,
        "cid",
    )
    assert back == body


@pytest.mark.parametrize(("spec", "version"), CASES, ids=IDS)
@FAST
@given(data=st.data())
def test_response_round_trip(spec, version: int, data: st.DataObject) -> None:
    body = data.draw(body_values(spec, version, request=False))
    frame = encode_response(body, version=version, correlation_id=0x444)
    assert int.from_bytes(frame[:4], "big", signed=True) == len(frame) - 4
    assert decode_response(spec.key, version, frame[4:]) == (0x444, body)


@pytest.mark.parametrize(("spec", "version"), CASES, ids=IDS)
@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_damaged_frames_are_malformed(spec, version: int, data: st.DataObject) -> None:
    body = data.draw(body_values(spec, version, request=False, full=True))
    frame = encode_response(body, version=version, correlation_id=0x123)[4:]
    assert assert_strict_framing(lambda f: decode_response(spec.key, version, f), frame) == (0x123, body)
    body = data.draw(body_values(spec, version, request=True, full=True))
    frame = encode_request(body, version=version, correlation_id=0x444, client_id="c")[4:]
    assert assert_strict_framing(decode_request, frame)[1] == body
