"""Columns of the data source: the read schema (Spark's Kafka source shape) and the columns a write accepts.

Rules:
- Reads produce exactly Spark's Kafka source columns: ``key``, ``value`` (binary), ``topic``, ``partition``,
  ``offset``, ``timestamp`` (null when the record has none), ``timestampType`` (0 create time, 1 log append time),
  and, only with ``includeHeaders`` (as Spark), ``headers`` (array of key/value structs; null when the record has
  none, as in Spark). Rows leave as Arrow record batches whose schema matches Spark's exactly
  (:mod:`bruce.spark.columns` makes them).
- Writes take ``value`` (required; binary or string, UTF-8 encoded), and optionally ``key`` (binary or string),
  ``topic`` (string), ``partition`` (integer), ``partition_key`` (integer: Bruce's PartitionKey), ``headers`` (array
  of structs with a string ``key`` and a binary or string ``value``), ``timestamp`` (timestamp, or long epoch
  milliseconds). One of these with another type is refused when the query is planned, naming the column. Any other
  column is ignored, as Spark's Kafka sink ignores it: a DataFrame read from Kafka (``offset``, ``timestampType``)
  can be written back as it is.
- The ``topic`` option, when given, wins over a ``topic`` column (Spark's rule); without it, a row's topic is its
  ``topic`` column.
- The daemon's datagrams carry no headers and no explicit partition: those columns are refused for ``socket`` writes.
- Routing per row, both modes (:func:`row_sends`): ``partition`` as given; else ``partition_key`` (Bruce's
  PartitionKey); else the key through the write's ``kafka.partitioner`` (default ``murmur2_random``: where Spark's
  Kafka sink and Java's producer put it), as a partition key under the same PartitionKey rule; else any partition.
  A null timestamp is now. A row that cannot be written (a null topic, ...) raises :class:`BadRow`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    ByteType,
    DataType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from bruce.producer import key_to_partition_key
from bruce.wire import UsageError

from .option_values import OptionError

READ_SCHEMA_DDL = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int"
)
HEADERS_DDL = ", headers array<struct<key: string, value: binary>>"  # includeHeaders

_HEADER = pa.struct([("key", pa.string()), ("value", pa.binary())])
ARROW_READ_SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestampType", pa.int32()),
        ("headers", pa.list_(pa.field("element", _HEADER))),
    ]
)
ARROW_READ_SCHEMA_NO_HEADERS = ARROW_READ_SCHEMA.remove(ARROW_READ_SCHEMA.get_field_index("headers"))

_PARTITION_KEY_RANGE = range(-(2**31), 2**32)
_INTEGERS = (ByteType, ShortType, IntegerType, LongType)
_BYTES_OR_TEXT = (BinaryType, StringType)


class BadRow(UsageError):
    """A row the data source cannot write (a null topic with no ``topic`` option, a negative partition, ...)."""

    reason = "BAD_ROW"


# ---------------------------------------------------------------- writing


def check_write_schema(schema: StructType, *, topic_option: str | None, daemon: bool) -> None:
    """Refuse, with the column named, a DataFrame the data source cannot write (see the module rules)."""
    fields = {f.name: f.dataType for f in schema.fields}
    for name, kind in fields.items():
        problem = _column_problem(name, kind)
        if problem:
            raise OptionError(f"cannot write column {name!r} ({kind.simpleString()}): {problem}")
    if "value" not in fields:
        raise OptionError("a write needs a 'value' column (binary or string)")
    if "topic" not in fields and not topic_option:
        raise OptionError("no topic: give the 'topic' option or a 'topic' column")
    if daemon:
        for name in ("headers", "partition"):
            if name in fields:
                raise OptionError(
                    f"column {name!r} cannot go through the bruce daemon (its datagrams have no {name}); "
                    "write with 'bootstrap.servers' instead, or use 'partition_key'"
                )


def _column_problem(name: str, kind: DataType) -> str:
    if name in ("value", "key"):
        return "" if isinstance(kind, _BYTES_OR_TEXT) else "must be binary or string"
    if name == "topic":
        return "" if isinstance(kind, StringType) else "must be a string"
    if name in ("partition", "partition_key"):
        return "" if isinstance(kind, _INTEGERS) else "must be an integer"
    if name == "timestamp":
        return "" if isinstance(kind, (TimestampType, TimestampNTZType, LongType)) else "must be a timestamp or long ms"
    if name == "headers":
        ok = (
            isinstance(kind, ArrayType)
            and isinstance(kind.elementType, StructType)
            and [f.name for f in kind.elementType.fields] == ["key", "value"]
            and isinstance(kind.elementType["key"].dataType, StringType)
            and isinstance(kind.elementType["value"].dataType, _BYTES_OR_TEXT)
        )
        return "" if ok else "must be array<struct<key: string, value: binary>>"
    return ""  # any other column is ignored (Spark's rule)


@dataclass(slots=True)
class Rows:
    """One Arrow batch's columns as Python lists (None: the column is absent). Strings are encoded to bytes,
    timestamps are epoch milliseconds, headers are tuples of (key, value)."""

    count: int
    value: list[bytes | None]
    key: list[bytes | None] | None = None
    topic: list[str | None] | None = None
    partition: list[int | None] | None = None
    partition_key: list[int | None] | None = None
    headers: list[tuple[tuple[str, bytes | None], ...] | None] | None = None
    timestamp: list[int | None] | None = None


def arrow_rows(batch: pa.RecordBatch) -> Rows:
    """The columns of one batch handed to a writer."""
    names = batch.schema.names
    rows = Rows(batch.num_rows, _as_bytes(batch.column(names.index("value"))))
    if "key" in names:
        rows.key = _as_bytes(batch.column(names.index("key")))
    for name in ("topic", "partition", "partition_key"):
        if name in names:
            setattr(rows, name, batch.column(names.index(name)).to_pylist())
    if "timestamp" in names:
        column = batch.column(names.index("timestamp"))
        if pa.types.is_timestamp(column.type):
            column = pc.divide(column.cast(pa.timestamp("us", tz=column.type.tz)).cast(pa.int64()), 1000)
        rows.timestamp = column.to_pylist()
    if "headers" in names:
        rows.headers = [_headers(h) for h in batch.column(names.index("headers")).to_pylist()]
    return rows


def _as_bytes(column: pa.Array) -> list[Any]:
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        column = column.cast(pa.binary() if pa.types.is_string(column.type) else pa.large_binary())
    values: list[Any] = column.to_pylist()
    return values


def _headers(items: list[dict[str, Any]] | None) -> tuple[tuple[str, bytes | None], ...] | None:
    if not items:
        return None
    out = []
    for item in items:
        if item is None or item["key"] is None:
            raise BadRow("a header needs a non-null key")
        value = item["value"]
        out.append((item["key"], value.encode() if isinstance(value, str) else value))
    return tuple(out)


Headers = Sequence[tuple[str, bytes | None]] | None
# One row as Producer.send's arguments: topic, value, key, partition, timestamp, headers, partition_key
Send = tuple[str, bytes | None, bytes | None, int | None, int, Headers, int | None]


def row_sends(rows: Rows, default_topic: str | None, partitioner: str = "murmur2_random") -> Iterator[Send]:
    """Each row of one batch as ``Producer.send``'s arguments, routed per the module rules."""
    n = rows.count
    now = time.time_ns() // 1_000_000
    if default_topic is not None:
        rows.topic = None  # the topic option wins over the column (Spark's rule)
    timestamps = repeat(now, n) if rows.timestamp is None else (now if t is None else t for t in rows.timestamp)
    if rows.topic is None and rows.partition is None and rows.partition_key is None and rows.headers is None:
        if default_topic is None:
            raise BadRow("a row has a null topic and the write has no 'topic' option")
        if rows.key is None and partitioner.endswith("random"):
            for v, t in zip(rows.value, timestamps, strict=False):
                yield default_topic, v, None, None, t, None, None
            return
        for k, v, t in zip(rows.key or repeat(None), rows.value, timestamps, strict=False):
            yield default_topic, v, k, None, t, None, key_to_partition_key(k, partitioner)
        return
    columns = zip(
        rows.value,
        timestamps,
        rows.key or repeat(None),
        rows.topic or repeat(None),
        rows.partition or repeat(None),
        rows.partition_key or repeat(None),
        rows.headers or repeat(None),
        strict=False,
    )
    for value, ts, key, topic, partition, partition_key, headers in columns:
        topic = topic or default_topic
        if topic is None:
            raise BadRow("a row has a null topic and the write has no 'topic' option")
        if partition is not None:
            if partition < 0:
                raise BadRow(f"partition {partition} is negative")
            yield topic, value, key, partition, ts, headers, None
        elif partition_key is not None:
            if partition_key not in _PARTITION_KEY_RANGE:
                raise BadRow(f"partition_key {partition_key} does not fit in 32 bits")
            yield topic, value, key, None, ts, headers, partition_key
        else:
            yield topic, value, key, None, ts, headers, key_to_partition_key(key, partitioner)
