"""Produce v0-v11: golden frames and the v10 tagged fields (round trips of every version: test_protocol_round_trips)."""

from __future__ import annotations

import pytest

from bruce.wire.protocol import produce as p
from bruce.wire.protocol.base import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_header_version,
    response_header_version,
    spec_for,
)

# ---------------------------------------------------------------- golden frames

V0_REQUEST_GOLDEN = bytes.fromhex(
    "0000002a"  # frame size 42
    "0000"  # api key 0 (Produce)
    "0000"  # api version 0
    "00000123"  # correlation id 0x123
    "0005"
    "6272756365"  # client id "bruce"
    "ffff"  # acks -1
    "00000444"  # timeout 0x444 ms
    "00000001"  # 1 topic
    "0001"
    "74"  # topic "t"
    "00000001"  # 1 partition
    "00000007"  # partition 7
    "00000002"
    "abcd"  # records: 2 bytes
)
V0_RESPONSE_GOLDEN = bytes.fromhex(
    "0000001d"  # frame size 29
    "00000123"  # correlation id 0x123
    "00000001"  # 1 topic
    "0001"
    "74"  # "t"
    "00000001"  # 1 partition
    "00000007"  # partition 7
    "0006"  # error 6: NOT_LEADER_OR_FOLLOWER
    "0000000000000444"  # base offset 0x444
)
V10_RESPONSE_GOLDEN = bytes.fromhex(
    "0000004d"  # frame size 77
    "00000123"  # correlation id 0x123
    "00"  # response header v1: no tagged fields
    "02"  # 1 topic (compact: n + 1)
    "02"
    "74"  # "t" (compact string)
    "02"  # 1 partition
    "00000007"  # partition 7
    "0000"  # no error
    "0000000000000444"  # base offset 0x444
    "ffffffffffffffff"  # log append time -1
    "0000000000000111"  # log start offset 0x111
    "01"  # 0 record errors
    "00"  # error message: null
    "01"  # 1 tagged field
    "00"
    "09"
    "00000005"
    "0000000b"
    "00"  # tag 0 (current leader), 9 bytes: leader 5, epoch 11, no tags
    "00"  # topic: no tagged fields
    "00000000"  # throttle time 0
    "01"  # 1 tagged field
    "00"
    "10"  # tag 0 (node endpoints), 16 bytes:
    "02"
    "00000005"
    "05"
    "686f7374"
    "00002384"
    "00"
    "00"  # [node 5, "host", 9092, rack null, no tags]
)

REQUEST = p.ProduceRequest(
    topic_data=(p.TopicProduceData("t", (p.PartitionProduceData(7, b"\xab\xcd"),)),), acks=-1, timeout_ms=0x444
)


def test_v0_request_golden() -> None:
    assert encode_request(REQUEST, version=0, correlation_id=0x123) == V0_REQUEST_GOLDEN
    header, body = decode_request(V0_REQUEST_GOLDEN[4:])
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (0, 0, 0x123, "bruce")
    assert body == REQUEST


def test_v0_response_golden() -> None:
    response = p.ProduceResponse(responses=(p.TopicProduceResponse("t", (p.PartitionProduceResponse(7, 6, 0x444),)),))
    assert encode_response(response, version=0, correlation_id=0x123) == V0_RESPONSE_GOLDEN
    assert decode_response(0, 0, V0_RESPONSE_GOLDEN[4:]) == (0x123, response)


V10_RESPONSE = p.ProduceResponse(
    responses=(
        p.TopicProduceResponse(
            "t",
            (
                p.PartitionProduceResponse(
                    7, 0, 0x444, log_start_offset=0x111, current_leader=p.LeaderIdAndEpoch(5, 11)
                ),
            ),
        ),
    ),
    node_endpoints=(p.NodeEndpoint(5, "host", 9092),),
)


@pytest.mark.parametrize("version", [10, 11])
def test_v10_response_golden_with_tagged_fields(version: int) -> None:
    assert encode_response(V10_RESPONSE, version=version, correlation_id=0x123) == V10_RESPONSE_GOLDEN
    assert decode_response(0, version, V10_RESPONSE_GOLDEN[4:]) == (0x123, V10_RESPONSE)


def test_v9_has_no_decoded_tagged_fields() -> None:
    frame = encode_response(V10_RESPONSE, version=9, correlation_id=1)
    _, body = decode_response(0, 9, frame[4:])
    assert body.node_endpoints is None and body.responses[0].partition_responses[0].current_leader is None


def test_unknown_tags_are_kept_next_to_decoded_ones() -> None:
    partition = p.PartitionProduceResponse(1, 0, 2, current_leader=p.LeaderIdAndEpoch(3, 4), tags={5: b"\x99"})
    response = p.ProduceResponse(
        responses=(p.TopicProduceResponse("t", (partition,)),), tags={1: b"raw"}, node_endpoints=()
    )
    _, body = decode_response(0, 10, encode_response(response, version=10, correlation_id=1)[4:])
    assert body == response


def test_registration() -> None:
    spec = spec_for(0)
    assert spec.name == "Produce" and spec.versions == range(14) and spec.first_flexible == 9
    assert [request_header_version(0, v) for v in (0, 8, 9, 11)] == [1, 1, 2, 2]
    assert [response_header_version(0, v) for v in (0, 8, 9, 11)] == [0, 0, 1, 1]
