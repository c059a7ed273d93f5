"""RecordBatch v2: golden bytes, decoding rules, truncation, interop with kafka-python. The fast codecs against the
schema: test_recordbatch_differential."""

from __future__ import annotations

import struct

import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from wire.streams import assert_strict_framing, run, truncations

from bruce.wire.compression import Codec
from bruce.wire.crc import crc32c
from bruce.wire.errors import MalformedInput
from bruce.wire.recordbatch import (
    RECORD_BATCH,
    build_record_batch,
    build_record_batch_with_schema,
    decode_record_batch,
    decode_record_batch_with_schema,
    decode_record_batches,
)
from bruce.wire.records import LOG_APPEND_TIME, Record, decode_records

BASE_TS = 0x0102030405

GOLDEN_RECORDS = [
    (b"K", b"VAL", BASE_TS, [("hk", b"hv")]),
    (None, b"", BASE_TS + 0x123, [("n", None)]),
]
GOLDEN_ARGS = dict(
    base_offset=0x123,
    partition_leader_epoch=0x444,
    producer_id=0x1122334455,
    producer_epoch=0x66,
    base_sequence=0x777,
    transactional=True,
)
GOLDEN = bytes.fromhex(
    "0000000000000123"  # base offset 0x123
    "0000004d"  # batch length 77
    "00000444"  # partition leader epoch 0x444
    "02"  # magic 2
    "28d5d04d"  # CRC-32C of everything below
    "0010"  # attributes: transactional, no codec, create time
    "00000001"  # last offset delta 1
    "0000000102030405"  # base timestamp
    "0000000102030528"  # max timestamp = base + 0x123
    "0000001122334455"  # producer id
    "0066"  # producer epoch
    "00000777"  # base sequence
    "00000002"  # record count
    "20"  # record 0: length 16
    "00"  # attributes
    "00"  # timestamp delta 0
    "00"  # offset delta 0
    "02"
    "4b"  # key length 1, "K"
    "06"
    "56414c"  # value length 3, "VAL"
    "02"  # 1 header
    "04"
    "686b"
    "04"
    "6876"  # "hk" = "hv"
    "14"  # record 1: length 10
    "00"  # attributes
    "c604"  # timestamp delta 0x123 (zigzag varint)
    "02"  # offset delta 1
    "01"  # key null
    "00"  # value length 0
    "02"  # 1 header
    "02"
    "6e"
    "01"  # "n" = null
)


def test_golden_vector_fast_and_schema() -> None:
    assert build_record_batch(GOLDEN_RECORDS, **GOLDEN_ARGS) == GOLDEN
    assert build_record_batch_with_schema(GOLDEN_RECORDS, **GOLDEN_ARGS) == GOLDEN
    assert crc32c(GOLDEN[21:]) == 0x28D5D04D


def test_golden_vector_decodes() -> None:
    batch = decode_record_batch(GOLDEN)
    assert (batch.base_offset, batch.partition_leader_epoch, batch.crc) == (0x123, 0x444, 0x28D5D04D)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (0x1122334455, 0x66, 0x777)
    assert batch.is_transactional and not batch.is_control and batch.codec == Codec.NONE
    assert (batch.last_offset_delta, batch.base_timestamp, batch.max_timestamp) == (1, BASE_TS, BASE_TS + 0x123)
    assert batch.records == (
        Record(offset=0x123, timestamp=BASE_TS, key=b"K", value=b"VAL", headers=(("hk", b"hv"),)),
        Record(offset=0x124, timestamp=BASE_TS + 0x123, key=None, value=b"", headers=(("n", None),)),
    )


def test_golden_vector_matches_kafka_python() -> None:
    theirs = DefaultRecordBatch(GOLDEN)
    assert theirs.validate_crc()
    records = list(theirs)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records] == [
        (0x123, BASE_TS, b"K", b"VAL", [("hk", b"hv")]),
        (0x124, BASE_TS + 0x123, None, b"", [("n", None)]),
    ]


# ---------------------------------------------------------------- building


