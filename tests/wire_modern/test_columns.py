"""Records decoded into columns (bruce.wire.columns): the C decoder equals its Python twin byte for byte and refuses
what it refuses, for the same reason; both equal the record decoders, the construct specs and kafka-python's reader
on the same bytes: record batches of every codec (control and transactional ones, log-append time, headers) and
message sets of magic 0 and 1 (compressed wrappers too), mixed, with a partial entry at the end."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.memory_records import MemoryRecords
from wire.builders import PURE
from wire.streams import run, truncations

from bruce.wire import messageset, speedups
from bruce.wire.columns import RecordColumns, decode_columns, decode_columns_python
from bruce.wire.compression import Codec, compress
from bruce.wire.crc import crc32c
from bruce.wire.errors import MalformedInput
from bruce.wire.messageset import MESSAGE_SET, build_message_set, decode_message_set
from bruce.wire.recordbatch import build_record_batch, decode_record_batch, decode_record_batch_with_schema
from bruce.wire.records import decode_records, entry_spans

CONTROL, TRANSACTIONAL = 0x20, 0x10


def both(data: bytes, **kwargs: Any) -> RecordColumns | MalformedInput:
    """The columns of ``data`` (or the error), the same from the C decoder and the Python one, reason included."""
    python = run(lambda d: decode_columns_python(d, **kwargs), data)
    if PURE:
        return python
    assert speedups.record_columns is not None
    c = run(lambda d: decode_columns(d, **kwargs), data)
    if isinstance(python, MalformedInput) or isinstance(c, MalformedInput):
        assert (type(c), getattr(c, "reason", None)) == (type(python), getattr(python, "reason", None)), (c, python)
    else:
        assert c == python
    return python


def with_attributes(batch: bytes, bits: int) -> bytes:
    """``batch`` with ``bits`` added to its attributes, CRC-32C fixed."""
    out = bytearray(batch)
    struct.pack_into(">h", out, 21, struct.unpack_from(">h", out, 21)[0] | bits)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def marker(commit: bool, base_offset: int, producer_id: int) -> bytes:
    """A control batch as brokers write it: one record, key (version 0, type), value (version, coordinator epoch)."""
    record = (struct.pack(">hh", 0, int(commit)), struct.pack(">hi", 0, 7), 1_700_000_000_000, None)
    batch = build_record_batch([record], base_offset=base_offset, producer_id=producer_id, producer_epoch=0)
    return with_attributes(batch, CONTROL | TRANSACTIONAL)


# ---------------------------------------------------------------- logs of every kind of entry

text = st.text(max_size=6)
key_or_value = st.none() | st.binary(max_size=30)
headers = st.none() | st.lists(st.tuples(text, st.none() | st.binary(max_size=8)), max_size=3)
stamp = st.integers(0, 1 << 42)
record = st.tuples(key_or_value, key_or_value, stamp, headers)
record_batch = st.builds(
    lambda records, codec, base, pid, epoch, seq, log_append, txn, leader: build_record_batch(
        records,
        codec=codec,
        base_offset=base,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        timestamp_type=log_append,
        transactional=txn,
        partition_leader_epoch=leader,
    ),
    st.lists(record, min_size=1, max_size=6),
    st.sampled_from(list(Codec)),
    st.integers(0, 1 << 40),
    st.integers(-1, 1 << 40),
    st.integers(-1, 1 << 14),
    st.integers(-1, 1 << 30),
    st.integers(0, 1),
    st.booleans(),
    st.integers(-1, 1 << 20),
)
control_batch = st.builds(marker, st.booleans(), st.integers(0, 1 << 40), st.integers(0, 1 << 40))
message_set = st.builds(
    lambda messages, magic, codec, base: build_message_set(messages, magic=magic, codec=codec, base_offset=base),
    st.lists(st.tuples(key_or_value, key_or_value, stamp), min_size=1, max_size=5),
    st.integers(0, 1),
    st.sampled_from(list(Codec)[:4]),
    st.integers(0, 1 << 40),
)
entry = record_batch | control_batch | message_set
log = st.tuples(st.lists(entry, max_size=5), st.integers(0, 200))


def _entries(data: bytes) -> list[tuple[int, int, int]]:
    return list(entry_spans(data))


def _expected_records(data: bytes) -> list[Any]:
    """Every record, control ones included, by the record decoders."""
    out: list[Any] = []
    for start, end, magic in _entries(data):
        if magic == 2:
            out.extend(decode_record_batch(data[start:end]).records)
        else:
            out.extend(decode_message_set(data[start:end]))
    return out


def _kafka_python(data: bytes) -> list[tuple[Any, ...]]:
    """(offset, timestamp, key, value, headers) of every record kafka-python reads from ``data``."""
    out = []
    records = MemoryRecords(data)
    while records.has_next():
        batch = records.next_batch()
        for r in batch:
            headers = tuple(r.headers) if batch.magic == 2 else ()
            out.append((r.offset, r.timestamp if batch.magic else -1, r.key, r.value, headers))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log)
def test_columns_equal_the_record_decoders_the_specs_and_kafka_python(entries_and_cut) -> None:
    entries, cut = entries_and_cut
    whole = b"".join(entries)
    data = whole + (entries[0][: cut % len(entries[0])] if entries else b"")  # a partial entry at the end
    columns = both(data)
    assert isinstance(columns, RecordColumns)
    records = columns.records(range(columns.batches.count))
    assert records == _expected_records(data)
    assert columns.records() == decode_records(data)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records] == _kafka_python(data)
    spans = _entries(data)
    assert columns.batches.count == len(spans)  # an uncompressed message set: one entry per message
    for i, (start, end, magic) in enumerate(spans):
        facts = columns.batches.facts(i)
        assert (facts.position, facts.magic) == (start, magic)
        batch_records = records[facts.first_row : facts.end_row]
        if magic == 2:
            batch = decode_record_batch_with_schema(data[start:end])  # the spec
            assert batch.records == tuple(batch_records)
            assert (facts.base_offset, facts.last_offset) == (
                batch.base_offset,
                batch.base_offset + batch.last_offset_delta,
            )
            assert (facts.base_timestamp, facts.max_timestamp) == (batch.base_timestamp, batch.max_timestamp)
            assert (facts.producer_id, facts.producer_epoch, facts.base_sequence) == (
                batch.producer_id,
                batch.producer_epoch,
                batch.base_sequence,
            )
            assert (facts.partition_leader_epoch, facts.crc, facts.attributes) == (
                batch.partition_leader_epoch,
                batch.crc,
                batch.attributes,
            )
            assert (facts.is_control, facts.is_transactional) == (batch.is_control, batch.is_transactional)
        else:
            (message,) = MESSAGE_SET.parse(data[start:end]).entries  # the spec of the top-level message
            body = message.message.body.value
            assert facts.last_offset == message.offset
            assert facts.base_offset == (batch_records[0].offset if batch_records else message.offset)
            assert (facts.crc, facts.attributes) == (message.message.crc, body.attributes)
            assert facts.max_timestamp == facts.base_timestamp == (body.timestamp if magic else -1)
            assert (facts.producer_id, facts.partition_leader_epoch, facts.is_control) == (-1, -1, False)
    assert columns.end_offset == (columns.batches.facts(len(spans) - 1).last_offset + 1 if spans else None)


def test_the_layouts_are_arrows() -> None:
    data = build_record_batch(
        [(None, b"ab", 5, [("h", b"x"), ("\u00e9", None)]), (b"k", None, 9, None), (None, b"", 7, [("z", b"")])],
        base_offset=10,
        timestamp_type=1,
    )
    columns = both(data)
    assert isinstance(columns, RecordColumns)
    assert columns.count == 3
    assert struct.unpack("=3q", columns.offsets) == (10, 11, 12)
    assert struct.unpack("=3q", columns.timestamps) == (9, 9, 9)  # log-append time: the batch's max
    assert columns.timestamp_types == b"\x01\x01\x01"
    assert (columns.keys.null_count, columns.keys.validity, columns.keys.data) == (2, b"\x02", b"k")
    assert struct.unpack("=4i", columns.keys.offsets) == (0, 0, 1, 1)
    assert (columns.values.null_count, columns.values.validity, columns.values.data) == (1, b"\x05", b"ab")
    assert struct.unpack("=4i", columns.header_offsets) == (0, 2, 2, 3)
    assert (columns.header_keys.validity, columns.header_keys.data) == (None, "h\u00e9z".encode())
    assert columns.header_values.to_list() == [b"x", None, b""]
    assert struct.unpack("=2i", columns.batches.rows) == (0, 3)


def test_empty_and_partial_inputs() -> None:
    batch = build_record_batch([(None, b"v", 1, None)])
    for data in (b"", batch[:12], batch[:-1]):
        columns = both(data)
        assert isinstance(columns, RecordColumns)
        assert (columns.count, columns.batches.count, columns.end_offset) == (0, 0, None)
        assert struct.unpack("=i", columns.batches.rows) == (0,) and struct.unpack("=i", columns.keys.offsets) == (0,)


@pytest.mark.parametrize("codec", list(Codec))
def test_every_truncation_decodes_or_is_malformed(codec: Codec) -> None:
    data = build_record_batch([(b"k", b"v" * 30, 5, [("h", None)])] * 3, codec=codec) + build_message_set(
        [(b"k", b"v", 5)] * 2, magic=1, codec=min(codec, Codec.LZ4)
    )
    for cut in truncations(data):
        for flipped in (cut, cut[:-1] + bytes([cut[-1] ^ 0x40]) if cut else cut):
            both(flipped)


# ---------------------------------------------------------------- damaged inputs: both refuse them alike


def _rewrap(batch: bytes, raw_records: bytes, codec: Codec, count: int) -> bytes:
    """``batch``'s header around ``raw_records`` (compressed with ``codec``), with length, count and CRC fixed."""
    body = bytearray(batch[21:57])
    struct.pack_into(">h", body, 0, codec | (struct.unpack_from(">h", batch, 21)[0] & ~7))
    body += struct.pack(">i", count) + (compress(codec, raw_records) if codec else raw_records)
    return batch[:8] + struct.pack(">iib", len(body) + 9, -1, 2) + struct.pack(">I", crc32c(bytes(body))) + body


