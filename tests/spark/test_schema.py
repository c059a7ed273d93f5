"""Columns: the read schema matches Spark's Kafka source, write columns are checked by name and type, and Arrow
batches convert both ways exactly."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from bruce.spark.options import OptionError
from bruce.spark.schema import (
    ARROW_READ_SCHEMA,
    BadRow,
    arrow_rows,
    check_write_schema,
    row_sends,
)

BIN, STR, INT, LONG = BinaryType(), StringType(), IntegerType(), LongType()


def _headers(key: DataType = STR, value: DataType = BIN, names: tuple[str, str] = ("key", "value")) -> ArrayType:
    return ArrayType(StructType([StructField(names[0], key), StructField(names[1], value)]))


def _schema(*columns: tuple[str, DataType]) -> StructType:
    return StructType([StructField(name, kind) for name, kind in columns])


def test_arrow_read_schema_is_sparks_kafka_shape() -> None:
    assert [(f.name, str(f.type)) for f in ARROW_READ_SCHEMA] == [
        ("key", "binary"),
        ("value", "binary"),
        ("topic", "string"),
        ("partition", "int32"),
        ("offset", "int64"),
        ("timestamp", "timestamp[us, tz=UTC]"),
        ("timestampType", "int32"),
        ("headers", "list<element: struct<key: string, value: binary>>"),
    ]


@pytest.mark.parametrize(
    "columns",
    [
        [("value", BIN)],
        [("value", STR), ("key", STR), ("topic", STR), ("partition", INT), ("partition_key", LONG)],
        [("value", BIN), ("key", BIN), ("headers", _headers(value=STR)), ("timestamp", LONG)],
        [("value", BIN), ("partition", ShortType()), ("timestamp", TimestampType())],
        [("value", BIN), ("timestamp", TimestampNTZType())],
        [("value", BIN), ("offset", LONG), ("timestampType", INT), ("partitionKey", MapType(STR, BIN))],  # ignored
    ],
)
def test_accepted_write_schemas(columns: list[tuple[str, DataType]]) -> None:
    check_write_schema(_schema(*columns), topic_option="t", daemon=False)


@pytest.mark.parametrize(
    ("columns", "topic", "daemon", "message"),
    [
        ([("key", BIN)], "t", False, "needs a 'value' column"),
        ([("value", BIN)], None, False, "no topic"),
        ([("value", INT)], "t", False, "'value' \\(int\\): must be binary or string"),
        ([("value", BIN), ("partition", STR)], "t", False, "'partition'.*must be an integer"),
        ([("value", BIN), ("timestamp", STR)], "t", False, "must be a timestamp or long"),
        ([("value", BIN), ("headers", MapType(STR, BIN))], "t", False, "array<struct<key: string, value: binary>>"),
        ([("value", BIN), ("headers", _headers(names=("k", "v")))], "t", False, "array<struct"),
        ([("value", BIN), ("headers", _headers(key=BIN))], "t", False, "array<struct"),
        ([("value", BIN), ("headers", _headers())], "t", True, "'headers' cannot go through"),
        ([("value", BIN), ("partition", INT)], "t", True, "'partition' cannot go through"),
    ],
)
def test_refused_write_schemas(
    columns: list[tuple[str, DataType]], topic: str | None, daemon: bool, message: str
) -> None:
    with pytest.raises(OptionError, match=message):
        check_write_schema(_schema(*columns), topic_option=topic, daemon=daemon)


def test_arrow_rows_converts_columns() -> None:
    header = pa.struct([("key", pa.string()), ("value", pa.string())])
    batch = pa.RecordBatch.from_pydict(
        {
            "value": pa.array(["é", None], pa.string()),
            "key": pa.array([b"k", None], pa.binary()),
            "topic": pa.array(["a", None]),
            "partition_key": pa.array([-1, None], pa.int64()),
            "headers": pa.array([[{"key": "h", "value": "x"}], None], pa.list_(header)),
            "timestamp": pa.array([1_700_000_000_123_456, None], pa.timestamp("us", tz="Etc/UTC")),
        }
    )
    rows = arrow_rows(batch)
    assert rows.count == 2
    assert rows.value == ["é".encode(), None]
    assert rows.key == [b"k", None]
    assert rows.topic == ["a", None]
    assert rows.partition_key == [-1, None]
    assert rows.partition is None
    assert rows.headers == [(("h", b"x"),), None]
    assert rows.timestamp == [1_700_000_000_123, None]


def test_arrow_rows_long_timestamps_and_bad_header() -> None:
    rows = arrow_rows(pa.RecordBatch.from_pydict({"value": [b"v"], "timestamp": pa.array([42], pa.int64())}))
    assert (rows.value, rows.timestamp, rows.key) == ([b"v"], [42], None)
    header = pa.struct([("key", pa.string()), ("value", pa.binary())])
    bad = pa.RecordBatch.from_pydict(
        {"value": [b"v"], "headers": pa.array([[{"key": None, "value": b""}]], pa.list_(header))}
    )
    with pytest.raises(BadRow, match="non-null key"):
        arrow_rows(bad)


def test_the_topic_option_wins_over_the_topic_column() -> None:
    rows = arrow_rows(pa.RecordBatch.from_pydict({"value": [b"a", b"b"], "topic": ["column", None]}))
    assert [send[0] for send in row_sends(rows, "option")] == ["option", "option"]  # Spark's rule
    rows = arrow_rows(pa.RecordBatch.from_pydict({"value": [b"a"], "topic": ["column"]}))
    assert [send[0] for send in row_sends(rows, None)] == ["column"]