def test_compression_level_changes_bytes_not_records() -> None:
    records = [(None, b" ".join(b"word%d" % (i * j % 97) for j in range(60)), 0, None) for i in range(50)]
    default = build_record_batch(records, codec=Codec.GZIP)
    fastest = build_record_batch(records, codec=Codec.GZIP, compression_level=1)
    assert default != fastest
    assert decode_record_batch(fastest).records == decode_record_batch(default).records


# ---------------------------------------------------------------- decoding rules


def _batch(n: int = 3, offset: int = 0, **kw) -> bytes:
    return build_record_batch([(b"k%d" % i, b"v%d" % i, 1000 + i, None) for i in range(n)], base_offset=offset, **kw)


def test_several_batches_and_a_partial_tail() -> None:
    first, second = _batch(3, 0), _batch(2, 3, codec=Codec.GZIP)
    data = first + second
    assert [b.base_offset for b in decode_record_batches(data)] == [0, 3]
    for cut in range(len(first) + 1, len(data)):  # cut inside the second batch: only the first comes back
        assert [b.base_offset for b in decode_record_batches(data[:cut])] == [0]
    for cut in range(len(first)):
        assert decode_record_batches(data[:cut]) == []
    assert [r.offset for r in decode_records(data + second[:30])] == [0, 1, 2, 3, 4]


def test_crc_mismatch_is_malformed_with_reason() -> None:
    data = bytearray(_batch())
    for pos in range(21, len(data)):  # every byte the CRC covers
        flipped = bytearray(data)
        flipped[pos] ^= 0x40
        with pytest.raises(MalformedInput) as info:
            decode_record_batch(bytes(flipped))
        assert info.value.reason == "CRC"
    data[17] ^= 1  # the stored CRC itself
    with pytest.raises(MalformedInput, match="CRC-32C"):
        decode_record_batch(bytes(data))


