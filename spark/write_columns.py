"""A write's Arrow batch as the producer's columns: each topic's rows, grouped by partition, handed over as buffers.

Rules:
- :func:`by_topic` splits a batch by topic: the ``topic`` option (Spark's rule: it wins over a column), else the
  ``topic`` column (a null topic is a :class:`~bruce.spark.schema.BadRow`); one topic takes no copy.
- :func:`plan` makes one topic's rows into :class:`~bruce.wire.ProduceColumns` and the runs of
  ``Producer.send_columns``, with no Python object per row. ``value`` and ``key`` are the batch's own buffers (a
  string column is cast to binary: no copy); ``timestamp`` becomes int64 epoch milliseconds (a null one: now);
  ``headers`` (``list<struct<key, value>>``) its list offsets over a key and a value column (a null list: no
  headers; a null header or header name: BadRow).
- Routing is :func:`~bruce.spark.schema.row_sends`' per row, computed on columns: ``partition`` pinned (negative:
  BadRow); else ``partition_key`` (outside 32 bits: BadRow) through PartitionKey routing; else the key through
  ``kafka.partitioner`` (murmur2 over the key column in C, :func:`~bruce.wire.murmur2_column`; the other
  partitioners per row), a partition key too, or any partition. A partition key is taken modulo the topic's
  partition count, so rows whose keys meet there route as one.
- Grouping keeps the order of the rows whose data chooses their partition (partition, partition key, key): every row
  gets the partition the producer will give it (the cluster view's PartitionKey choice for a partition key; -1 for
  any partition), a stable sort by that partition orders the rows (one ``take``; none when all go to one place),
  and each run of consecutive rows routed alike is one run for the producer. Rows for any partition keep their
  order among themselves (the producer picks their partitions). The view must be the producer's at the time of
  ``send_columns`` (no await between).
- A topic the cluster view does not know: :func:`plan` returns None (its rows go one by one, and wait for it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from bruce.producer import ColumnRun, Topic, key_to_partition_key, partition_for_key
from bruce.wire import BinaryColumn, HeaderColumn, ProduceColumns, murmur2_column

from .schema import BadRow

_PINNED, _KEYED, _ANY = 0, 1, 2  # how a row is routed: the low bits of its run code
_MURMUR2 = ("murmur2", "murmur2_random")


def by_topic(batch: pa.RecordBatch, topic_option: str | None) -> Iterator[tuple[str, pa.RecordBatch]]:
    """Each topic of ``batch`` with its rows, in their order (see the module rules)."""
    names = batch.schema.names
    if topic_option is not None or "topic" not in names:
        if topic_option is None:
            raise BadRow("a row has a null topic and the write has no 'topic' option")
        yield topic_option, batch
        return
    topics = batch.column(names.index("topic"))
    if topics.null_count:
        raise BadRow("a row has a null topic and the write has no 'topic' option")
    distinct = pc.unique(topics).to_pylist()
    if len(distinct) == 1:
        yield distinct[0], batch
        return
    for topic in distinct:
        yield topic, batch.filter(pc.equal(topics, topic))


def plan(
    batch: pa.RecordBatch, info: Topic | None, partitioner: str
) -> tuple[ProduceColumns, list[ColumnRun] | None] | None:
    """One topic's rows as ``send_columns``' columns and runs (None: every row to any partition); None when the
    topic is not in the cluster view (``info``). Raises :class:`BadRow`."""
    if info is None:
        return None
    names = batch.schema.names
    routes = _routes(batch, names, info, partitioner)
    runs = None
    if routes is not None:
        targets, codes = routes
        bounds = pc.min_max(targets).as_py()
        if bounds["min"] != bounds["max"]:  # rows for several partitions: each partition's together, in order
            order = pc.sort_indices(targets)
            batch, codes = batch.take(order), codes.take(order)
        runs = _runs(codes)
    return _columns(batch, names), runs


def _routes(batch: pa.RecordBatch, names: list[str], info: Topic, partitioner: str) -> tuple[pa.Array, pa.Array] | None:
    """Each row's partition as the producer will choose it (-1: any) and its run code (routing kind and partition
    or partition key modulo the partition count); None when every row goes to any partition."""
    n = batch.num_rows
    count = len(info.partitions)
    pinned = None
    if "partition" in names:
        pinned = batch.column(names.index("partition")).cast(pa.int64())
        low = pc.min(pinned).as_py()
        if low is not None and low < 0:
            raise BadRow(f"partition {low} is negative")
        if not pinned.null_count:
            return pinned, pc.multiply(pinned, 4)  # every row pinned (a DataFrame read from Kafka)
    keys = batch.column(names.index("key")) if "key" in names else None
    if keys is not None and not pa.types.is_binary(keys.type) and not pa.types.is_large_binary(keys.type):
        keys = keys.cast(pa.large_binary() if pa.types.is_large_string(keys.type) else pa.binary())
    if partitioner in _MURMUR2 and keys is not None:  # Java's placement: (murmur2(key) & 0x7fffffff) % count
        hashes = pa.Array.from_buffers(pa.uint32(), n, [None, pa.py_buffer(murmur2_column(_binary(keys)))])
        pkeys = pc.bit_wise_and(hashes.cast(pa.int64()), 0x7FFFFFFF)
        if partitioner == "murmur2_random" and keys.null_count:
            pkeys = pc.if_else(keys.is_valid(), pkeys, pa.scalar(None, pa.int64()))
    elif keys is not None:
        pkeys = pa.array([key_to_partition_key(k, partitioner) for k in keys.to_pylist()], pa.int64())
    else:
        constant = key_to_partition_key(None, partitioner)
        pkeys = pa.nulls(n, pa.int64()) if constant is None else pa.repeat(pa.scalar(constant, pa.int64()), n)
    if "partition_key" in names:
        given = batch.column(names.index("partition_key")).cast(pa.int64())
        if pinned is not None:  # a pinned row's partition key is never read (nor checked)
            given = pc.if_else(pinned.is_null(), given, pa.scalar(None, pa.int64()))
        bounds = pc.min_max(given).as_py()
        for bad in (bounds["min"], bounds["max"]):
            if bad is not None and not -(2**31) <= bad < 2**32:
                raise BadRow(f"partition_key {bad} does not fit in 32 bits")
        pkeys = pc.coalesce(given, pkeys)
    if (pinned is None and pkeys.null_count == n) or not count:
        return None  # every row to any partition (or, with no partition at all, discarded alike)
    index = pc.bit_wise_and(pkeys, 0xFFFFFFFF)
    index = pc.subtract(index, pc.multiply(pc.divide(index, count), count))  # PartitionKey's modulus
    table = pa.array([_or_none(partition_for_key(i, info)) for i in range(count)], pa.int64())
    targets = pc.fill_null(table.take(index), -1)
    codes = pc.fill_null(pc.add(pc.multiply(index, 4), _KEYED), _ANY)
    if pinned is not None:
        targets = pc.coalesce(pinned, targets)
        codes = pc.coalesce(pc.multiply(pinned, 4), codes)
    return targets, codes


def _or_none(partition: int | None) -> int:
    return -1 if partition is None else partition


def _runs(codes: pa.Array) -> list[ColumnRun]:
    """The runs of consecutive rows with the same code (kind in the low two bits, partition or key above)."""
    n = len(codes)
    if not n:
        return []
    changes = pc.indices_nonzero(pc.not_equal(codes[1:], codes[:-1])).to_pylist()
    starts = [0, *(i + 1 for i in changes)]
    stops = [*starts[1:], n]
    out: list[ColumnRun] = []
    for start, stop in zip(starts, stops, strict=True):
        code = codes[start].as_py()
        kind, value = code & 3, code >> 2
        out.append((stop, None if kind == _ANY else value, kind == _PINNED))
    return out


def _binary(column: pa.Array) -> BinaryColumn:
    """An Arrow binary (or string: cast, no copy) column's buffers as they are."""
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        column = column.cast(pa.large_binary() if pa.types.is_large_string(kind) else pa.binary())
    validity, offsets, data = column.buffers()[:3]
    return BinaryColumn(
        len(column),
        column.null_count,
        None if validity is None else memoryview(validity),
        memoryview(offsets),
        memoryview(data) if data is not None else b"",
        column.offset,
        pa.types.is_large_binary(column.type),
    )


