"""Produce v0-v11: golden frames, every version round trips, tagged fields, and damaged responses."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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

from .streams import assert_strict_framing

VERSIONS = range(12)

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
    assert spec.name == "Produce" and spec.versions == range(12) and spec.first_flexible == 9
    assert [request_header_version(0, v) for v in (0, 8, 9, 11)] == [1, 1, 2, 2]
    assert [response_header_version(0, v) for v in (0, 8, 9, 11)] == [0, 0, 1, 1]


# ---------------------------------------------------------------- every version round trips

_int16 = st.integers(-(2**15), 2**15 - 1)
_int32 = st.integers(-(2**31), 2**31 - 1)
_int64 = st.integers(-(2**63), 2**63 - 1)
_name = st.text(max_size=12)


def _tags(version: int, *, skip: int | None = None):
    if version < 9:
        return st.none()
    keys = st.integers(0, 40).filter(lambda t: t != skip)
    return st.one_of(st.none(), st.dictionaries(keys, st.binary(max_size=6), min_size=1, max_size=3))


def produce_requests(version: int):
    partition = st.builds(
        p.PartitionProduceData, index=_int32, records=st.one_of(st.none(), st.binary(max_size=30)), tags=_tags(version)
    )
    topic = st.builds(
        p.TopicProduceData, name=_name, partition_data=st.lists(partition, max_size=3).map(tuple), tags=_tags(version)
    )
    return st.builds(
        p.ProduceRequest,
        topic_data=st.lists(topic, max_size=3).map(tuple),
        acks=_int16,
        timeout_ms=_int32,
        transactional_id=st.one_of(st.none(), _name) if version >= 3 else st.none(),
        tags=_tags(version),
    )


def produce_responses(version: int):
    v = version
    record_error = st.builds(
        p.BatchIndexAndErrorMessage,
        batch_index=_int32,
        batch_index_error_message=st.one_of(st.none(), _name),
        tags=_tags(v),
    )
    partition = st.builds(
        p.PartitionProduceResponse,
        index=_int32,
        error_code=_int16,
        base_offset=_int64,
        log_append_time_ms=_int64 if v >= 2 else st.just(-1),
        log_start_offset=_int64 if v >= 5 else st.just(-1),
        record_errors=st.lists(record_error, max_size=2).map(tuple) if v >= 8 else st.just(()),
        error_message=st.one_of(st.none(), _name) if v >= 8 else st.none(),
        current_leader=st.one_of(st.none(), st.builds(p.LeaderIdAndEpoch, _int32, _int32)) if v >= 10 else st.none(),
        tags=_tags(v, skip=0 if v >= 10 else None),
    )
    topic = st.builds(
        p.TopicProduceResponse,
        name=_name,
        partition_responses=st.lists(partition, max_size=3).map(tuple),
        tags=_tags(v),
    )
    endpoint = st.builds(p.NodeEndpoint, _int32, _name, _int32, st.one_of(st.none(), _name))
    return st.builds(
        p.ProduceResponse,
        responses=st.lists(topic, max_size=3).map(tuple),
        throttle_time_ms=_int32 if v >= 1 else st.just(0),
        node_endpoints=st.one_of(st.none(), st.lists(endpoint, max_size=2).map(tuple)) if v >= 10 else st.none(),
        tags=_tags(v, skip=0 if v >= 10 else None),
    )


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_request_round_trip(version: int, data: st.DataObject) -> None:
    request = data.draw(produce_requests(version))
    correlation_id = data.draw(_int32)
    frame = encode_request(request, version=version, correlation_id=correlation_id)
    header, body = decode_request(frame[4:])
    assert (header.api_version, header.correlation_id, body) == (version, correlation_id, request)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_response_round_trip_and_framing(version: int, data: st.DataObject) -> None:
    response = data.draw(produce_responses(version))
    frame = encode_response(response, version=version, correlation_id=0x123)
    assert decode_response(0, version, frame[4:]) == (0x123, response)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_and_trailing_byte_is_malformed(version: int) -> None:
    frame = encode_response(V10_RESPONSE, version=version, correlation_id=0x123)
    assert assert_strict_framing(lambda f: decode_response(0, version, f), frame[4:])[0] == 0x123
