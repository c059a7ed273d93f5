"""The request/response framework: headers (classic and flexible), framing, registry, dataclass conversion."""

from __future__ import annotations

from dataclasses import dataclass

import construct as c
import pytest

from bruce.wire.errors import MalformedInput, UsageError
from bruce.wire.protocol import api_versions as av
from bruce.wire.protocol import metadata as m
from bruce.wire.protocol import produce as p
from bruce.wire.protocol.base import (
    REGISTRY,
    ApiSpec,
    RequestHeader,
    api_spec,
    api_specs,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    peek_request_header,
    register,
    response_correlation_id,
)

from .streams import assert_strict_framing


def test_request_header_v1_golden() -> None:
    frame = encode_request(av.ApiVersionsRequest(), version=0, correlation_id=0x123, client_id="bruce")
    assert frame == bytes.fromhex(
        "0000000f"  # size 15
        "0012"  # api key 18
        "0000"  # version 0
        "00000123"  # correlation id
        "0005"
        "6272756365"  # client id "bruce" (int16 length)
    )


def test_null_client_id() -> None:
    frame = encode_request(av.ApiVersionsRequest(), version=0, correlation_id=1, client_id=None)
    assert frame[-2:] == b"\xff\xff"
    assert decode_request(frame[4:])[0].client_id is None


def test_request_header_v2_golden() -> None:
    request = av.ApiVersionsRequest(client_software_name="b", client_software_version="1")
    frame = encode_request(request, version=3, correlation_id=0x444, client_id="c")
    assert frame == bytes.fromhex(
        "00000011"  # size 17
        "0012"
        "0003"
        "00000444"  # api key 18, version 3, correlation id
        "0001"
        "63"  # client id stays a classic string in header v2
        "00"  # header tagged fields
        "0262"
        "0231"  # compact strings "b", "1"
        "00"  # body tagged fields
    )
    header, body = decode_request(frame[4:])
    assert (header.api_version, header.client_id, body) == (3, "c", request)


def test_response_header_v1_for_flexible_versions_but_not_api_versions() -> None:
    produce = encode_response(p.ProduceResponse(responses=()), version=9, correlation_id=0x123)
    assert produce[4:9] == bytes.fromhex("0000012300")  # correlation id, header tags
    api = encode_response(av.ApiVersionsResponse(0, ()), version=3, correlation_id=0x123)
    assert api[4:9] == bytes.fromhex("0000012300")  # correlation id, then the body's error code (high byte)
    assert av.decode_api_versions_response(3, api[4:]) == (0x123, av.ApiVersionsResponse(0, ()))


def test_response_correlation_id() -> None:
    assert response_correlation_id(bytes.fromhex("00000444ff")) == 0x444
    with pytest.raises(MalformedInput):
        response_correlation_id(b"\x00\x00\x01")


@pytest.mark.parametrize(
    ("frame", "why"),
    [
        (b"\x00\x00\x00", "shorter than a header"),
        (bytes.fromhex("0063 0000 00000001 ffff"), "unsupported request"),  # API key 99
        (bytes.fromhex("0000 0063 00000001 ffff"), "unsupported request"),  # Produce v99
    ],
)
def test_bad_request_frames(frame: bytes, why: str) -> None:
    with pytest.raises(MalformedInput, match=why):
        decode_request(frame)


def test_any_request_header_can_be_read_and_its_api_looked_up() -> None:
    unknown = bytes.fromhex("0063 0002 00000444 0003 616263 00 ffff")  # API key 99 v2: header, then whatever follows
    assert peek_request_header(unknown) == RequestHeader(99, 2, 0x444, "abc")
    assert api_spec(99) is None
    with pytest.raises(MalformedInput, match="unsupported request"):
        decode_request(unknown)
    known = encode_request(m.metadata_request(["a"], version=12), version=12, correlation_id=5, client_id=None)[4:]
    assert peek_request_header(known) == RequestHeader(3, 12, 5, None)  # the flexible header's tags are not read
    assert api_spec(3) is REGISTRY[3] and api_spec(3).name == "Metadata"
    assert [spec.key for spec in api_specs()] == sorted(REGISTRY)
    with pytest.raises(MalformedInput, match="request header"):
        peek_request_header(bytes.fromhex("0003 000c 0000"))


def test_request_frames_reject_truncation_and_trailing_data() -> None:
    request = m.metadata_request(["a"], version=9)
    frame = encode_request(request, version=9, correlation_id=7)
    assert assert_strict_framing(decode_request, frame[4:])[1] == request


def test_encoding_misuse_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="not a registered request type"):
        encode_request(p.ProduceResponse(responses=()), version=0, correlation_id=1)
    with pytest.raises(UsageError, match="not a registered response type"):
        encode_response(p.ProduceRequest(topic_data=()), version=0, correlation_id=1)
    with pytest.raises(UsageError, match="v14 is not implemented"):
        encode_request(p.ProduceRequest(topic_data=()), version=14, correlation_id=1)
    with pytest.raises(UsageError, match="unknown API key"):
        decode_response(99, 0, b"\x00\x00\x00\x01")
    with pytest.raises(UsageError, match="cannot encode"):
        encode_request(m.MetadataRequest(topics=None), version=0, correlation_id=1)  # v0 has no null topic list


def test_registry_rejects_duplicates_and_mismatched_versions() -> None:
    @dataclass(frozen=True, slots=True)
    class Nothing:
        pass

    def spec(key: int, request_versions: list[int], response_versions: list[int]) -> ApiSpec:
        schema = c.Struct()
        return ApiSpec(
            key=key,
            name=f"api {key}",
            requests=dict.fromkeys(request_versions, schema),
            responses=dict.fromkeys(response_versions, schema),
            request_type=Nothing,
            response_type=Nothing,
        )

    with pytest.raises(UsageError, match="registered twice"):
        register(spec(0, [0], [0]))
    with pytest.raises(UsageError, match="versions differ"):
        register(spec(9999, [0], [1]))
    assert 9999 not in REGISTRY


def test_nested_optional_dataclasses_convert() -> None:
    request = m.MetadataRequest(topics=(m.MetadataRequestTopic("a"),))
    _, body = decode_request(encode_request(request, version=1, correlation_id=1)[4:])
    assert isinstance(body.topics[0], m.MetadataRequestTopic)
    partition = p.PartitionProduceResponse(0, 0, 0, current_leader=p.LeaderIdAndEpoch(1, 2))
    response = p.ProduceResponse(responses=(p.TopicProduceResponse("t", (partition,)),))
    _, decoded = decode_response(0, 10, encode_response(response, version=10, correlation_id=1)[4:])
    assert isinstance(decoded.responses[0].partition_responses[0].current_leader, p.LeaderIdAndEpoch)
