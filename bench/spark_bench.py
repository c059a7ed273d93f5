"""Spark write and read throughput: the ``bruce`` data source vs confluent-kafka inside the same Spark job, and vs
the floor Spark imposes on any Python code, in the same local Spark session, on the same cached DataFrame, to the
same tansu broker. Prints rows/s and ratios.

Usage: python bench/spark_bench.py [--rows 1000000] [--size 100] [--partitions 2] [--repeat 1] [--codec none]
                                   [--reads-only] [--quick] [--cluster] [--json FILE]
       python bench/spark_bench.py --exactly-once [--quick] [--kills] [--cluster-kills] (bench/spark_eos_bench.py:
       exactlyOnce's cost, and the kill runs on local[2] and on a standalone cluster)

Writes (each to a fresh topic with ``--partitions`` partitions; one Spark task per DataFrame partition):
- ``bruce data source``: ``df.write.format("bruce")``;
- ``confluent foreachPartition``: a confluent-kafka Producer per partition, one ``produce`` per row;
- ``floor mapInArrow->noop``: every Arrow batch handed to a Python worker and dropped (nothing produced): what any
  Python writer pays before doing anything;
- ``floor data source->drop``: a Python data source whose writer drops every batch: what any Python data source
  pays (Spark adds a planning and a commit step in Python on the driver to each of its jobs).
Both writers wait for every acknowledgement (acks=all for both: their common default); each topic's record count is
then checked by reading its offsets. Time runs from the start of the write job to its end.

``--codec`` (none, gzip, snappy, lz4, zstd) is the data source's compression for its writes, hence the codec of the
topic all the readers read. ``--reads-only`` writes that topic once per round with the data source (untimed) and
measures the reads only.

Reads (of the data source's topic, into Spark's ``noop`` sink):
- ``bruce data source``: ``spark.read.format("bruce")``;
- ``confluent mapInArrow``: a confluent-kafka Consumer per partition (assign, ``consume`` 10,000 at a time) in
  ``mapInArrow``, yielding the same columns as Arrow batches;
- ``floor mapInArrow->noop``: ``mapInArrow`` yielding ready-made Arrow batches of the same shape and row count
  (no Kafka): what any Python reader pays to hand rows to Spark.

Write-back (a DataFrame read from Kafka and written to another topic: every column of the read schema, and a
``topic`` column naming the destination, so rows carry ``key``, ``partition``, ``timestamp``: each row goes back to
its partition, one ``send_columns`` run per partition): the data source's topic read once per round with the data
source and cached, then written by the data source and by the floor (``mapInArrow`` -> ``noop`` of the same rows).
Goal: >= 0.5x the floor.

Writers and readers take turns in each of ``--repeat`` rounds (the order rotates); the best of the rounds counts, and
each round's figures are printed too (the machine may be noisy). A small warm-up write per writer first keeps Python
worker start-up out of the figures. Goals: the data source >= 1x its confluent-kafka peer for writes, >= 3x for
reads, and within 1.5x of the floor's time (ratio to the floor's rows/s >= 0.67).

Outside Spark (the same broker, no JVM; ``bench/spark_task.py``): one write task's delivery (``produce_batches``) of the
same rows as 10,000-row Arrow batches, plain (the ``topic`` option, a ``value`` column) and shaped as read back
(``topic``, ``partition``, ``key``, ``timestamp`` columns besides the value, two partitions): what a task costs without
Spark's noise, with the CPU per row of the task (this process) and of the broker in the best round.

``--json FILE`` also writes every best rate (Spark's writes, reads and write-backs, the tasks outside Spark) as JSON
for ``bench/report.py``; each run adds its figures to FILE under its row count and codec, so one file gathers several
runs.

``--cluster`` then measures the data source's write and read again, the same way, on a Spark standalone cluster on
loopback (a master and two workers of one core each, separate JVMs: :mod:`bruce.spark.standalone`; the local session
is stopped first), the job submitted with spark-submit (this script in ``--measure`` mode), and prints the cluster's
rows/s beside local[2]'s with their ratio. On one 2-core machine the cluster has no more cores than local[2]: the
ratio shows what separate executor JVMs (shuffling nothing, but each with its own Python workers) cost, not scaling.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import machine
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage
from spark_task import run_task

from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.spark import KafkaReader, local_session, register
from bruce.spark.options import ClientConfig
from bruce.spark.schema import ARROW_READ_SCHEMA_NO_HEADERS, READ_SCHEMA_DDL
from bruce.spark.standalone import StandaloneCluster

_topics = itertools.count(1)
FLOOR = "floor mapInArrow->noop"
DATA_SOURCE_FLOOR = "floor data source->drop"


CODEC = "none"  # the data source's compression (--codec)


def write_with_data_source(df: DataFrame, address: str, topic: str) -> None:
    writer = df.write.format("bruce").mode("append").option("bootstrap.servers", address).option("topic", topic)
    writer.option("kafka.compression.codec", CODEC).save()


def write_with_confluent(df: DataFrame, address: str, topic: str) -> None:
    def write_partition(rows) -> None:  # runs in the executors' Python workers
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": address, "linger.ms": 5, "batch.num.messages": 10000, "log_level": 3})
        failed: list[object] = []

        def report(err, _msg) -> None:
            if err is not None:
                failed.append(err)

        for n, row in enumerate(rows):
            while True:
                try:
                    producer.produce(topic, row.value, on_delivery=report)
                    break
                except BufferError:  # local queue full: wait for deliveries
                    producer.poll(0.05)
            if n % 10000 == 0:
                producer.poll(0)
        left = producer.flush(300)
        if left or failed:
            raise RuntimeError(f"confluent-kafka: {left} not flushed, {len(failed)} failed: {failed[:3]}")

    df.foreachPartition(write_partition)


def write_floor(df: DataFrame, address: str, topic: str) -> None:
    def drop(batches):  # runs in the executors' Python workers: takes every batch, returns nothing
        for _ in batches:
            pass
        yield from ()

    df.mapInArrow(drop, "value binary").write.format("noop").mode("overwrite").save()


class _Drop(DataSourceArrowWriter):
    def write(self, iterator):  # runs in the executors' Python workers: takes every batch, keeps nothing
        for _ in iterator:
            pass
        return WriterCommitMessage()


class DropSource(DataSource):
    """A Python data source whose writer drops every batch (the data source floor)."""

    @classmethod
    def name(cls) -> str:
        return "bruce-bench-drop"

    def schema(self) -> str:
        return "value binary"

    def writer(self, schema, overwrite: bool) -> DataSourceArrowWriter:
        return _Drop()


def write_data_source_floor(df: DataFrame, address: str, topic: str) -> None:
    df.write.format(DropSource.name()).mode("append").save()


WRITERS: dict[str, Callable[[DataFrame, str, str], None]] = {
    "bruce data source": write_with_data_source,
    "confluent foreachPartition": write_with_confluent,
    FLOOR: write_floor,
    DATA_SOURCE_FLOOR: write_data_source_floor,
}


def read_with_data_source(spark: SparkSession, address: str, topic: str, rows: int) -> None:
    source = spark.read.format("bruce").option("bootstrap.servers", address).option("topic", topic).load()
    source.write.format("noop").mode("overwrite").save()


def confluent_batch(msgs: list, topic: str, partition: int):  # -> pa.RecordBatch (pyarrow: on the executors)
    """confluent-kafka's messages of one partition as an Arrow batch in the read schema: the peer's work per message
    (``bench/reader_bench.py`` uses it too)."""
    import pyarrow as pa

    times = [m.timestamp() for m in msgs]
    columns = [
        pa.array([m.key() for m in msgs], pa.binary()),
        pa.array([m.value() for m in msgs], pa.binary()),
        pa.repeat(pa.scalar(topic, pa.string()), len(msgs)),
        pa.repeat(pa.scalar(partition, pa.int32()), len(msgs)),
        pa.array([m.offset() for m in msgs], pa.int64()),
        pa.array([t * 1000 if k else None for k, t in times], pa.timestamp("us", tz="UTC")),
        pa.array([k - 1 if k else 0 for k, _ in times], pa.int32()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=ARROW_READ_SCHEMA_NO_HEADERS)


def read_with_confluent(spark: SparkSession, address: str, topic: str, rows: int) -> None:
    with KafkaReader(ClientConfig((address,))) as kafka:
        parts = kafka.partitions(topic)
        starts, ends = kafka.earliest_offsets(topic, parts), kafka.latest_offsets(topic, parts)
    ranges = spark.createDataFrame([(p, starts[p], ends[p]) for p in parts], "partition int, start long, end long")

    def consume(batches):  # runs in the executors' Python workers
        from confluent_kafka import Consumer, TopicPartition

        for batch in batches:
            for p, start, end in zip(*(batch.column(i).to_pylist() for i in range(3)), strict=True):
                consumer = Consumer({"bootstrap.servers": address, "group.id": "spark-bench", "log_level": 3})
                consumer.assign([TopicPartition(topic, p, start)])
                offset = start
                while offset < end:
                    msgs = [m for m in consumer.consume(10_000, 1.0) if m.error() is None and m.offset() < end]
                    if not msgs:
                        continue
                    offset = msgs[-1].offset() + 1
                    yield confluent_batch(msgs, topic, p)
                consumer.close()

    ranges.repartition(len(parts)).mapInArrow(consume, READ_SCHEMA_DDL).write.format("noop").mode("overwrite").save()


def read_floor(spark: SparkSession, address: str, topic: str, rows: int) -> None:
    with KafkaReader(ClientConfig((address,))) as kafka:
        parts = kafka.partitions(topic)
        sizes = kafka.latest_offsets(topic, parts)
        first = next(p for p in parts if sizes[p])  # a partition with records: the values' size
        size = len(next(kafka.read(topic, first, 0, 1))[0].value or b"")
    tasks = spark.createDataFrame([(p, sizes[p]) for p in parts], "partition int, rows long")

    def made(batches):  # runs in the executors' Python workers: batches of the read's shape, built once per task
        import pyarrow as pa

        n = 10_000
        block = pa.RecordBatch.from_arrays(
            [
                pa.nulls(n, pa.binary()),
                pa.array([b"x" * size] * n, pa.binary()),
                pa.repeat(pa.scalar(topic, pa.string()), n),
                pa.repeat(pa.scalar(0, pa.int32()), n),
                pa.array(range(n), pa.int64()),
                pa.array([1_700_000_000_000_000] * n, pa.timestamp("us", tz="UTC")),
                pa.repeat(pa.scalar(0, pa.int32()), n),
            ],
            schema=ARROW_READ_SCHEMA_NO_HEADERS,
        )
        for batch in batches:
            for count in batch.column(1).to_pylist():
                for low in range(0, count, n):
                    yield block.slice(0, min(n, count - low))

    tasks.repartition(len(parts)).mapInArrow(made, READ_SCHEMA_DDL).write.format("noop").mode("overwrite").save()


def write_back_with_data_source(df: DataFrame, address: str, topic: str) -> None:
    """A DataFrame read from Kafka written to ``topic`` by its ``topic`` column (no ``topic`` option)."""
    writer = df.withColumn("topic", F.lit(topic)).write.format("bruce").mode("append")
    writer.option("bootstrap.servers", address).option("kafka.compression.codec", CODEC).save()


def write_back_floor(df: DataFrame, address: str, topic: str) -> None:
    write_floor(df.withColumn("topic", F.lit(topic)), address, topic)


WRITE_BACK: dict[str, Callable[[DataFrame, str, str], None]] = {
    "bruce data source": write_back_with_data_source,
    FLOOR: write_back_floor,
}


READERS: dict[str, Callable[[SparkSession, str, str, int], None]] = {
    "bruce data source": read_with_data_source,
    "confluent mapInArrow": read_with_confluent,
    FLOOR: read_floor,
}


def records_in(address: str, topic: str) -> int:
    with KafkaReader(ClientConfig((address,))) as kafka:
        return sum(kafka.latest_offsets(topic, kafka.partitions(topic)).values())


def rows_of(spark: SparkSession, rows: int, size: int, partitions: int) -> DataFrame:
    """The benchmark's DataFrame, cached: ``rows`` values of ``size`` bytes in ``partitions`` partitions."""
    df = spark.range(rows, numPartitions=partitions).select(
        F.lpad(F.col("id").cast("string"), size, "x").cast("binary").alias("value")
    )
    df.cache().count()  # every writer reads the same materialized rows
    return df


