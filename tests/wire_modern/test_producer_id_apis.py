"""InitProducerId and FindCoordinator: golden vectors, the helpers that hide the v0-v3 / v4+ shapes, request frames
truncated or with trailing bytes, and interop with kafka-python's decoders (generated from Kafka's own JSON specs) at
every version. Every version round trips in tests/wire/test_protocol_round_trips."""

from __future__ import annotations

import pytest
from kafka.protocol.metadata import FindCoordinatorRequest as KFindCoordinatorRequest
from kafka.protocol.metadata import FindCoordinatorResponse as KFindCoordinatorResponse
from kafka.protocol.producer import InitProducerIdRequest as KInitProducerIdRequest
from kafka.protocol.producer import InitProducerIdResponse as KInitProducerIdResponse
from wire.streams import assert_strict_framing

from bruce.wire.errors import UsageError
from bruce.wire.protocol import find_coordinator as fc
from bruce.wire.protocol import init_producer_id as ipi
from bruce.wire.protocol.base import decode_request, decode_response, encode_request, encode_response

# ---------------------------------------------------------------- InitProducerId golden vectors

IDEMPOTENT = ipi.InitProducerIdRequest()  # what an idempotent producer sends
RESUME = ipi.InitProducerIdRequest(
    transactional_id="tx", transaction_timeout_ms=0x444, producer_id=0x123, producer_epoch=5, enable_2pc=True
)


def test_init_producer_id_v0_request_golden() -> None:
    frame = encode_request(IDEMPOTENT, version=0, correlation_id=7, client_id="c")
    expected = bytes.fromhex(
        "0016" "0000" "00000007" "0001" "63"  # header: InitProducerId v0, correlation id 7, client id "c"
        "ffff"  # transactional id: null (idempotent producer)
        "7fffffff"  # transaction timeout: int32 max (no transaction)
    )  # fmt: skip
    assert frame == len(expected).to_bytes(4, "big") + expected
    assert_strict_framing(decode_request, frame[4:])


def test_init_producer_id_v3_and_v6_request_golden() -> None:
    head = "0016{v}0000000700016300"  # flexible header: + no tagged fields
    body = (
        "03" "7478"  # transactional id "tx" (compact string)
        "00000444"  # transaction timeout
        "0000000000000123" "0005"  # producer id and epoch (v3+)
    )  # fmt: skip
    v3 = encode_request(RESUME, version=3, correlation_id=7, client_id="c")
    assert v3[4:] == bytes.fromhex(head.format(v="0003") + body + "00")  # v3 has no 2PC flags: enable_2pc not sent
    v6 = encode_request(RESUME, version=6, correlation_id=7, client_id="c")
    assert v6[4:] == bytes.fromhex(head.format(v="0006") + body + "010000")  # enable 2PC, keep prepared, tags
    assert decode_request(v6[4:])[1] == RESUME
    assert decode_request(v3[4:])[1] == ipi.InitProducerIdRequest("tx", 0x444, 0x123, 5)
    assert_strict_framing(decode_request, v6[4:])


def test_init_producer_id_v0_response_golden() -> None:
    frame = bytes.fromhex(
        "00000009"  # correlation id
        "00000010" "0000"  # throttle 0x10, no error
        "0000000000000123" "0444"  # producer id 0x123, epoch 0x444
    )  # fmt: skip
    body = assert_strict_framing(lambda f: decode_response(ipi.KEY, 0, f), frame)[1]
    assert body == ipi.InitProducerIdResponse(
        error_code=0, producer_id=0x123, producer_epoch=0x444, throttle_time_ms=16
    )
    assert encode_response(body, version=0, correlation_id=9)[4:] == frame


def test_init_producer_id_v6_response_golden() -> None:
    frame = bytes.fromhex(
        "00000009" "00"  # response header v1
        "00000010" "002f"  # throttle, INVALID_PRODUCER_EPOCH (47)
        "ffffffffffffffff" "ffff"  # no producer id, no epoch
        "0000000000000555" "0006"  # ongoing transaction's producer id and epoch (v6+)
        "00"
    )  # fmt: skip
    _, body = assert_strict_framing(lambda f: decode_response(ipi.KEY, 6, f), frame)
    assert (body.error_code, body.producer_id, body.producer_epoch) == (47, -1, -1)
    assert (body.ongoing_txn_producer_id, body.ongoing_txn_producer_epoch) == (0x555, 6)
    assert encode_response(body, version=6, correlation_id=9)[4:] == frame


# ---------------------------------------------------------------- FindCoordinator golden vectors


def test_find_coordinator_requests_golden() -> None:
    def frame(version: int, keys: list[str], key_type: int) -> bytes:
        request = fc.find_coordinator_request(keys, key_type=key_type, version=version)
        data = encode_request(request, version=version, correlation_id=7, client_id="c")[4:]
        assert decode_request(data)[1] == request
        assert_strict_framing(decode_request, data)
        return data

    assert frame(0, ["g"], fc.GROUP) == bytes.fromhex("000a000000000007000163000167")  # key "g"
    assert frame(1, ["tx1"], fc.TRANSACTION) == bytes.fromhex(
        "000a" "0001" "00000007" "0001" "63" "0003" "747831" "01"  # key "tx1", key type 1 (v1+)
    )  # fmt: skip
    assert frame(3, ["tx1"], fc.TRANSACTION) == bytes.fromhex(
        "000a" "0003" "00000007" "0001" "63" "00" "04" "747831" "01" "00"  # flexible: compact key, tags
    )  # fmt: skip
    assert frame(4, ["a", "b"], fc.TRANSACTION) == bytes.fromhex(
        "000a" "0004" "00000007" "0001" "63" "00"
        "01"  # key type (no single key from v4 on)
        "03" "0261" "0262"  # coordinator keys: ["a", "b"]
        "00"
    )  # fmt: skip


