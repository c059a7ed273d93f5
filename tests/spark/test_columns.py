"""Fetched records as Arrow (bruce.spark.columns): the read schema's columns wrap the columnar decoder's buffers
without copying them, hold exactly the records the record decoders give (offset range, dropped batches, headers,
timestamps with and without a value), and read_committed's batches are found by their flags."""

from __future__ import annotations

import datetime as dt
import struct

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bruce.spark.columns import first_at_or_after, flagged, to_arrow
from bruce.spark.schema import ARROW_READ_SCHEMA, ARROW_READ_SCHEMA_NO_HEADERS
from bruce.wire import decode_columns
from bruce.wire.compression import Codec
from bruce.wire.crc import crc32c
from bruce.wire.messageset import build_message_set
from bruce.wire.recordbatch import build_record_batch


def _control(base_offset: int) -> bytes:
    batch = bytearray(
        build_record_batch([(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00", 5, None)], base_offset=base_offset)
    )
    struct.pack_into(">h", batch, 21, 0x30)  # control, transactional
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


def test_rows_of_every_kind() -> None:
    data = (
        build_record_batch([(b"k", b"v", 1_700_000_000_123, [("h", b"1"), ("n", None)])], base_offset=7)
        + build_record_batch([(None, None, 3, None)], base_offset=8, timestamp_type=1)
        + build_message_set([(b"old", b"", 0)], magic=0, base_offset=9)
    )
    batch = to_arrow("t", 3, decode_columns(data), start=0, end=100)
    assert batch.schema == ARROW_READ_SCHEMA
    assert batch.to_pylist() == [
        {
            "key": b"k",
            "value": b"v",
            "topic": "t",
            "partition": 3,
            "offset": 7,
            "timestamp": dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.UTC),
            "timestampType": 0,
            "headers": [{"key": "h", "value": b"1"}, {"key": "n", "value": None}],
        },
        {
            "key": None,
            "value": None,
            "topic": "t",
            "partition": 3,
            "offset": 8,
            "timestamp": dt.datetime(1970, 1, 1, 0, 0, 0, 3000, tzinfo=dt.UTC),
            "timestampType": 1,
            "headers": None,  # no headers: null, as in Spark
        },
        {
            "key": b"old",
            "value": b"",
            "topic": "t",
            "partition": 3,
            "offset": 9,
            "timestamp": None,  # magic 0: no timestamp
            "timestampType": 0,
            "headers": None,
        },
    ]


def test_keys_values_and_offsets_are_the_decoders_buffers() -> None:
    columns = decode_columns(build_record_batch([(b"k%d" % i, b"value-%d" % i, 5, None) for i in range(100)]))
    batch = to_arrow("t", 0, columns, start=0, end=100, include_headers=False)
    assert batch.schema == ARROW_READ_SCHEMA_NO_HEADERS
    for name, column in (("key", columns.keys), ("value", columns.values)):
        validity, offsets, data = batch.column(name).buffers()
        assert validity is None
        assert offsets.address == pa.py_buffer(column.offsets).address  # the same memory: not copied
        assert data.address == pa.py_buffer(column.data).address
    assert batch.column("offset").buffers()[1].address == pa.py_buffer(columns.offsets).address


def test_flagged_batches_and_dropped_rows() -> None:
    plain = build_record_batch([(None, b"a", 1, None), (None, b"b", 1, None)], base_offset=0)
    txn = build_record_batch(
        [(None, b"t", 1, None)], base_offset=2, producer_id=9, producer_epoch=0, transactional=True
    )
    old = bytearray(build_message_set([(None, b"m", 1)], magic=1, base_offset=4))
    old[17] |= 0x30  # a message's attribute bits 4 and 5 are no flags (magic 1)
    struct.pack_into(">I", old, 12, __import__("zlib").crc32(bytes(old[16:])))
    columns = decode_columns(plain + txn + _control(3) + bytes(old))
    assert flagged(columns) == [1, 2]
    values = to_arrow("t", 0, columns, start=0, end=10, dropped=[1, 2]).column("value").to_pylist()
    assert values == [b"a", b"b", b"m"]
    values = to_arrow("t", 0, columns, start=1, end=3).column("value").to_pylist()
    assert values == [b"b", b"t"]  # offsets 1 and 2


entry = st.one_of(
    st.builds(
        lambda rows, codec, log_append: build_record_batch(rows, codec=codec, timestamp_type=log_append),
        st.lists(
            st.tuples(
                st.none() | st.binary(max_size=5),
                st.none() | st.binary(max_size=20),
                st.integers(0, 1 << 41),
                st.none() | st.lists(st.tuples(st.text(max_size=3), st.none() | st.binary(max_size=3)), max_size=2),
            ),
            min_size=1,
            max_size=4,
        ),
        st.sampled_from(list(Codec)),
        st.integers(0, 1),
    ),
    st.builds(
        lambda rows, magic: build_message_set(rows, magic=magic, codec=Codec.GZIP),
        st.lists(st.tuples(st.none() | st.binary(max_size=5), st.binary(max_size=5), st.integers(0, 99)), min_size=1),
        st.integers(0, 1),
    ),
)


def _log(entries: list[bytes]) -> bytes:
    """``entries`` one after the other, each entry's offset moved past the previous one's records (neither checksum
    covers it; a magic-0 wrapper's inner offsets stay as they are)."""
    out, offset = [], 0
    for e in entries:
        columns = decode_columns(e)
        shift = offset - columns.batches.facts(0).base_offset
        out.append(struct.pack(">q", struct.unpack_from(">q", e)[0] + shift) + e[8:])
        offset += columns.count
    return b"".join(out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(entry, min_size=1, max_size=4), st.integers(0, 12), st.integers(0, 14), st.sets(st.integers(0, 3)))
def test_rows_are_the_records_of_the_range_outside_the_dropped_batches(entries, start, end, dropped) -> None:
    columns = decode_columns(_log(entries))
    dropped = {d for d in dropped if d < columns.batches.count}
    kept = [i for i in range(columns.batches.count) if i not in dropped]
    records = [r for r in columns.records(kept) if start <= r.offset < end]
    rows = to_arrow("t", 1, columns, start=start, end=end, dropped=dropped).to_pylist()
    assert [(r["offset"], r["key"], r["value"], r["timestampType"]) for r in rows] == [
        (r.offset, r.key, r.value, r.timestamp_type) for r in records
    ]
    micros = [None if r.timestamp < 0 else r.timestamp * 1000 for r in records]
    assert [None if r["timestamp"] is None else _micros(r["timestamp"]) for r in rows] == micros
    assert [[(h["key"], h["value"]) for h in r["headers"] or ()] for r in rows] == [list(r.headers) for r in records]
    assert all((r["headers"] is None) == (not rec.headers) for r, rec in zip(rows, records, strict=True))


def _micros(when: dt.datetime) -> int:
    return (when - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)


def test_first_at_or_after() -> None:
    data = build_record_batch([(None, b"v", ts, None) for ts in (10, 30, 20, 40)], base_offset=5)
    rows = to_arrow("t", 0, decode_columns(data), start=0, end=100, include_headers=False)
    assert [first_at_or_after(rows, ts) for ts in (0, 10, 11, 25, 40, 41)] == [5, 5, 6, 6, 8, None]