def timed_write(name: str, writer: Callable, df: DataFrame, address: str, topic: str, rows: int) -> float:
    """Rows/s of one write to a fresh ``topic``, checked against the topic's record count."""
    started = time.perf_counter()
    writer(df, address, topic)
    elapsed = time.perf_counter() - started
    stored = records_in(address, topic)
    if name not in (FLOOR, DATA_SOURCE_FLOOR) and stored != rows:
        raise RuntimeError(f"{name}: the topic holds {stored} records, {rows} were written")
    return rows / elapsed


def timed_read(
    spark: SparkSession, address: str, topic: str, rows: int, reader: Callable = read_with_data_source
) -> float:
    """Rows/s of one read of ``topic`` (``rows`` records) into Spark's noop sink."""
    started = time.perf_counter()
    (reader or read_with_data_source)(spark, address, topic, rows)
    return rows / (time.perf_counter() - started)


def measure_data_source(spark: SparkSession, address: str, topics: list[str], rows: int, size: int) -> dict:
    """The data source's best write and read rows/s: ``topics`` are a warm-up topic, then one per repeat."""
    partitions = len(partitions_of(address, topics[0]))
    df = rows_of(spark, rows, size, partitions)
    write_with_data_source(df.limit(1000).repartition(partitions), address, topics[0])
    write = max(timed_write("bruce data source", write_with_data_source, df, address, t, rows) for t in topics[1:])
    read = max(timed_read(spark, address, t, rows) for t in topics[1:])
    df.unpersist()
    return {"write": write, "read": read}