def test_find_coordinator_v1_response_golden() -> None:
    frame = bytes.fromhex(
        "00000009"
        "00000010" "000f" "0004" "62757379"  # throttle (v1+), COORDINATOR_NOT_AVAILABLE, message "busy" (v1-v3)
        "ffffffff" "0000" "ffffffff"  # node -1, host "", port -1
    )  # fmt: skip
    _, body = assert_strict_framing(lambda f: decode_response(fc.KEY, 1, f), frame)
    request = fc.find_coordinator_request(["g"], version=1)
    assert body.by_key(request) == {"g": fc.Coordinator("g", -1, "", -1, 15, "busy")}
    assert encode_response(body, version=1, correlation_id=9)[4:] == frame


def test_find_coordinator_v4_response_golden() -> None:
    frame = bytes.fromhex(
        "00000009" "00"
        "00000010"  # throttle
        "03"  # 2 coordinators
        "0261" "00000444" "0268" "00002384" "0000" "00" "00"  # "a": node 0x444 at h:9092, no error, null message
        "0262" "ffffffff" "01" "ffffffff" "000f" "05" "62757379" "00"  # "b": not available, "busy"
        "00"
    )  # fmt: skip
    _, body = assert_strict_framing(lambda f: decode_response(fc.KEY, 4, f), frame)
    found = body.by_key(fc.find_coordinator_request(["a", "b"], version=4))
    assert found == {"a": fc.Coordinator("a", 0x444, "h", 9092), "b": fc.Coordinator("b", -1, "", -1, 15, "busy")}
    assert encode_response(body, version=4, correlation_id=9)[4:] == frame


@pytest.mark.parametrize(
    ("keys", "key_type", "version", "message"),
    [
        ([], fc.GROUP, 4, "at least one key"),
        (["a", "b"], fc.GROUP, 3, "one key, not 2"),
        (["tx"], fc.TRANSACTION, 0, "group coordinators only"),
        (["g:t:0"], fc.SHARE, 5, "share coordinators"),
    ],
)
def test_find_coordinator_request_refuses_what_a_version_cannot_say(keys, key_type, version, message) -> None:
    with pytest.raises(UsageError, match=message):
        fc.find_coordinator_request(keys, key_type=key_type, version=version)


# ---------------------------------------------------------------- interop with kafka-python


@pytest.mark.parametrize("version", ipi.VERSIONS)
def test_init_producer_id_interop(version: int) -> None:
    ours = encode_request(RESUME, version=version, correlation_id=0x123, client_id="c")
    theirs = KInitProducerIdRequest.decode(ours, version=version, header=True, framed=True)
    assert (theirs.transactional_id, theirs.transaction_timeout_ms) == ("tx", 0x444)
    if version >= 3:
        assert (theirs.producer_id, theirs.producer_epoch) == (0x123, 5)
    if version >= 6:
        assert (theirs.enable2_pc, theirs.keep_prepared_txn) == (True, False)
    answer = KInitProducerIdResponse(
        throttle_time_ms=3,
        error_code=0,
        producer_id=0x444,
        producer_epoch=0x123,
        ongoing_txn_producer_id=-1,
        ongoing_txn_producer_epoch=-1,
    )
    header = (0x55).to_bytes(4, "big") + (b"\x00" if version >= ipi.FIRST_FLEXIBLE else b"")
    correlation_id, body = decode_response(ipi.KEY, version, header + answer.encode(version=version))
    assert correlation_id == 0x55
    assert body == ipi.InitProducerIdResponse(error_code=0, producer_id=0x444, producer_epoch=0x123, throttle_time_ms=3)


@pytest.mark.parametrize("version", fc.VERSIONS)
def test_find_coordinator_interop(version: int) -> None:
    keys = ["tx-a", "tx-b"] if version >= fc.BATCHED else ["tx-a"]
    key_type = fc.TRANSACTION if version else fc.GROUP
    request = fc.find_coordinator_request(keys, key_type=key_type, version=version)
    theirs = KFindCoordinatorRequest.decode(
        encode_request(request, version=version, correlation_id=1, client_id="c"),
        version=version,
        header=True,
        framed=True,
    )
    assert (theirs.coordinator_keys if version >= fc.BATCHED else [theirs.key]) == keys
    assert theirs.key_type == key_type
    coordinator_cls = KFindCoordinatorResponse.Coordinator
    answer = KFindCoordinatorResponse(
        throttle_time_ms=2,
        error_code=0,
        error_message=None,
        node_id=0x444,
        host="h",
        port=9092,
        coordinators=[
            coordinator_cls(key=k, node_id=0x444, host="h", port=9092, error_code=0, error_message=None) for k in keys
        ],
    )
    header = (0x55).to_bytes(4, "big") + (b"\x00" if version >= fc.FIRST_FLEXIBLE else b"")
    _, body = decode_response(fc.KEY, version, header + answer.encode(version=version))
    assert body.by_key(request) == {k: fc.Coordinator(k, 0x444, "h", 9092) for k in keys}
    back = KFindCoordinatorResponse.decode(
        encode_response(body, version=version, correlation_id=1)[len(header) + 4 :], version=version
    )
    assert (back.coordinators[0].node_id if version >= fc.BATCHED else back.node_id) == 0x444
