"""AddPartitionsToTxn and EndTxn: golden vectors (classic v0 and flexible v3) and interop with kafka-python's codecs
(generated from Kafka's own JSON specs) at every version we speak. Every version round trips in
tests/wire/test_protocol_round_trips."""

from __future__ import annotations

import pytest
from kafka.protocol.producer.transaction import AddPartitionsToTxnRequest as KAddRequest
from kafka.protocol.producer.transaction import AddPartitionsToTxnResponse as KAddResponse
from kafka.protocol.producer.transaction import EndTxnRequest as KEndRequest
from kafka.protocol.producer.transaction import EndTxnResponse as KEndResponse
from wire.streams import assert_strict_framing

from bruce.wire.protocol import add_partitions_to_txn as aptt
from bruce.wire.protocol import end_txn
from bruce.wire.protocol.base import decode_request, decode_response, encode_request, encode_response

ADD = aptt.AddPartitionsToTxnRequest("tx", 0x123, 5, (aptt.AddPartitionsToTxnTopic("t", (0, 2)),))
END = end_txn.EndTxnRequest("tx", 0x123, 5, True)


def test_add_partitions_to_txn_requests_golden() -> None:
    v0 = encode_request(ADD, version=0, correlation_id=7, client_id="c")
    assert v0[4:] == bytes.fromhex(
        "0018" "0000" "00000007" "0001" "63"  # header: AddPartitionsToTxn v0, correlation id 7, client id "c"
        "0002" "7478"  # transactional id "tx"
        "0000000000000123" "0005"  # producer id, epoch
        "00000001" "0001" "74" "00000002" "00000000" "00000002"  # topics: [t: [0, 2]]
    )  # fmt: skip
    v3 = encode_request(ADD, version=3, correlation_id=7, client_id="c")
    assert v3[4:] == bytes.fromhex(
        "0018" "0003" "00000007" "0001" "63" "00"  # flexible header
        "03" "7478" "0000000000000123" "0005"
        "02" "02" "74" "03" "00000000" "00000002" "00"  # compact topics: [t: [0, 2]], the topic's tags
        "00"  # tags
    )  # fmt: skip
    for frame in (v0, v3):
        assert decode_request(frame[4:])[1] == ADD
        assert_strict_framing(decode_request, frame[4:])


def test_add_partitions_to_txn_v3_response_golden() -> None:
    frame = bytes.fromhex(
        "00000009" "00"  # correlation id, flexible response header
        "00000000"  # throttle
        "02" "02" "74" "03" "00000000" "0000" "00" "00000002" "0033" "00" "00"  # t: 0 ok, 2 CONCURRENT_TRANSACTIONS
        "00"
    )  # fmt: skip
    _, body = assert_strict_framing(lambda f: decode_response(aptt.KEY, 3, f), frame)
    assert body.errors() == {("t", 0): 0, ("t", 2): 51}
    assert encode_response(body, version=3, correlation_id=9)[4:] == frame


def test_end_txn_golden() -> None:
    v0 = encode_request(END, version=0, correlation_id=7, client_id="c")
    identity = "00000000000001230005"  # producer id, epoch
    assert v0[4:] == bytes.fromhex("001a" "0000" "00000007" "0001" "63" "0002" "7478" + identity + "01")  # fmt: skip
    v3 = encode_request(END, version=3, correlation_id=7, client_id="c")
    flexible = "001a00030000000700016300"  # header with its tags
    assert v3[4:] == bytes.fromhex(flexible + "03" "7478" + identity + "01" "00")  # fmt: skip
    answer = bytes.fromhex("0000000900000010005a")  # throttle 16, PRODUCER_FENCED
    _, body = assert_strict_framing(lambda f: decode_response(end_txn.KEY, 0, f), answer)
    assert body == end_txn.EndTxnResponse(16, 90)


@pytest.mark.parametrize("version", range(aptt.BATCHED))  # v4+: brokers only (the generic interop test)
def test_add_partitions_to_txn_interop(version: int) -> None:
    theirs = KAddRequest.decode(
        encode_request(ADD, version=version, correlation_id=1, client_id="c"), version=version, header=True, framed=True
    )
    assert (theirs.v3_and_below_transactional_id, theirs.v3_and_below_producer_id) == ("tx", 0x123)
    assert theirs.v3_and_below_producer_epoch == 5
    assert [(t.name, list(t.partitions)) for t in theirs.v3_and_below_topics] == [("t", [0, 2])]
    topic_cls = KAddResponse.AddPartitionsToTxnTopicResult
    partition_cls = topic_cls.AddPartitionsToTxnPartitionResult
    partitions = [
        partition_cls(partition_index=0, partition_error_code=0),
        partition_cls(partition_index=2, partition_error_code=90),
    ]
    answer = KAddResponse(
        throttle_time_ms=3, results_by_topic_v3_and_below=[topic_cls(name="t", results_by_partition=partitions)]
    )
    header = (0x55).to_bytes(4, "big") + (b"\x00" if version >= aptt.FIRST_FLEXIBLE else b"")
    _, body = decode_response(aptt.KEY, version, header + answer.encode(version=version))
    assert body.throttle_time_ms == 3 and body.errors() == {("t", 0): 0, ("t", 2): 90}


@pytest.mark.parametrize("version", end_txn.VERSIONS)
def test_end_txn_interop(version: int) -> None:
    theirs = KEndRequest.decode(
        encode_request(END, version=version, correlation_id=1, client_id="c"), version=version, header=True, framed=True
    )
    assert (theirs.transactional_id, theirs.producer_id, theirs.producer_epoch, theirs.committed) == (
        "tx",
        0x123,
        5,
        True,
    )
    header = (0x55).to_bytes(4, "big") + (b"\x00" if version >= end_txn.FIRST_FLEXIBLE else b"")
    answer = KEndResponse(throttle_time_ms=3, error_code=51)
    assert decode_response(end_txn.KEY, version, header + answer.encode(version=version)) == (
        0x55,
        end_txn.EndTxnResponse(3, 51),
    )