mutation = st.tuples(st.sampled_from(["flip", "insert", "delete"]), st.integers(0, 10_000), st.integers(1, 255))


def _mutate(raw: bytes, m: tuple[str, int, int]) -> bytes:
    kind, pos, arg = m
    if not raw:
        return raw
    pos %= len(raw)
    if kind == "flip":
        return raw[:pos] + bytes([raw[pos] ^ arg]) + raw[pos + 1 :]
    if kind == "insert":
        return raw[:pos] + bytes([arg]) + raw[pos:]
    return raw[:pos] + raw[pos + 1 + arg % 3 :]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(record, min_size=1, max_size=6),
    st.integers(0, 1),
    st.sampled_from(list(Codec)),
    st.lists(mutation, max_size=3),
    st.integers(-1, 8),
)
def test_damaged_records_are_refused_alike(records, log_append, codec, mutations, count) -> None:
    batch = build_record_batch(records, timestamp_type=log_append)
    raw = batch[61:]
    for m in mutations:
        raw = _mutate(raw, m)
    both(_rewrap(batch, raw, codec, len(records) if count < 0 else count))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(entry, min_size=1, max_size=3), st.lists(mutation, min_size=1, max_size=3))
def test_damaged_logs_are_refused_alike(entries, mutations) -> None:
    data = b"".join(entries)
    for m in mutations:
        data = _mutate(data, m)
    both(data)


