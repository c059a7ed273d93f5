"""The spool's record format: golden bytes, the fast codec equal to the construct spec, damaged input never raises."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bruce.proxy.spool import format
from bruce.proxy.spool.format import (
    FRAME_OVERHEAD,
    HEADER,
    HEADER_SIZE,
    FrameError,
    SpoolMessage,
    SpoolRecord,
    decode_frame,
    decode_frame_schema,
    encode_burst,
    encode_burst_schema,
    encode_header,
    parse_header,
)
from bruce.wire.crc import crc32c, crc32c_crcmod
from bruce.wire.errors import UsageError

HEADER_GOLDEN = bytes.fromhex(
    "4253504c"  # magic "BSPL"
    "0001"  # format version 1
    "0000"  # flags 0
    "0000000000000123"  # base sequence 0x123
    "0000000000001777"  # created 0x1777 ms
    "c5f3e375"  # CRC-32C of the 24 bytes above
)
RECORDS_GOLDEN = bytes.fromhex(
    "00000024"  # length 36 = 31 fixed + topic 2 + key 1 + value 2
    "33197e51"  # CRC-32C of the body
    "0000000000000123"  # sequence 0x123
    "0000000000000444"  # timestamp 0x444
    "01"  # routing: PartitionKey
    "00000555"  # partition key 0x555
    "0002"  # topic size 2
    "00000001"  # key size 1
    "00000002"  # value size 2
    "746f"  # topic "to"
    "6b"  # key "k"
    "6666"  # value
    # second record: sequence 0x124, AnyPartition, null key, empty value, timestamp -2
    "00000020"  # length 32
    "d8ffc4f0"  # CRC-32C
    "0000000000000124"  # sequence
    "fffffffffffffffe"  # timestamp -2
    "00"  # routing: AnyPartition
    "00000000"  # partition key (0 for AnyPartition)
    "0001"  # topic size 1
    "ffffffff"  # key size -1: null key
    "00000000"  # value size 0
    "78"  # topic "x"
)
GOLDEN_MESSAGES = [SpoolMessage(b"to", 0x555, b"k", b"\x66\x66", 0x444), SpoolMessage(b"x", None, None, b"", -2)]


def test_header_golden() -> None:
    assert encode_header(0x123, 0x1777) == HEADER_GOLDEN
    assert len(HEADER_GOLDEN) == HEADER_SIZE
    assert crc32c_crcmod(HEADER_GOLDEN[:24]) == 0xC5F3E375  # an independent CRC-32C implementation agrees
    assert parse_header(HEADER_GOLDEN) == (0x123, 0x1777)
    parsed = HEADER.parse(HEADER_GOLDEN).fields.value
    assert (parsed.base_sequence, parsed.created_ms, parsed.version) == (0x123, 0x1777, 1)
    assert HEADER.build({"fields": {"value": {"base_sequence": 0x123, "created_ms": 0x1777}}}) == HEADER_GOLDEN


@pytest.mark.parametrize("index", range(HEADER_SIZE))
def test_header_any_flipped_byte_is_refused(index: int) -> None:
    damaged = bytearray(HEADER_GOLDEN)
    damaged[index] ^= 0x10
    assert parse_header(damaged) is None
    assert parse_header(HEADER_GOLDEN[:index]) is None


def test_records_golden() -> None:
    assert encode_burst(0x123, GOLDEN_MESSAGES) == RECORDS_GOLDEN
    assert encode_burst_schema(0x123, GOLDEN_MESSAGES) == RECORDS_GOLDEN
    assert crc32c_crcmod(RECORDS_GOLDEN[8:44]) == 0x33197E51
    first = decode_frame(RECORDS_GOLDEN, 0)
    assert first == SpoolRecord(0x123, b"to", 0x555, b"k", b"\x66\x66", 0x444, 0, 44)
    second = decode_frame(RECORDS_GOLDEN, 44)
    assert second == SpoolRecord(0x124, b"x", None, None, b"", -2, 44, 40)
    assert second.message() == GOLDEN_MESSAGES[1]
    assert decode_frame_schema(RECORDS_GOLDEN, 44) == second
    assert second.size == FRAME_OVERHEAD + 1  # the smallest record


def test_empty_key_is_not_a_null_key() -> None:
    data = encode_burst(0, [SpoolMessage(b"t", None, b"", b"v", 0)])
    assert decode_frame(data, 0).key == b""


# ---------------------------------------------------------------- fast codec ≡ spec

messages = st.builds(
    SpoolMessage,
    topic=st.binary(min_size=1, max_size=12),
    partition_key=st.none() | st.sampled_from([0, -1, 0x444, -(2**31), 2**31 - 1]) | st.integers(-(2**31), 2**31 - 1),
    key=st.none() | st.binary(max_size=12),
    value=st.binary(max_size=40),
    timestamp=st.sampled_from([0, -1, 0x123, -(2**63), 2**63 - 1]) | st.integers(-(2**63), 2**63 - 1),
)
sequences = st.sampled_from([0, 0x123, 2**63, 2**64 - 200]) | st.integers(0, 2**64 - 200)


@settings(max_examples=300, deadline=None)
@given(first=sequences, burst=st.lists(messages, max_size=6))
def test_fast_encoder_builds_the_spec_bytes_and_decodes_back(first: int, burst: list[SpoolMessage]) -> None:
    data = encode_burst(first, burst)
    assert data == encode_burst_schema(first, burst)
    offset = 0
    for i, m in enumerate(burst):
        record = decode_frame(data, offset)
        assert isinstance(record, SpoolRecord)
        assert (record.sequence, record.message()) == (first + i, m)
        assert decode_frame_schema(data, offset) == record
        offset += record.size
    assert offset == len(data)


layouts = st.sampled_from(  # few layouts, so that bursts repeat and alternate them (the encoder's layout cache)
    [
        (b"topic-a", None, None, 3),
        (b"topic-b", None, None, 3),  # the same sizes as topic-a: only the topic's bytes differ
        (b"topic-a", None, b"", 3),  # an empty key is not a null key
        (b"topic-a", 0, None, 3),  # PartitionKey 0 is not AnyPartition
        (b"topic-a", 7, b"kk", 3),
        (b"topic-a", 7, b"kk", 4),
        (b"topic-a", 8, b"kk", 4),
    ]
)
layout_messages = st.builds(
    lambda layout, fill, timestamp: SpoolMessage(
        layout[0], layout[1], layout[2] and fill[: len(layout[2])], fill[: layout[3]], timestamp
    ),
    layouts,
    st.binary(min_size=4, max_size=4),
    st.integers(-(2**63), 2**63 - 1),
)


@settings(max_examples=300, deadline=None)
@given(first=sequences, burst=st.lists(layout_messages, max_size=12))
def test_repeated_and_alternating_layouts_build_the_spec_bytes(first: int, burst: list[SpoolMessage]) -> None:
    assert encode_burst(first, burst) == encode_burst_schema(first, burst)


def test_the_layout_cache_is_bounded_and_outlives_clearing() -> None:
    burst = [SpoolMessage(b"t", None, None, b"v" * size, 0) for size in range(format.LAYOUTS_MAX + 10)]
    assert encode_burst(5, burst) == encode_burst_schema(5, burst)
    assert len(format._layouts) <= format.LAYOUTS_MAX
    assert encode_burst(5, burst[:3]) == encode_burst_schema(5, burst[:3])


def _outcome(result: SpoolRecord | FrameError) -> SpoolRecord | bool:
    return result if isinstance(result, SpoolRecord) else result.short


def _framed(body: bytes) -> bytes:
    return struct.pack(">II", len(body), crc32c(body)) + body


fixed_bodies = st.builds(  # plausible fixed fields with any sizes, then any bytes: reaches every field check
    lambda seq, ts, routing, pkey, sizes, rest: struct.pack(">QqBiHii", seq, ts, routing, pkey, *sizes) + rest,
    st.integers(0, 2**64 - 1),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([0, 1, 2, 255]),
    st.sampled_from([0, 1, -1]),
    st.tuples(st.integers(0, 6), st.integers(-3, 6), st.integers(-3, 6)),
    st.binary(max_size=16),
)


@settings(max_examples=500, deadline=None)
@given(body=fixed_bodies | st.binary(max_size=48), offset=st.integers(0, 3), junk=st.binary(max_size=4))
def test_fast_decoder_accepts_and_rejects_what_the_spec_does(body: bytes, offset: int, junk: bytes) -> None:
    data = bytes(offset) + _framed(body) + junk
    assert _outcome(decode_frame(data, offset)) == _outcome(decode_frame_schema(data, offset))


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=64))
def test_fast_decoder_equals_spec_on_any_bytes(data: bytes) -> None:
    assert _outcome(decode_frame(data, 0)) == _outcome(decode_frame_schema(data, 0))


def test_every_truncation_is_short_and_every_flip_is_bad() -> None:
    one = RECORDS_GOLDEN[:44]
    for cut in range(len(one)):
        result = decode_frame(one[:cut], 0)
        assert isinstance(result, FrameError) and result.short, cut
        assert _outcome(decode_frame_schema(one[:cut], 0)) is True
    for index in range(len(one)):
        for bit in (0x01, 0x80):
            damaged = bytearray(one)
            damaged[index] ^= bit
            result = decode_frame(bytes(damaged), 0)
            assert isinstance(result, FrameError), (index, bit)
            assert _outcome(decode_frame_schema(bytes(damaged), 0)) == result.short
    trailing = decode_frame(one + b"\xff" * 7, 0)  # a record followed by junk is still the record
    assert isinstance(trailing, SpoolRecord) and trailing.size == 44


@pytest.mark.parametrize(
    "bad",
    [
        SpoolMessage(b"", None, None, b"v", 0),  # no topic
        SpoolMessage(b"t" * 65536, None, None, b"v", 0),  # topic too long
        SpoolMessage(b"t", 2**31, None, b"v", 0),  # partition key out of range
        SpoolMessage(b"t", None, None, b"v", 2**63),  # timestamp out of range
        SpoolMessage(b"t", None, None, None, 0),  # type: ignore[arg-type]  # no value
    ],
)
def test_what_cannot_be_encoded_is_a_usage_error(bad: SpoolMessage) -> None:
    for encode in (encode_burst, encode_burst_schema):
        with pytest.raises(UsageError):
            encode(0, [SpoolMessage(b"ok", None, None, b"", 0), bad])


def test_sequence_beyond_64_bits_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        encode_burst(2**64 - 1, [SpoolMessage(b"t", None, None, b"", 0)] * 2)
    with pytest.raises(UsageError):
        encode_burst_schema(2**64 - 1, [SpoolMessage(b"t", None, None, b"", 0)] * 2)
