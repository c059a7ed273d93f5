"""bruce.spark — Kafka for PySpark through Spark's Python Data Source API, as format ``bruce`` (see docs/spark.md).

::

    import bruce.spark
    bruce.spark.register(spark)
    df.write.format("bruce").option("bootstrap.servers", "127.0.0.1:9092").option("topic", "t").save()
    spark.read.format("bruce").option("bootstrap.servers", "127.0.0.1:9092").option("topic", "t").load()

Rules: options are checked when the query is planned (:mod:`bruce.spark.options`); the classes below only wire
Spark's entry points to the readers and writers. The package must be importable on every executor: install
bruce-kafka[spark] into the Python the executors run (``--py-files`` cannot carry it: docs/spark.md, "On a cluster").
"""

from __future__ import annotations

import os
import sys
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from .delivery import DeliveryFailed, KafkaUnavailable, WriteSummary
from .kafka_reader import KafkaReader, KafkaReadError
from .option_values import OptionError
from .options import WriteOptions, read_options, write_options
from .reader import BruceReader
from .save_mode import default_to_append
from .schema import HEADERS_DDL, READ_SCHEMA_DDL, BadRow, check_write_schema
from .stream_reader import BruceStreamReader
from .stream_writer import BruceStreamWriter
from .streams import start_stream
from .writer import BruceWriter

__all__ = [
    "BadRow",
    "BruceDataSource",
    "DeliveryFailed",
    "KafkaReadError",
    "KafkaReader",
    "KafkaUnavailable",
    "OptionError",
    "WriteSummary",
    "local_session",
    "register",
    "start_stream",
]


class BruceDataSource(DataSource):
    """The data source ``format("bruce")``: batch and streaming reads and writes of Kafka topics."""

    @classmethod
    def name(cls) -> str:
        return "bruce"

    def schema(self) -> str:
        wanted = {k.lower(): v for k, v in self.options.items()}.get("includeheaders", "")
        return READ_SCHEMA_DDL + (HEADERS_DDL if str(wanted).strip().lower() == "true" else "")

    def reader(self, schema: StructType) -> BruceReader:
        return BruceReader(read_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> BruceStreamReader:
        return BruceStreamReader(read_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> BruceWriter:
        if overwrite:  # Spark's Kafka sink refuses Overwrite too
            raise OptionError("save mode Overwrite is not allowed for Kafka: a topic cannot be overwritten; use Append")
        options = _write_options(self.options, schema)
        if options.marker_topic is not None:
            raise OptionError("option 'exactlyOnce': only streaming writes (writeStream) are written exactly once")
        return BruceWriter(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> BruceStreamWriter:
        # overwrite: output mode Complete, whose every micro-batch is the whole result; Spark's Kafka sink appends it
        # as it is, and so does this one
        return BruceStreamWriter(_write_options(self.options, schema))


def _write_options(options: Any, schema: StructType) -> WriteOptions:
    checked = write_options(options)
    check_write_schema(schema, topic_option=checked.topic, daemon=checked.socket is not None)
    return checked


def register(spark: Any) -> None:
    """Register ``format("bruce")`` with a SparkSession, and make Append its default save mode in this process, as
    Spark's Kafka sink has it (:mod:`bruce.spark.save_mode`: pyspark would refuse a bare ``.save()``)."""
    spark.dataSource.register(BruceDataSource)
    default_to_append()


def local_session(app: str = "bruce") -> SparkSession:
    """A ``local[2]`` session on loopback whose Python workers run this interpreter, with ``format("bruce")``
    registered: for trying things out, tests and benchmarks on one machine (a cluster job builds its own session)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
