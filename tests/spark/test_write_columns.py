"""A write's Arrow batch as the producer's columns (bruce.spark.write_columns), without a broker: every row lands
where row_sends routes it (each partitioner; partition, partition_key and key columns, nulls among them; partitions
unavailable), each partition's rows in their order, with its key, value, timestamp and headers as row_sends reads
them; bad rows are refused with row_sends' errors; the buffers are the batch's own."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bruce.producer import PARTITIONERS, Partition, Topic, partition_for_key
from bruce.spark.schema import BadRow, arrow_rows, row_sends
from bruce.spark.write_columns import by_topic, plan

_HEADER = pa.struct([("key", pa.string()), ("value", pa.binary())])


def topic(count: int, down: set[int] = frozenset()) -> Topic:  # type: ignore[assignment]
    up = tuple(p for p in range(count) if p not in down)
    return Topic("t", tuple(Partition(p, 1 if p in up else -1) for p in range(count)), dict.fromkeys(up, 1), up)


def landing(info: Topic, partition_key: int | None, pinned: bool) -> int | None:
    """Where the producer puts a row routed so (-1: any partition; None: nowhere)."""
    if partition_key is None:
        return -1
    if pinned:
        return partition_key if partition_key in info.leaders else None
    return partition_for_key(partition_key, info)


def placed(batch: pa.RecordBatch, info: Topic, partitioner: str) -> list[tuple[int | None, Any]]:
    """(partition, record) of each row as plan hands it over, in the order handed over."""
    planned = plan(batch, info, partitioner)
    assert planned is not None
    columns, runs = planned
    records = columns.records(0, columns.count, None if columns.timestamps is not None else 0)
    if runs is None:
        return [(-1, r) for r in records]
    out, start = [], 0
    for stop, key, pinned in runs:
        out += [(landing(info, key, pinned), r) for r in records[start:stop]]
        start = stop
    return out


def expected(batch: pa.RecordBatch, info: Topic, partitioner: str) -> list[tuple[int | None, Any]]:
    """(partition, record) of each row as row_sends routes it, in the batch's order."""
    out = []
    for _, value, key, partition, ts, headers, partition_key in row_sends(arrow_rows(batch), "t", partitioner):
        where = landing(info, partition, True) if partition is not None else landing(info, partition_key, False)
        out.append((where, (key, value, ts, tuple(headers) if headers else None)))
    return out


maybe_bytes = st.none() | st.binary(max_size=6)


@st.composite
def batches(draw: st.DrawFn) -> pa.RecordBatch:
    n = draw(st.integers(1, 40))
    columns: dict[str, pa.Array] = {"value": pa.array(draw(st.lists(maybe_bytes, min_size=n, max_size=n)), pa.binary())}
    if draw(st.booleans()):
        kind = draw(st.sampled_from([pa.binary(), pa.string(), pa.large_binary()]))
        keys = draw(
            st.lists(st.none() | st.sampled_from(["a", "b", "key-3", "long-key-number-4"]), min_size=n, max_size=n)
        )
        columns["key"] = pa.array([k if k is None or kind == pa.string() else k.encode() for k in keys], kind)
    if draw(st.booleans()):
        parts = st.none() | st.integers(0, 5) if draw(st.booleans()) else st.integers(0, 5)
        parts = parts | st.just(-1) if draw(st.integers(0, 9)) == 0 else parts  # a bad row, now and then
        columns["partition"] = pa.array(draw(st.lists(parts, min_size=n, max_size=n)), pa.int32())
    if draw(st.booleans()):
        pk = st.none() | st.integers(-(2**31), 2**32 - 1)
        pk = pk | st.sampled_from([2**32, -(2**31) - 1]) if draw(st.integers(0, 9)) == 0 else pk
        columns["partition_key"] = pa.array(draw(st.lists(pk, min_size=n, max_size=n)), pa.int64())
    if draw(st.booleans()):
        stamp = st.integers(0, 2**41)  # a null one is now: test_a_dataframe_read_from_kafka_...
        columns["timestamp"] = pa.array(draw(st.lists(stamp, min_size=n, max_size=n)), pa.int64())
    if draw(st.booleans()):
        item = st.fixed_dictionaries({"key": st.sampled_from(["h", "n"]), "value": maybe_bytes})
        lists = st.lists(st.none() | st.lists(item, max_size=2), min_size=n, max_size=n)
        columns["headers"] = pa.array(draw(lists), pa.list_(_HEADER))
    batch = pa.RecordBatch.from_pydict(columns)
    cut = draw(st.integers(0, n - 1))
    return batch.slice(cut, draw(st.integers(1, n - cut)))  # a slice: Arrow offsets everywhere


