"""Fetched records as Arrow: the read schema's columns wrapped around the buffers of bruce.wire's columnar decoder.

Rules:
- :func:`to_arrow` makes one Arrow batch in the read schema (:mod:`bruce.spark.schema`) of a Fetch answer's
  :class:`~bruce.wire.RecordColumns`, with no Python object per record: ``key``, ``value`` and ``offset`` are the
  decoder's buffers themselves (``pyarrow.Array.from_buffers``, no copy); ``timestamp`` is one multiplication (epoch
  milliseconds to microseconds; null where a record has none), ``timestampType`` one cast, ``topic`` and
  ``partition`` one repeated value each, ``headers`` a list array over the header columns (null for a record without
  headers, as in Spark).
- The rows kept are those with ``start <= offset < end`` outside the ``dropped`` batches (control batches, aborted
  transactions): one filter (a copy) when some row is left out, none otherwise.
- :func:`flagged` finds the batches read_committed decides on (transactional or control, magic 2) with vectorized
  compute, so only those are looked at one by one.
"""

from __future__ import annotations

from collections.abc import Collection

import pyarrow as pa
import pyarrow.compute as pc

from bruce.wire import BinaryColumn, RecordColumns

from .schema import ARROW_READ_SCHEMA, ARROW_READ_SCHEMA_NO_HEADERS

_MICROS = pa.timestamp("us", tz="UTC")
_BINARY = pa.binary()
_HEADERS = ARROW_READ_SCHEMA.field("headers").type
_HEADER_FIELDS = list(_HEADERS.value_type)
_TRANSACTIONAL_OR_CONTROL = 0x30


def _fixed(kind: pa.DataType, count: int, data: bytes) -> pa.Array:
    return pa.Array.from_buffers(kind, count, [None, pa.py_buffer(data)])


def _binary(column: BinaryColumn, kind: pa.DataType = _BINARY) -> pa.Array:
    validity = None if column.validity is None else pa.py_buffer(column.validity)
    buffers = [validity, pa.py_buffer(column.offsets), pa.py_buffer(column.data)]
    return pa.Array.from_buffers(kind, column.count, buffers, null_count=column.null_count)


def flagged(columns: RecordColumns) -> list[int]:
    """The indices of the batches that are transactional or control batches (read_committed's concern)."""
    batches = columns.batches
    attributes = _fixed(pa.int16(), batches.count, batches.attributes)
    magic = _fixed(pa.int8(), batches.count, batches.magic)
    bits = pc.not_equal(pc.bit_wise_and(attributes, pa.scalar(_TRANSACTIONAL_OR_CONTROL, pa.int16())), 0)
    found: list[int] = pc.indices_nonzero(pc.and_(bits, pc.equal(magic, 2))).to_pylist()
    return found


def _timestamps(columns: RecordColumns) -> pa.Array:
    millis = _fixed(pa.int64(), columns.count, columns.timestamps)
    micros = pc.multiply(millis, 1000).view(_MICROS)
    if columns.count and pc.min(millis).as_py() < 0:  # a record without a timestamp (-1, magic 0) has a null one
        micros = pc.if_else(pc.less(millis, 0), pa.scalar(None, _MICROS), micros)
    return micros


def _headers(columns: RecordColumns) -> pa.Array:
    n = columns.count
    if not columns.header_keys.count:  # the common case: every record without headers, all null
        return pa.nulls(n, _HEADERS)
    ends = _fixed(pa.int32(), n + 1, columns.header_offsets)
    pairs = pa.StructArray.from_arrays(
        [_binary(columns.header_keys, pa.string()), _binary(columns.header_values)], fields=_HEADER_FIELDS
    )
    none = pc.equal(pc.subtract(ends.slice(1), ends.slice(0, n)), 0)
    return pa.ListArray.from_arrays(ends, pairs, type=_HEADERS, mask=none)


def _kept(columns: RecordColumns, offsets: pa.Array, start: int, end: int, dropped: Collection[int]) -> pa.Array | None:
    """The rows to keep (a boolean mask), None when all of them are."""
    mask = None
    if columns.count:
        low, high = pc.min_max(offsets).values()
        if low.as_py() < start or high.as_py() >= end:
            mask = pc.and_(pc.greater_equal(offsets, start), pc.less(offsets, end))
    if dropped:
        rows = _fixed(pa.int32(), columns.batches.count + 1, columns.batches.rows)
        batch_of_row = pc.list_parent_indices(pa.ListArray.from_arrays(rows, pa.nulls(columns.count)))
        outside = pc.invert(pc.is_in(batch_of_row, value_set=pa.array(sorted(dropped), pa.int64())))
        mask = outside if mask is None else pc.and_(mask, outside)
    return mask


def to_arrow(
    topic: str,
    partition: int,
    columns: RecordColumns,
    *,
    start: int,
    end: int,
    dropped: Collection[int] = (),
    include_headers: bool = True,
) -> pa.RecordBatch:
    """The rows of ``columns`` with ``start <= offset < end`` outside the ``dropped`` batches, in the read schema
    (with or without ``headers``)."""
    n = columns.count
    offsets = _fixed(pa.int64(), n, columns.offsets)
    arrays = [
        _binary(columns.keys),
        _binary(columns.values),
        pa.repeat(pa.scalar(topic, pa.string()), n),
        pa.repeat(pa.scalar(partition, pa.int32()), n),
        offsets,
        _timestamps(columns),
        _fixed(pa.int8(), n, columns.timestamp_types).cast(pa.int32()),
    ]
    if include_headers:
        arrays.append(_headers(columns))
    schema = ARROW_READ_SCHEMA if include_headers else ARROW_READ_SCHEMA_NO_HEADERS
    batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
    mask = _kept(columns, offsets, start, end, dropped)
    return batch if mask is None else batch.filter(mask)


def first_at_or_after(rows: pa.RecordBatch, timestamp: int) -> int | None:
    """The offset of the first of ``rows`` (in the read schema) whose timestamp is ≥ ``timestamp`` (epoch ms), None
    when none is."""
    late = pc.greater_equal(rows.column("timestamp"), pa.scalar(timestamp * 1000, _MICROS))
    hits = pc.indices_nonzero(late)
    return rows.column("offset")[hits[0].as_py()].as_py() if len(hits) else None
