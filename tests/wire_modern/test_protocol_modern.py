"""Fetch, ListOffsets, CreateTopics golden vectors. Every version round trips: tests/wire/test_protocol_round_trips."""

from __future__ import annotations

import pytest

from bruce.wire.errors import MalformedInput
from bruce.wire.protocol import create_topics, fetch, list_offsets
from bruce.wire.protocol.base import decode_response, encode_request, encode_response
from bruce.wire.protocol.produce import LeaderIdAndEpoch

# ---------------------------------------------------------------- golden vectors

FETCH_REQUEST_V4 = fetch.FetchRequest(
    topics=(
        fetch.FetchTopic("t", (fetch.FetchPartition(partition=3, fetch_offset=0x123, partition_max_bytes=0x444),)),
    ),
    max_wait_ms=0x55,
    min_bytes=0x66,
    max_bytes=0x777,
    isolation_level=1,
)


def test_fetch_v4_request_golden() -> None:
    frame = encode_request(FETCH_REQUEST_V4, version=4, correlation_id=7, client_id="c")
    expected = bytes.fromhex(
        "0001" "0004" "00000007" "0001" "63"  # header: Fetch v4, correlation id 7, client id "c"
        "ffffffff"  # replica id -1
        "00000055"  # max wait
        "00000066"  # min bytes
        "00000777"  # max bytes (v3+)
        "01"  # isolation level (v4+): read committed
        "00000001" "0001" "74"  # 1 topic: "t"
        "00000001"  # 1 partition
        "00000003" "0000000000000123" "00000444"  # partition 3, fetch offset, partition max bytes
    )  # fmt: skip
    assert frame == len(expected).to_bytes(4, "big") + expected


def test_fetch_v12_request_golden() -> None:
    frame = encode_request(FETCH_REQUEST_V4, version=12, correlation_id=7, client_id="c")
    expected = bytes.fromhex(
        "0001" "000c" "00000007" "0001" "63" "00"  # header v2: + no tagged fields
        "ffffffff" "00000055" "00000066" "00000777" "01"
        "00000000" "ffffffff"  # session id 0, session epoch -1 (v7+)
        "02" "02" "74"  # compact array of 1 topic, compact string "t"
        "02"  # 1 partition
        "00000003" "ffffffff" "0000000000000123"  # partition, current leader epoch (v9+), fetch offset
        "ffffffff" "ffffffffffffffff" "00000444"  # last fetched epoch (v12), log start offset (v5+), max bytes
        "00"  # partition tags
        "00"  # topic tags
        "01"  # forgotten topics: empty compact array (v7+)
        "01"  # rack id "" (v11+)
        "00"  # request tags
    )  # fmt: skip
    assert frame[4:] == expected


def test_fetch_v12_response_golden() -> None:
    frame = bytes.fromhex(
        "00000009" "00"  # response header v1: correlation id 9, no tags
        "00000010" "0000" "00000abc"  # throttle 0x10, error 0, session id 0xabc
        "02" "02" "74"  # 1 topic "t"
        "02"  # 1 partition
        "00000001" "0000"  # partition 1, no error
        "0000000000000123" "0000000000000122" "0000000000000005"  # high watermark, last stable, log start
        "02" "0000000000000444" "0000000000000100" "00"  # 1 aborted transaction: producer 0x444, first offset 0x100
        "ffffffff"  # preferred read replica -1
        "04" "abcdef"  # records: 3 raw bytes
        "02"  # partition tags: 2 fields
        "01" "09" "00000444" "00000007" "00"  # tag 1 (current leader), 9 bytes: leader 0x444, epoch 7, no tags
        "09" "02" "0007"  # tag 9 (unknown here), 2 bytes kept raw
        "00" "00"  # topic tags, response tags
    )  # fmt: skip
    correlation_id, body = decode_response(fetch.KEY, 12, frame)
    assert correlation_id == 9
    assert (body.throttle_time_ms, body.error_code, body.session_id) == (0x10, 0, 0xABC)
    (topic,) = body.responses
    (p,) = topic.partitions
    assert (topic.topic, p.partition_index, p.high_watermark, p.last_stable_offset, p.log_start_offset) == (
        "t",
        1,
        0x123,
        0x122,
        5,
    )
    assert p.aborted_transactions == (fetch.AbortedTransaction(producer_id=0x444, first_offset=0x100),)
    assert (p.preferred_read_replica, p.records, p.tags) == (-1, b"\xab\xcd\xef", {9: b"\x00\x07"})
    assert (p.current_leader, p.diverging_epoch, p.snapshot_id) == (LeaderIdAndEpoch(0x444, 7), None, None)
    assert encode_response(body, version=12, correlation_id=9)[4:] == frame


