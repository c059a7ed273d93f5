"""Spark write and read throughput: the ``bruce`` data source vs a ``foreachPartition`` writer using confluent-kafka,
in the same local Spark session, on the same cached DataFrame, to the same tansu broker. Prints rows/s and ratios.

Usage: python bench/spark_bench.py [--rows 1000000] [--size 100] [--partitions 2] [--repeat 1] [--quick] [--cluster]
       python bench/spark_bench.py --exactly-once [--quick] [--kills] (bench/spark_eos_bench.py: exactlyOnce's cost)

Each writer gets a fresh topic with ``--partitions`` partitions (one Spark task per DataFrame partition, the same
count) and waits for every acknowledgement (acks=all for both: their common default); each topic's record count is
then checked by reading its offsets. Time runs from the start of the write job to its end. Read-back throughput is a
``format("bruce")`` read of the data source's topic into Spark's ``noop`` sink. The best of ``--repeat`` runs counts;
a small warm-up write per writer first keeps Python worker start-up out of the figures.
Target: data source >= 0.5x the confluent-kafka foreachPartition writer.

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
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bruce.proxy.embedded import EmbeddedBroker
from bruce.spark import KafkaReader, local_session, register
from bruce.spark.options import ClientConfig
from bruce.spark.standalone import StandaloneCluster

_topics = itertools.count(1)


def write_with_data_source(df: DataFrame, address: str, topic: str) -> None:
    df.write.format("bruce").mode("append").option("bootstrap.servers", address).option("topic", topic).save()


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


WRITERS: dict[str, Callable[[DataFrame, str, str], None]] = {
    "bruce data source": write_with_data_source,
    "confluent foreachPartition": write_with_confluent,
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
    if stored != rows:
        raise RuntimeError(f"{name}: the topic holds {stored} records, {rows} were written")
    return rows / elapsed


def timed_read(spark: SparkSession, address: str, topic: str, rows: int) -> float:
    """Rows/s of a ``format("bruce")`` read of ``topic`` into Spark's noop sink."""
    source = spark.read.format("bruce").option("bootstrap.servers", address).option("topic", topic).load()
    started = time.perf_counter()
    source.write.format("noop").mode("overwrite").save()
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


def run(spark: SparkSession, broker: EmbeddedBroker, rows: int, size: int, partitions: int, repeat: int) -> dict:
    df = rows_of(spark, rows, size, partitions)
    warm = df.limit(1000).repartition(partitions)
    for writer in WRITERS.values():
        topic = f"spark-bench-warm-{next(_topics)}"
        broker.create_topic(topic, partitions)
        writer(warm, broker.address, topic)
    rates: dict[str, float] = {}
    last_topic: dict[str, str] = {}
    for _ in range(repeat):
        for name, writer in WRITERS.items():
            topic = f"spark-bench-{next(_topics)}"
            broker.create_topic(topic, partitions)
            rates[name] = max(rates.get(name, 0.0), timed_write(name, writer, df, broker.address, topic, rows))
            last_topic[name] = topic
    for name, rate in rates.items():
        print(f"write  {name:28} {rate:12,.0f} rows/s", flush=True)
    ratio = rates["bruce data source"] / rates["confluent foreachPartition"]
    print(f"ratio  data source / confluent foreachPartition: {ratio:.2f}x (target >= 0.5)")
    best_read = max(timed_read(spark, broker.address, last_topic["bruce data source"], rows) for _ in range(repeat))
    print(f"read   {'bruce data source':28} {best_read:12,.0f} rows/s", flush=True)
    df.unpersist()
    return {"write": rates["bruce data source"], "read": best_read}


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
        rate = measured[what]
        print(f"{what:6} {'bruce data source (cluster)':28} {rate:12,.0f} rows/s  ({rate / local[what]:.2f}x local[2])")


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
    parser.add_argument("--quick", action="store_true", help="20,000 rows, one run (keeps the script from rotting)")
    parser.add_argument("--cluster", action="store_true", help="also on a standalone cluster (see above)")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)  # inside spark-submit
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--topics", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        return measure_main(args)
    rows, repeat = (20_000, 1) if args.quick else (args.rows, args.repeat)
    python = sys.version.split()[0]
    print(f"writing {rows:,} x {args.size}-byte rows, {args.partitions} partitions, local[2], python {python}")
    with EmbeddedBroker() as broker:
        spark = local_session("bruce-spark-bench")
        try:
            local = run(spark, broker, rows, args.size, args.partitions, repeat)
        finally:
            spark.stop()
        if args.cluster:
            run_cluster(broker, local, rows, args.size, args.partitions, repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