def _with_attributes(data: bytes, attributes: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(">h", out, 21, attributes)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def test_control_batches_are_recognised_and_skipped() -> None:
    control = RECORD_BATCH.build(
        dict(
            base_offset=5,
            batch=dict(
                partition_leader_epoch=0,
                body=dict(
                    attributes=0x30,  # transactional + control
                    last_offset_delta=0,
                    base_timestamp=7,
                    max_timestamp=7,
                    producer_id=9,
                    producer_epoch=1,
                    base_sequence=-1,
                    record_count=1,
                    records=[
                        dict(
                            attributes=0,
                            timestamp_delta=0,
                            offset_delta=0,
                            key=b"\x00\x00\x00\x01",  # version 0, type 1 = COMMIT
                            value=b"\x00\x00\x00\x00\x00\x00",
                            headers=[],
                        )
                    ],
                ),
            ),
        )
    )
    batch = decode_record_batch(control)
    assert batch.is_control and batch.is_transactional
    assert [r.offset for r in decode_records(_batch(3) + control + _batch(1, 6))] == [0, 1, 2, 6]


def test_log_append_time_uses_max_timestamp() -> None:
    batch = decode_record_batch(_batch(3, timestamp_type=LOG_APPEND_TIME))
    assert batch.timestamp_type == LOG_APPEND_TIME
    assert {r.timestamp for r in batch.records} == {1002}


@pytest.mark.parametrize("codec", list(Codec))
def test_unknown_codec_bits_and_bad_magic(codec: Codec) -> None:
    data = _batch(2, codec=codec)
    with pytest.raises(MalformedInput):
        decode_record_batch(_with_attributes(data, (codec & ~7) | 6))
    bad_magic = bytearray(data)
    bad_magic[16] = 3
    with pytest.raises(MalformedInput):
        decode_record_batch(bytes(bad_magic))
    with pytest.raises(MalformedInput):
        decode_records(bytes(bad_magic))


def test_record_count_mismatch_is_malformed() -> None:
    data = bytearray(_batch(3))
    struct.pack_into(">i", data, 57, 4)
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    with pytest.raises(MalformedInput):
        decode_record_batch(bytes(data))
    struct.pack_into(">i", data, 57, -1)
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    with pytest.raises(MalformedInput):
        decode_record_batch(bytes(data))


def test_decompression_bomb_is_malformed() -> None:
    data = build_record_batch([(None, bytes(200_000), 0, None)], codec=Codec.ZSTD)
    assert len(data) < 1000
    assert len(decode_record_batch(data, max_decompressed_size=300_000).records[0].value) == 200_000
    with pytest.raises(MalformedInput) as info:
        decode_record_batch(data, max_decompressed_size=100_000)
    assert info.value.reason == "DECOMPRESSED_TOO_LARGE"


def test_entry_size_too_small_is_malformed() -> None:
    with pytest.raises(MalformedInput):
        decode_records(struct.pack(">qi", 0, 2) + b"\x00\x00")
    with pytest.raises(MalformedInput):
        decode_records(struct.pack(">qi", 0, -5) + bytes(20))


@pytest.mark.parametrize("codec", list(Codec))
def test_truncation_and_trailing_bytes(codec: Codec) -> None:
    data = build_record_batch(GOLDEN_RECORDS * 2, codec=codec)
    assert_strict_framing(decode_record_batch, data)
    for cut in truncations(data):
        assert run(decode_records, cut) == []  # a partial tail is not an error


# ---------------------------------------------------------------- interop with kafka-python (kafka.record)

_THEIR_CODEC = {Codec.NONE: 0, Codec.GZIP: 1, Codec.SNAPPY: 2, Codec.LZ4: 3, Codec.ZSTD: 4}
INTEROP_RECORDS = [
    (b"key-%d" % i, b"value-%d" % i * (i + 1), 1_700_000_000_000 + 7 * i, [(f"h{i}", b"x" * i)] if i % 2 else None)
    for i in range(20)
] + [(None, None, 1_699_999_999_000, [("null", None)])]


@pytest.mark.parametrize("codec", list(Codec))
def test_ours_decoded_by_kafka_python(codec: Codec) -> None:
    theirs = DefaultRecordBatch(build_record_batch(INTEROP_RECORDS, codec=codec, base_offset=40))
    assert theirs.validate_crc() and theirs.compression_type == _THEIR_CODEC[codec]
    got = [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in theirs]
    assert got == [(40 + i, k, v, t, list(h or [])) for i, (k, v, t, h) in enumerate(INTEROP_RECORDS)]


@pytest.mark.parametrize("codec", list(Codec))
def test_kafka_python_decoded_by_ours(codec: Codec) -> None:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=_THEIR_CODEC[codec], is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )  # fmt: skip
    for i, (key, value, ts, hdrs) in enumerate(INTEROP_RECORDS):
        builder.append(i, timestamp=ts, key=key, value=value, headers=list(hdrs or []))
    (batch,) = decode_record_batches(bytes(builder.build()))
    assert batch.codec == codec
    got = [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in batch.records]
    assert got == [(i, k, v, t, tuple(h or ())) for i, (k, v, t, h) in enumerate(INTEROP_RECORDS)]


def test_idempotent_batch_fields_both_ways_with_kafka_python() -> None:
    """An idempotent producer's batch: producer id, epoch and base sequence set, not transactional; kafka-python reads
    them from ours and we read them from theirs (both decoders)."""
    ours = build_record_batch(INTEROP_RECORDS, producer_id=0x1234, producer_epoch=0x44, base_sequence=2**31 - 2)
    theirs = DefaultRecordBatch(ours)
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (0x1234, 0x44, 2**31 - 2)
    assert not theirs.is_transactional and theirs.validate_crc()
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=0x555, producer_epoch=7,
        base_sequence=0x123, batch_size=1 << 20,
    )  # fmt: skip
    builder.append(0, timestamp=BASE_TS, key=None, value=b"v", headers=[])
    data = bytes(builder.build())
    for decode in (decode_record_batch, decode_record_batch_with_schema):
        batch = decode(data)
        assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (0x555, 7, 0x123)
        assert not batch.is_transactional
