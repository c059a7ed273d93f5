"""Metadata v0-v12: golden frames, the topic-list semantics. Every version round trips in test_protocol_round_trips."""

from __future__ import annotations

import pytest

from bruce.wire.errors import UsageError
from bruce.wire.protocol import metadata as m
from bruce.wire.protocol.base import decode_request, decode_response, encode_request, encode_response, spec_for

V0_REQUEST_ALL_TOPICS = bytes.fromhex(
    "00000013"  # frame size 19
    "0003"  # api key 3 (Metadata)
    "0000"  # version 0
    "00000123"  # correlation id 0x123
    "0005"
    "6272756365"  # client id "bruce"
    "00000000"  # 0 topics = all topics (v0)
)
V1_REQUEST_ALL_TOPICS = bytes.fromhex("00000013000300010000012300056272756365ffffffff")  # null
V0_RESPONSE_GOLDEN = bytes.fromhex(
    "0000003e"  # frame size 62
    "00000123"  # correlation id 0x123
    "00000001"  # 1 broker
    "00000444"
    "0001"
    "68"
    "00002384"  # node 0x444, host "h", port 9092
    "00000001"  # 1 topic
    "0000"  # no error
    "0001"
    "74"  # "t"
    "00000001"  # 1 partition
    "0009"  # partition error 9 (REPLICA_NOT_AVAILABLE: still usable, Bruce keeps it)
    "00000002"  # partition 2
    "00000444"  # leader 0x444
    "00000002"
    "00000444"
    "00000555"  # replicas [0x444, 0x555]
    "00000001"
    "00000444"  # isr [0x444]
)
V0_RESPONSE = m.MetadataResponse(
    brokers=(m.MetadataResponseBroker(0x444, "h", 9092),),
    topics=(m.MetadataResponseTopic(0, "t", (m.MetadataResponsePartition(9, 2, 0x444, (0x444, 0x555), (0x444,)),)),),
)


def test_v0_request_for_all_topics_is_an_empty_list() -> None:
    request = m.metadata_request(None, version=0)
    assert request.topics == ()
    assert encode_request(request, version=0, correlation_id=0x123) == V0_REQUEST_ALL_TOPICS


def test_v1_request_for_all_topics_is_null() -> None:
    request = m.metadata_request(None, version=1)
    assert request.topics is None
    assert encode_request(request, version=1, correlation_id=0x123) == V1_REQUEST_ALL_TOPICS
    assert decode_request(V1_REQUEST_ALL_TOPICS[4:])[1] == request


def test_no_topics_cannot_be_asked_in_v0() -> None:
    with pytest.raises(UsageError):
        m.metadata_request([], version=0)
    assert m.metadata_request([], version=1).topics == ()


def test_named_topics_and_auto_creation() -> None:
    request = m.metadata_request(["a", "b"], version=4, allow_auto_topic_creation=False)
    assert [t.name for t in request.topics] == ["a", "b"] and not request.allow_auto_topic_creation
    frame = encode_request(request, version=4, correlation_id=1)
    assert frame.endswith(bytes.fromhex("0000000200016100016200"))


def test_v0_response_golden() -> None:
    assert encode_response(V0_RESPONSE, version=0, correlation_id=0x123) == V0_RESPONSE_GOLDEN
    assert decode_response(3, 0, V0_RESPONSE_GOLDEN[4:]) == (0x123, V0_RESPONSE)


def test_v12_response_golden() -> None:
    response = m.MetadataResponse(
        brokers=(m.MetadataResponseBroker(1, "h", 9092, "r"),),
        topics=(m.MetadataResponseTopic(0, None, (), topic_id=bytes(range(16)), is_internal=True),),
        throttle_time_ms=0x123,
        cluster_id="c",
        controller_id=1,
    )
    golden = bytes.fromhex(
        "00000123"  # throttle 0x123
        "02"
        "00000001"
        "0268"
        "00002384"
        "0272"
        "00"  # 1 broker: node 1, "h", 9092, rack "r", no tags
        "0263"  # cluster id "c"
        "00000001"  # controller 1
        "02"  # 1 topic
        "0000"  # no error
        "00"  # name: null (v12)
        "000102030405060708090a0b0c0d0e0f"  # topic id
        "01"  # internal
        "01"  # 0 partitions
        "80000000"  # topic authorized operations: not requested
        "00"  # no tags
        "00"  # no tags
    )
    frame = encode_response(response, version=12, correlation_id=0x444)
    assert frame[4:] == bytes.fromhex("0000044400") + golden
    assert decode_response(3, 12, frame[4:]) == (0x444, response)


def test_registration() -> None:
    spec = spec_for(3)
    assert spec.name == "Metadata" and spec.versions == range(14) and spec.first_flexible == 9