# Valid edges (the last of each length, U+10FFFF), then what strict UTF-8 refuses: surrogates, overlong forms, past
# U+10FFFF, a cut sequence, a lone continuation byte.
UTF8_EDGES = [b"", b"a", b"\xc3\xa9", b"\xed\x9f\xbf", b"\xee\x80\x80", b"\xf4\x8f\xbf\xbf", b"\xef\xbf\xbf"]
UTF8_EDGES += [b"\xed\xa0\x80", b"\xc0\x80", b"\xc1\xbf", b"\xe0\x9f\xbf", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80"]
UTF8_EDGES += [b"\xf5\x80\x80\x80", b"\xe2\x82", b"\x80", b"\xff"]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=6), st.sampled_from(UTF8_EDGES))
def test_header_keys_are_checked_as_python_decodes_utf8(junk, edge) -> None:
    batch = build_record_batch([(None, b"v", 0, [("k", b"x")])])
    raw = decode_record_batch(batch)  # record: length, attributes, ts delta, offset delta, key, value, 1 header
    assert raw.records[0].headers == (("k", b"x"),)
    key = edge + junk
    body = b"\x00\x00\x00\x01\x02v\x02" + bytes([len(key) * 2]) + key + b"\x02x"
    result = both(_rewrap(batch, bytes([len(body) * 2]) + body, Codec.NONE, 1))
    try:
        expected = key.decode("utf-8")
    except UnicodeDecodeError:
        assert isinstance(result, MalformedInput)
    else:
        assert isinstance(result, RecordColumns) and result.records()[0].headers == ((expected, b"x"),)


