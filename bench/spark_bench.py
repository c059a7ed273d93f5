"""Spark write and read throughput: the ``bruce`` data source vs a ``foreachPartition`` writer using confluent-kafka,
in the same local Spark session, on the same cached DataFrame, to the same tansu broker. Prints rows/s and ratios.

Usage: python bench/spark_bench.py [--rows 1000000] [--size 100] [--partitions 2] [--repeat 1] [--quick]

Each writer gets a fresh topic with ``--partitions`` partitions (one Spark task per DataFrame partition, the same
count) and waits for every acknowledgement (acks=all for both: their common default); each topic's record count is
then checked by reading its offsets. Time runs from the start of the write job to its end. Read-back throughput is a
``format("bruce")`` read of the data source's topic into Spark's ``noop`` sink. The best of ``--repeat`` runs counts;
a small warm-up write per writer first keeps Python worker start-up out of the figures.
Target: data source >= 0.5x the confluent-kafka foreachPartition writer.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bruce.proxy.embedded import EmbeddedBroker
from bruce.spark import KafkaReader, local_session
from bruce.spark.options import ClientConfig

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


def run(spark: SparkSession, broker: EmbeddedBroker, rows: int, size: int, partitions: int, repeat: int) -> None:
    df = spark.range(rows, numPartitions=partitions).select(
        F.lpad(F.col("id").cast("string"), size, "x").cast("binary").alias("value")
    )
    df.cache().count()  # both writers read the same materialized rows
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
            started = time.perf_counter()
            writer(df, broker.address, topic)
            elapsed = time.perf_counter() - started
            stored = records_in(broker.address, topic)
            if stored != rows:
                raise RuntimeError(f"{name}: the topic holds {stored} records, {rows} were written")
            rates[name] = max(rates.get(name, 0.0), rows / elapsed)
            last_topic[name] = topic
    for name, rate in rates.items():
        print(f"write  {name:28} {rate:12,.0f} rows/s", flush=True)
    ratio = rates["bruce data source"] / rates["confluent foreachPartition"]
    print(f"ratio  data source / confluent foreachPartition: {ratio:.2f}x (target >= 0.5)")
    best_read = 0.0
    for _ in range(repeat):
        reader = spark.read.format("bruce").option("bootstrap.servers", broker.address)
        source = reader.option("topic", last_topic["bruce data source"]).load()
        started = time.perf_counter()
        source.write.format("noop").mode("overwrite").save()
        best_read = max(best_read, rows / (time.perf_counter() - started))
    print(f"read   {'bruce data source':28} {best_read:12,.0f} rows/s", flush=True)
    df.unpersist()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100, help="value size in bytes")
    parser.add_argument("--partitions", type=int, default=2, help="DataFrame and topic partitions")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="20,000 rows, one run (keeps the script from rotting)")
    args = parser.parse_args(argv)
    rows, repeat = (20_000, 1) if args.quick else (args.rows, args.repeat)
    python = sys.version.split()[0]
    print(f"writing {rows:,} x {args.size}-byte rows, {args.partitions} partitions, local[2], python {python}")
    spark = local_session("bruce-spark-bench")
    try:
        with EmbeddedBroker() as broker:
            run(spark, broker, rows, args.size, args.partitions, repeat)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