def partitions_of(address: str, topic: str) -> tuple[int, ...]:
    with KafkaReader(ClientConfig((address,))) as kafka:
        return kafka.partitions(topic)


def run(
    spark: SparkSession, broker: EmbeddedBroker, rows: int, size: int, partitions: int, repeat: int, reads_only: bool
) -> dict:
    spark.dataSource.register(DropSource)
    df = rows_of(spark, rows, size, partitions)
    warm = df.limit(1000).repartition(partitions)
    writers = {"bruce data source": write_with_data_source} if reads_only else WRITERS
    for writer in writers.values():
        topic = f"spark-bench-warm-{next(_topics)}"
        broker.create_topic(topic, partitions)
        writer(warm, broker.address, topic)
        if writer is write_with_data_source:
            for reader in READERS.values():
                reader(spark, broker.address, topic, 1000)
    writes: dict[str, float] = {}
    reads: dict[str, float] = {}
    written_back: dict[str, float] = {}
    for round_ in range(repeat):
        shift = round_ % len(writers)
        figures = []
        names = list(writers)[shift:] + list(writers)[:shift]
        for name in names:
            topic = f"spark-bench-{next(_topics)}"
            broker.create_topic(topic, partitions)
            rate = timed_write(name, writers[name], df, broker.address, topic, rows)
            writes[name] = max(writes.get(name, 0.0), rate)
            if not reads_only:
                figures.append(f"{name} {rate:,.0f}")
            if name == "bruce data source":
                source_topic = topic
        shift = round_ % len(READERS)
        names = list(READERS)[shift:] + list(READERS)[:shift]
        for name in names:
            rate = timed_read(spark, broker.address, source_topic, rows, READERS[name])
            reads[name] = max(reads.get(name, 0.0), rate)
            figures.append(f"read {name} {rate:,.0f}")
        if not reads_only:
            back = spark.read.format("bruce").option("bootstrap.servers", broker.address)
            back = back.option("topic", source_topic).load()
            back.cache().count()  # both writers write the same materialized rows
            names = list(WRITE_BACK)[round_ % 2 :] + list(WRITE_BACK)[: round_ % 2]
            for name in names:
                topic = f"spark-bench-back-{next(_topics)}"
                broker.create_topic(topic, partitions)
                rate = timed_write(name, WRITE_BACK[name], back, broker.address, topic, rows)
                written_back[name] = max(written_back.get(name, 0.0), rate)
                figures.append(f"write-back {name} {rate:,.0f}")
            back.unpersist()
        print(f"round {round_ + 1}: " + ", ".join(figures), flush=True)
    compared = (("write", writes, "confluent foreachPartition"), ("read", reads, "confluent mapInArrow"))
    for what, rates, peer in compared[1:] if reads_only else compared:
        for name, rate in rates.items():
            print(f"{what:6} {name:28} {rate:12,.0f} rows/s", flush=True)
        ours = rates["bruce data source"]
        goal = 3 if what == "read" else 1
        print(f"ratio  {what} data source / {peer}: {ours / rates[peer]:.2f}x (goal >= {goal})")
        print(f"ratio  {what} data source / {FLOOR}: {ours / rates[FLOOR]:.2f}x (goal >= 0.67)")
        if DATA_SOURCE_FLOOR in rates:
            floor = rates[DATA_SOURCE_FLOOR]
            print(f"ratio  {what} {DATA_SOURCE_FLOOR} / {FLOOR}: {floor / rates[FLOOR]:.2f}x (any Python data source)")
    if not reads_only:
        for name, rate in written_back.items():
            print(f"write-back {name:24} {rate:12,.0f} rows/s", flush=True)
        ratio = written_back["bruce data source"] / written_back[FLOOR]
        print(f"ratio  write-back data source / {FLOOR}: {ratio:.2f}x (goal >= 0.5)")
    df.unpersist()
    return {"write": writes, "read": reads, "write-back": written_back}