def test_offsets_and_timestamps_must_fit_64_bits() -> None:
    top = (1 << 63) - 1
    for records, args in (
        ([(None, b"v", 0, None)] * 2, {"base_offset": top}),  # the second record's offset
        ([(None, b"v", top, None), (None, b"v", top, None)], {}),  # fine: no delta past the top
    ):
        result = both(build_record_batch(records, **args))
        assert isinstance(result, MalformedInput) == ("base_offset" in args)
    batch = bytearray(build_record_batch([(None, b"v", 0, None), (None, b"v", 5, None)]))
    struct.pack_into(">q", batch, 27, top - 2)  # base timestamp: the second record's passes the top
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    assert isinstance(both(bytes(batch)), MalformedInput)
    assert isinstance(both(with_attributes(bytes(batch), 0x08)), RecordColumns)  # log-append: the max timestamp
    wrapper = build_message_set([(None, b"v", 1)] * 3, magic=1, codec=Codec.GZIP, base_offset=top - 2)
    assert struct.unpack("=3q", both(wrapper).offsets) == (top - 2, top - 1, top)  # type: ignore[union-attr]
    # Inner offsets 5 then 0 in a wrapper at the top: the first, moved up by the wrapper's offset, passes it.
    inner = b"".join(build_message_set([(None, b"v", 1)], magic=1, base_offset=o) for o in (5, 0))
    wrapper = messageset._entry(top, 1, int(Codec.GZIP), 1, None, compress(Codec.GZIP, inner))
    assert isinstance(both(wrapper), MalformedInput)
    wrapper = messageset._entry(top - 5, 1, int(Codec.GZIP), 1, None, compress(Codec.GZIP, inner))
    assert struct.unpack("=2q", both(wrapper).offsets) == (top, top - 5)  # type: ignore[union-attr]


def test_decompression_is_bounded_for_the_whole_input() -> None:
    bomb = build_record_batch([(None, bytes(100_000), 0, None)], codec=Codec.ZSTD)
    assert isinstance(both(bomb * 3), RecordColumns)
    refused = both(bomb * 3, max_decompressed_size=250_000)  # two fit, not three
    assert isinstance(refused, MalformedInput) and refused.reason == "DECOMPRESSED_TOO_LARGE"
    corrupt = bytearray(build_record_batch([(None, b"v" * 50, 0, None)], codec=Codec.GZIP))
    corrupt[-3] ^= 0xFF
    struct.pack_into(">I", corrupt, 17, crc32c(bytes(corrupt[21:])))
    refused = both(bytes(corrupt))
    assert isinstance(refused, MalformedInput) and refused.reason == "CORRUPT_COMPRESSED_DATA"


def test_reasons_of_refusals() -> None:
    batch = build_record_batch([(None, b"v", 0, None)])
    flipped = batch[:-1] + bytes([batch[-1] ^ 1])
    assert getattr(both(flipped), "reason", None) == "CRC"
    assert getattr(both(batch[:16] + b"\x07" + batch[17:]), "reason", None) == "MAGIC"
    message = bytearray(build_message_set([(None, b"v", 0)], magic=1, codec=Codec.NONE))
    message[-1] ^= 1
    assert getattr(both(bytes(message)), "reason", None) == "CRC"
    zstd_set = bytearray(build_message_set([(None, b"v", 0)], magic=1))
    zstd_set[17] = 4  # codec zstd in a message set
    struct.pack_into(">I", zstd_set, 12, __import__("zlib").crc32(bytes(zstd_set[16:])))
    assert getattr(both(bytes(zstd_set)), "reason", None) == "UNKNOWN_CODEC"


def test_without_the_extension_the_python_decoder_does_it_all() -> None:
    code = (
        "from bruce.wire import columns, speedups\n"
        "from bruce.wire.recordbatch import build_record_batch\n"
        "assert speedups.record_columns is None and columns._record_columns_c is None\n"
        "print(columns.decode_columns(build_record_batch([(None, b'v', 5, None)])).values.data)\n"
    )
    env = {**os.environ, "BRUCE_NO_EXTENSIONS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "b'v'"
    if not PURE:
        assert speedups.record_columns is not None  # installing builds it wherever a compiler is (every CI machine)
