"""Record batches from Arrow-layout columns (bruce.wire.column_batch): the C encoder equals its Python twin byte for
byte, and both equal the record builder and the construct schema on the same records, whatever the layout (a slice's
first row, int64 offsets, validity bits or none, null slots over bytes, null header lists); kafka-python reads what
they build; column_sizes and murmur2_column agree with their twins; malformed columns are refused by both
(UsageError), never read past a buffer."""

from __future__ import annotations

from array import array
from typing import Any

import pytest
from arrow_layout import binary, header_column
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch
from wire.builders import PURE

from bruce.wire import column_batch, speedups
from bruce.wire.column_batch import (
    HeaderColumn,
    ProduceColumns,
    build_column_batch,
    build_column_batch_python,
    column_sizes,
    column_sizes_python,
    murmur2_column,
    murmur2_column_python,
)
from bruce.wire.columns import BinaryColumn
from bruce.wire.compression import Codec
from bruce.wire.errors import UsageError
from bruce.wire.plog import murmur2
from bruce.wire.recordbatch import build_record_batch, build_record_batch_with_schema

needs_c = pytest.mark.skipif(PURE, reason="BRUCE_NO_EXTENSIONS=1: the C encoder is left out on purpose")


header = st.tuples(st.text(max_size=6), st.none() | st.binary(max_size=8))
field = st.none() | st.binary(max_size=24) | st.just(b"v" * 200)
layouts = st.fixed_dictionaries(
    {"first": st.integers(0, 9), "wide": st.booleans(), "bits": st.booleans(), "junk": st.booleans()}
)


@st.composite
def tables(draw: st.DrawFn) -> tuple[ProduceColumns, list[Any], int | None]:
    """Columns of 1..25 rows in a drawn layout, the records they hold, and the one timestamp (None: a column)."""
    n = draw(st.integers(1, 25))
    keys = draw(st.none() | st.lists(field, min_size=n, max_size=n))
    values = draw(st.lists(field, min_size=n, max_size=n))
    heads = draw(st.none() | st.lists(st.none() | st.lists(header, max_size=3).map(tuple), min_size=n, max_size=n))
    base = draw(st.integers(-(2**62), 2**62))
    one = draw(st.none() | st.just(base))
    stamps = [base + d for d in draw(st.lists(st.integers(-5, 10_000), min_size=n, max_size=n))]
    if one is not None:
        stamps = [one] * n
    columns = ProduceColumns(
        n,
        binary(values, **draw(layouts)),
        None if keys is None else binary(keys, **draw(layouts)),
        None if one is not None else array("q", stamps).tobytes(),
        None if heads is None else header_column(heads, first=draw(st.integers(0, 3)), layout=draw(layouts)),
    )
    records = [
        (None if keys is None else keys[i], values[i], stamps[i], None if heads is None else (heads[i] or None))
        for i in range(n)
    ]
    return columns, records, one


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(table=tables(), cut=st.tuples(st.integers(0, 24), st.integers(1, 25)), codec=st.sampled_from(list(Codec)))
def test_column_batches_equal_the_record_builder_and_the_schema(table: Any, cut: tuple[int, int], codec: Codec) -> None:
    columns, records, one = table
    start = min(cut[0], columns.count - 1)
    stop = max(start + 1, min(cut[1], columns.count))
    built = build_column_batch(columns, start, stop, timestamp=one, codec=codec)
    twin = build_column_batch_python(columns, start, stop, timestamp=one, codec=codec, level=None)
    expected = build_record_batch(records[start:stop], codec=codec)
    assert bytes(built) == twin == expected
    if codec is Codec.NONE:
        assert expected == build_record_batch_with_schema(records[start:stop])
    theirs = DefaultRecordBatch(bytes(built))
    assert theirs.validate_crc()
    got = [(r.offset, r.key, r.value, r.timestamp, [(k, v) for k, v in r.headers]) for r in theirs]
    assert got == [(i, k, v, t, list(h or ())) for i, (k, v, t, h) in enumerate(records[start:stop])]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=tables())
def test_column_sizes_equal_the_twin_and_the_rows(table: Any) -> None:
    columns, records, one = table
    sizes, twin = column_sizes(columns), column_sizes_python(columns)
    lengths = [len(k or b"") + len(v or b"") for k, v, _, _ in records]
    expected_ends = [sum(lengths[: i + 1]) for i in range(len(lengths))]
    stamps = [ts for _, _, ts, _ in records]
    for got in (sizes, twin):
        assert list(got.ends) == expected_ends and got.biggest == max(lengths)
        low, high = (None, None) if one is not None else (min(stamps), max(stamps))
        assert (got.min_timestamp, got.max_timestamp) == (low, high)
        assert got.size(1, len(lengths)) == sum(lengths[1:]) and got.size(0, 0) == 0


@settings(max_examples=100, deadline=None)
@given(values=st.lists(field, max_size=20), layout=layouts)
def test_murmur2_column_is_kafka_murmur2_per_row(values: list[bytes | None], layout: dict[str, Any]) -> None:
    column = binary(values, **layout)
    hashes = array("I", murmur2_column(column))
    assert list(hashes) == [murmur2(v or b"") for v in values]
    assert murmur2_column_python(column) == hashes.tobytes()