def run_cluster(broker: EmbeddedBroker, local: dict, rows: int, size: int, partitions: int, repeat: int) -> None:
    """The data source measured again on a standalone cluster (see the module docstring), beside ``local``."""
    topics = [f"spark-bench-cluster-{next(_topics)}" for _ in range(repeat + 1)]
    for topic in topics:
        broker.create_topic(topic, partitions)
    root = tempfile.TemporaryDirectory(prefix="bruce-spark-cluster-")
    with root, StandaloneCluster(Path(root.name), workers=2, cores=1, memory="512m") as cluster:
        args = ["--measure", "--bootstrap", broker.address, "--topics", ",".join(topics)]
        args += ["--rows", str(rows), "--size", str(size)]
        command = cluster.submit_command(Path(__file__).resolve(), *args)
        job = subprocess.run(command, env=cluster.env, capture_output=True, text=True, timeout=1800, check=False)
        lines = [line for line in job.stdout.splitlines() if line.startswith("MEASURED ")]
        if job.returncode or not lines:
            raise RuntimeError(f"the cluster job failed ({job.returncode}):\n{job.stderr[-3000:]}")
        measured = json.loads(lines[-1][len("MEASURED ") :])
    print(f"cluster: standalone, master + 2 workers x 1 core (separate JVMs), {measured['executors']} executors")
    for what in ("write", "read"):
        rate, ours = measured[what], local[what]["bruce data source"]
        print(f"{what:6} {'bruce data source (cluster)':28} {rate:12,.0f} rows/s  ({rate / ours:.2f}x local[2])")


