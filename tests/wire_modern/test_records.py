"""decode_records: dispatch on each entry's magic (0/1 message sets, 2 record batches), partial tail, bad framing."""

from __future__ import annotations

import dataclasses
import struct

import pytest
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from bruce.wire.compression import Codec
from bruce.wire.errors import MalformedInput
from bruce.wire.messageset import build_message_set
from bruce.wire.recordbatch import build_record_batch, decode_record_batches
from bruce.wire.records import (
    LOG_APPEND_TIME,
    Record,
    decode_records,
    decompression_limit,
    entry_spans,
    new_record,
)


def _legacy(magic: int, codec: int, first_offset: int, values: list[bytes]) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    for i, value in enumerate(values):
        builder.append(
            first_offset + i if not codec else i, timestamp=1000 + i if magic else None, key=b"k", value=value
        )
    return bytes(builder.build())


@pytest.mark.parametrize("codec", [0, 1, 2])
def test_mixed_magics_in_one_buffer(codec: int) -> None:
    data = (
        _legacy(0, codec, 0, [b"a", b"b"])
        + _legacy(1, codec, 2, [b"c"])
        + build_record_batch([(b"k", b"d", 5, None), (b"k", b"e", 6, None)], base_offset=3, codec=Codec(codec))
    )
    records = decode_records(data + data[:20])  # plus a partial tail
    assert [(r.magic, r.value) for r in records] == [(0, b"a"), (0, b"b"), (1, b"c"), (2, b"d"), (2, b"e")]
    assert [r.offset for r in records][-2:] == [3, 4]


def test_entry_spans_stop_at_a_partial_tail() -> None:
    batch = build_record_batch([(None, b"x", 0, None)])
    assert list(entry_spans(batch * 2)) == [(0, len(batch), 2), (len(batch), 2 * len(batch), 2)]
    for cut in range(len(batch)):
        assert list(entry_spans(batch + batch[:cut])) == [(0, len(batch), 2)]


@pytest.mark.parametrize("size", [-1, 0, 4])
def test_entry_size_too_small_is_malformed(size: int) -> None:
    with pytest.raises(MalformedInput):
        decode_records(struct.pack(">qi", 0, size) + bytes(30))


def test_unknown_magic_is_malformed() -> None:
    data = bytearray(build_record_batch([(None, b"x", 0, None)]))
    data[16] = 7
    with pytest.raises(MalformedInput) as info:
        decode_records(bytes(data))
    assert info.value.reason == "MAGIC"


def test_empty_and_null_record_sets() -> None:
    assert decode_records(b"") == []
    assert decode_records(bytes(11)) == []


def test_new_record_is_an_ordinary_record() -> None:
    fields = (0x123, 0x444, b"k", None, (("h", b"v"),), LOG_APPEND_TIME, 1)
    made = new_record(*fields)
    assert type(made) is Record and made == Record(*fields) and hash(made) == hash(Record(*fields))
    assert dataclasses.astuple(made) == fields
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.offset = 1  # type: ignore[misc]


def test_decompression_is_bounded_across_all_entries() -> None:
    batch = build_record_batch([(None, bytes(200_000), 0, None)], codec=Codec.ZSTD)
    plain = build_message_set([(None, bytes(200_000))], magic=1, codec=Codec.GZIP)
    data = batch + plain + batch
    assert len(decode_records(data, max_decompressed_size=700_000)) == 3
    with pytest.raises(MalformedInput) as info:
        decode_records(data, max_decompressed_size=500_000)  # each entry alone fits
    assert info.value.reason == "DECOMPRESSED_TOO_LARGE"
    assert len(decode_record_batches(batch * 3, max_decompressed_size=700_000)) == 3
    with pytest.raises(MalformedInput, match="decompresses to more than"):
        decode_record_batches(batch * 3, max_decompressed_size=500_000)


def test_the_default_bound_grows_with_the_input_only_past_64_mib() -> None:
    assert decompression_limit(b"x" * 1000) == 64 << 20
    assert decompression_limit(b"x" * (2 << 20)) == 128 << 20