def test_list_offsets_v0_response_golden_old_style_offsets() -> None:
    frame = bytes.fromhex(
        "00000003"  # correlation id
        "00000001" "0001" "61"  # 1 topic "a"
        "00000001" "00000000" "0000"  # 1 partition: 0, no error
        "00000002" "0000000000000444" "0000000000000123"  # old-style offsets [0x444, 0x123]
    )  # fmt: skip
    _, body = decode_response(list_offsets.KEY, 0, frame)
    (p,) = body.topics[0].partitions
    assert p.old_style_offsets == (0x444, 0x123) and p.first_offset == 0x444 and p.offset == -1


def test_list_offsets_v6_request_golden() -> None:
    request = list_offsets.ListOffsetsRequest(
        topics=(list_offsets.ListOffsetsTopic("a", (list_offsets.ListOffsetsPartition(2, list_offsets.EARLIEST),)),),
        isolation_level=1,
    )
    frame = encode_request(request, version=6, correlation_id=1, client_id=None)
    expected = bytes.fromhex(
        "0002" "0006" "00000001" "ffff" "00"  # header v2, null client id
        "ffffffff" "01"  # replica id, isolation level (v2+)
        "02" "02" "61"  # 1 topic "a"
        "02" "00000002" "ffffffff" "fffffffffffffffe" "00"  # partition 2, leader epoch (v4+), timestamp -2
        "00" "00"
    )  # fmt: skip
    assert frame[4:] == expected


def test_create_topics_v5_request_golden() -> None:
    request = create_topics.CreateTopicsRequest(
        topics=(
            create_topics.CreatableTopic(
                "t", 3, 1, configs=(create_topics.CreatableTopicConfig("retention.ms", None),)
            ),
        ),
        timeout_ms=0x444,
        validate_only=True,
    )
    frame = encode_request(request, version=5, correlation_id=2, client_id="c")
    expected = bytes.fromhex(
        "0013" "0005" "00000002" "0001" "63" "00"  # CreateTopics v5, flexible header
        "02" "02" "74" "00000003" "0001"  # 1 topic "t", 3 partitions, replication factor 1
        "01"  # no assignments
        "02" "0d" + b"retention.ms".hex() + "00" "00"  # 1 config "retention.ms" = null
        + "00"  # topic tags
        "00000444" "01" "00"  # timeout, validate only, tags
    )  # fmt: skip
    assert frame[4:] == expected


def test_null_records_and_negative_array_counts() -> None:
    frame = bytes.fromhex(
        "00000001" "00000001" "0001" "74"  # correlation id, 1 topic "t"
        "00000001" "00000000" "0000" "0000000000000000"  # 1 partition: 0, no error, high watermark 0
        "ffffffff"  # v0: null records
    )  # fmt: skip
    _, body = decode_response(fetch.KEY, 0, frame)
    assert body.responses[0].partitions[0].records is None
    bad = bytes.fromhex("0000000100000000fffffffe")  # topics count -2
    with pytest.raises(MalformedInput):
        decode_response(fetch.KEY, 1, bad)