def test_murmur2_of_known_keys_is_javas() -> None:
    # Java's Utils.murmur2 (as its partitioner uses it): values from the Kafka client's own tests.
    keys = [b"21", b"foobar", b"a-little-bit-long-string", b"a-little-bit-longer-string"]
    column = binary([*keys, b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", b"abc"])
    expected = [-973932308, -790332482, -985981536, -1486304829, -58897971, 479470107]
    assert list(array("i", murmur2_column(column))) == expected


# ---------------------------------------------------------------- refused: both say so


def _both_refuse(
    columns: ProduceColumns, *, start: int = 0, stop: int = 1, timestamp: int | None = 5, sizes: bool = True
) -> None:
    if not PURE:
        assert speedups.column_records is not None and speedups.column_sizes is not None
        parts = column_batch._binary_parts(columns.values), column_batch._key_parts(columns.keys)
        heads = column_batch._header_parts(columns.headers)
        stamps = timestamp if timestamp is not None else columns.timestamps
        with pytest.raises(ValueError, match="left to the Python twin"):
            speedups.column_records(*parts, heads, stamps, columns.count, start, stop, 61)
        if sizes:
            with pytest.raises(ValueError, match="left to the Python twin"):
                speedups.column_sizes(*parts, heads, columns.timestamps, columns.count)
    with pytest.raises(UsageError):
        build_column_batch(columns, start, stop, timestamp=timestamp)
    if sizes:
        with pytest.raises(UsageError):
            column_sizes(columns)


def _with(column: BinaryColumn, **changes: Any) -> BinaryColumn:
    fields = {name: getattr(column, name) for name in BinaryColumn.__slots__}  # type: ignore[attr-defined]
    return BinaryColumn(**(fields | changes))


def test_bad_offsets_are_refused() -> None:
    good = binary([b"abc", b"de"])
    backwards = array("i", [0, 3, 1]).tobytes()
    past = array("i", [0, 3, 9]).tobytes()
    negative = array("i", [-1, 3, 5]).tobytes()
    for offsets in (backwards, past, negative, b"\x00" * 8):  # the last: too short for two rows
        _both_refuse(ProduceColumns(2, _with(good, offsets=offsets)), stop=2)
    _both_refuse(ProduceColumns(2, good, _with(good, offsets=backwards)), stop=2)


def test_short_buffers_and_bad_parts_are_refused() -> None:
    good = binary([b"abc", None], bits=True)
    _both_refuse(ProduceColumns(2, _with(good, validity=b"")), stop=2)  # no bit for the rows
    _both_refuse(ProduceColumns(2, _with(good, first=-1)), stop=2)
    _both_refuse(ProduceColumns(2, _with(good, offsets=memoryview(bytes(24))[::2])), stop=2)  # not contiguous
    _both_refuse(ProduceColumns(2, good, timestamps=bytes(8)), stop=2, timestamp=None)  # one timestamp for two rows
    _both_refuse(ProduceColumns(1, binary([b"x"])), timestamp=True, sizes=False)  # not an int, a bool


def test_bad_headers_are_refused() -> None:
    layout = {"first": 0, "wide": False, "bits": False, "junk": False}
    good = header_column([(("name", b"v"),)], layout=layout)
    nameless = HeaderColumn(1, None, good.offsets, binary([None]), good.values)
    not_utf8 = HeaderColumn(1, None, good.offsets, binary([b"\xff\xfe"]), good.values)
    surrogate = HeaderColumn(1, None, good.offsets, binary([b"\xed\xa0\x80"]), good.values)
    past = HeaderColumn(1, None, array("i", [0, 2]).tobytes(), good.keys, good.values)
    for heads in (nameless, not_utf8, surrogate, past):
        _both_refuse(ProduceColumns(1, binary([b"v"]), headers=heads))
    # A null list is no headers, whatever its segment holds.
    null_list = HeaderColumn(1, b"\x00", good.offsets, binary([None]), good.values)
    assert build_column_batch(ProduceColumns(1, binary([b"v"]), headers=null_list), 0, 1, timestamp=5) == (
        build_record_batch([(None, b"v", 5, None)])
    )


def test_rows_and_timestamps_must_be_given_right() -> None:
    columns = ProduceColumns(2, binary([b"a", b"b"]))
    for start, stop in ((0, 0), (1, 1), (0, 3), (-1, 1)):
        with pytest.raises(UsageError):
            build_column_batch(columns, start, stop, timestamp=1)
    with pytest.raises(UsageError):
        build_column_batch(columns, 0, 2)  # no timestamp at all
    with pytest.raises(UsageError):
        ProduceColumns(3, binary([b"a", b"b"]))  # counts differ
    for stamps in ([2**63 - 1, -2], [-(2**63), 1]):  # deltas past int64: Python's error, C refuses
        table = ProduceColumns(2, binary([b"a", b"b"]), timestamps=array("q", stamps).tobytes())
        with pytest.raises(UsageError):
            build_column_batch(table, 0, 2)