def measure_main(args: argparse.Namespace) -> int:
    """``--measure``: run inside spark-submit on the cluster; prints one MEASURED line of JSON."""
    spark = SparkSession.builder.appName("bruce-spark-bench-cluster").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    result = measure_data_source(spark, args.bootstrap, args.topics.split(","), args.rows, args.size)
    result["executors"] = len(spark.sparkContext.statusTracker().getExecutorInfos()) - 1  # the driver is listed
    print("MEASURED " + json.dumps(result), flush=True)
    spark.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--exactly-once" in argv:  # exactlyOnce streaming writes vs at-least-once: bench/spark_eos_bench.py
        from spark_eos_bench import main as exactly_once_main

        return exactly_once_main([a for a in argv if a != "--exactly-once"])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100, help="value size in bytes")
    parser.add_argument("--partitions", type=int, default=2, help="DataFrame and topic partitions")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--codec", choices=("none", "gzip", "snappy", "lz4", "zstd"), default="none")
    parser.add_argument("--reads-only", action="store_true", help="measure the reads only (see above)")
    parser.add_argument("--quick", action="store_true", help="20,000 rows, one run (keeps the script from rotting)")
    parser.add_argument("--cluster", action="store_true", help="also on a standalone cluster (see above)")
    parser.add_argument("--json", type=Path, help="also add the rates to this file (for bench/report.py)")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)  # inside spark-submit
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--topics", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        return measure_main(args)
    rows, repeat = (20_000, 1) if args.quick else (args.rows, args.repeat)
    global CODEC
    CODEC = args.codec
    python = sys.version.split()[0]
    print(f"{rows:,} x {args.size}-byte rows ({CODEC}), {args.partitions} partitions, local[2], python {python}")
    with EmbeddedBroker() as broker:
        spark = local_session("bruce-spark-bench")
        try:
            local = run(spark, broker, rows, args.size, args.partitions, repeat, args.reads_only)
        finally:
            spark.stop()
        task = {} if args.reads_only else run_task(broker, rows, args.size, args.partitions, repeat)
        if args.cluster:
            run_cluster(broker, local, rows, args.size, args.partitions, repeat)
    if args.json:
        save_json(args.json, args, rows, repeat, local | {"task": task})
    return 0


def save_json(path: Path, args: argparse.Namespace, rows: int, repeat: int, rates: dict) -> None:
    """Adds this run's best rates to ``path`` (see the module docstring), keyed by row count and codec."""
    body = json.loads(path.read_text()) if path.exists() else {"bench": "spark", "runs": {}}
    body |= {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine()}
    settings = {"rows": rows, "size": args.size, "partitions": args.partitions, "codec": CODEC, "repeat": repeat}
    rounded = {what: {name: round(rate) for name, rate in by.items()} for what, by in rates.items()}
    body["runs"][f"{rows} {CODEC}"] = settings | {"load": os.getloadavg()[0], "rates": rounded}
    path.write_text(json.dumps(body, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