def _columns(batch: pa.RecordBatch, names: list[str]) -> ProduceColumns:
    n = batch.num_rows
    keys = _binary(batch.column(names.index("key"))) if "key" in names else None
    stamps = None
    if "timestamp" in names:
        column = batch.column(names.index("timestamp"))
        if pa.types.is_timestamp(column.type):
            column = pc.divide(column.cast(pa.timestamp("us", tz=column.type.tz)).cast(pa.int64()), 1000)
        column = pc.fill_null(column.cast(pa.int64()), time.time_ns() // 1_000_000)
        data = memoryview(column.buffers()[1])
        stamps = data[8 * column.offset : 8 * (column.offset + n)]
    headers = _headers(batch.column(names.index("headers"))) if "headers" in names else None
    return ProduceColumns(n, _binary(batch.column(names.index("value"))), keys, stamps, headers)


def _headers(lists: pa.Array) -> HeaderColumn:
    items = pc.list_flatten(lists)  # the headers of the rows that have some
    if items.null_count or items.field("key").null_count:
        raise BadRow("a header needs a non-null key")
    entries = lists.values  # every entry the offsets may point at
    validity, offsets = lists.buffers()[:2]
    return HeaderColumn(
        len(lists),
        None if validity is None or not lists.null_count else memoryview(validity),
        memoryview(offsets),
        _binary(entries.field("key")),
        _binary(entries.field("value")),
        lists.offset,
    )