def _same_rows(got: list, want: list, stamped: bool) -> None:
    """The same rows (timestamps too when the batch has them: else both are now), each partition's in order."""
    assert len(got) == len(want)

    def by_partition(rows: list) -> dict:
        out: dict[int | None, list] = {}
        for where, (key, value, ts, headers) in rows:
            out.setdefault(where, []).append((key, value, ts if stamped else None, headers))
        if None in out:  # discarded (their partition is not available): no order among them
            out[None].sort(key=repr)
        return out

    assert by_partition(got) == by_partition(want)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=batches(), partitioner=st.sampled_from(sorted(PARTITIONERS)), count=st.integers(1, 6), data=st.data())
def test_rows_land_where_row_sends_routes_them_in_order(
    batch: pa.RecordBatch, partitioner: str, count: int, data
) -> None:
    down = data.draw(st.sets(st.integers(0, count - 1), max_size=count - 1))
    info = topic(count, down)
    try:
        want = expected(batch, info, partitioner)
    except BadRow:
        with pytest.raises(BadRow, match=r"negative|32 bits"):
            placed(batch, info, partitioner)
        return
    _same_rows(placed(batch, info, partitioner), want, "timestamp" in batch.schema.names)


def _address(view: Any) -> int:
    return pa.py_buffer(view).address


def test_plain_rows_are_one_run_to_any_partition_over_the_batch_buffers() -> None:
    batch = pa.RecordBatch.from_pydict({"value": [b"a", b"bb", None]}).slice(1)
    columns, runs = plan(batch, topic(3), "murmur2_random")  # type: ignore[misc]
    assert runs is None and columns.values.first == 1 and columns.values.count == 2
    assert _address(columns.values.data) == batch.column(0).buffers()[2].address  # the batch's own buffer: no copy
    assert columns.records(0, 2, 7) == [(None, b"bb", 7, None), (None, None, 7, None)]


def test_keys_go_where_javas_murmur2_puts_them() -> None:
    from kafka.partitioner.default import murmur2 as java_murmur2

    keys = [b"k%d" % i for i in range(50)]
    batch = pa.RecordBatch.from_pydict({"value": [b"v"] * 50, "key": keys})
    got = placed(batch, topic(7), "murmur2_random")
    assert [where for where, _ in sorted(got, key=lambda r: r[1][0])] == [
        (java_murmur2(k) & 0x7FFFFFFF) % 7 for k in sorted(keys)
    ]


def test_a_dataframe_read_from_kafka_goes_back_to_its_partitions_without_a_sort() -> None:
    batch = pa.RecordBatch.from_pydict(
        {
            "key": [b"k1", None],
            "value": [b"a", b"b"],
            "topic": ["t", "t"],
            "partition": pa.array([2, 2], pa.int32()),
            "offset": pa.array([10, 11], pa.int64()),
            "timestamp": pa.array([1_700_000_000_000_000, None], pa.timestamp("us", tz="UTC")),
            "timestampType": pa.array([0, 0], pa.int32()),
        }
    )
    ((name, rows),) = by_topic(batch, None)
    columns, runs = plan(rows, topic(3), "murmur2_random")  # type: ignore[misc]
    assert name == "t" and runs == [(2, 2, True)]
    assert columns.keys is not None and _address(columns.keys.data) == batch.column(0).buffers()[2].address
    (_, _, first, _), (_, _, now, _) = columns.records(0, 2)
    assert first == 1_700_000_000_000 and now > 1_700_000_000_000


def test_topics_split_and_refusals() -> None:
    batch = pa.RecordBatch.from_pydict({"value": [b"a", b"b", b"c"], "topic": ["x", "y", "x"]})
    assert [(t, rows.column(0).to_pylist()) for t, rows in by_topic(batch, None)] == [
        ("x", [b"a", b"c"]),
        ("y", [b"b"]),
    ]
    assert [t for t, _ in by_topic(batch, "option")] == ["option"]  # the option wins (Spark's rule)
    nulls = pa.RecordBatch.from_pydict({"value": [b"a"], "topic": pa.array([None], pa.string())})
    with pytest.raises(BadRow, match="null topic"):
        list(by_topic(nulls, None))
    headers = pa.array([[{"key": None, "value": b"v"}]], pa.list_(_HEADER))
    with pytest.raises(BadRow, match="non-null key"):
        plan(pa.RecordBatch.from_pydict({"value": [b"a"], "headers": headers}), topic(1), "murmur2_random")
    assert plan(pa.RecordBatch.from_pydict({"value": [b"a"]}), None, "murmur2_random") is None  # topic unknown
