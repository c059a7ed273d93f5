"""A Spark job for a standalone cluster, run with pyspark's own ``spark-submit`` (see run.py, which starts the cluster):
writes keyed rows to Kafka through ``format("bruce")``, reads them back in a batch query, copies them to a second
topic with a streaming query, and prints one JSON line of counts and timings.

    spark-submit --master spark://127.0.0.1:7077 examples/cluster/job.py --bootstrap 127.0.0.1:9092 \\
        --topic t --copy t-copy --rows 100000 --checkpoint /tmp/ckpt roundtrip

``write`` only writes (``--pace-ms`` sleeps per Arrow batch on the executors: a slow job, to lose a worker under).
The executors import bruce from their own Python (``spark.pyspark.python``): the package is installed there.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

import bruce.spark


def rows(spark: SparkSession, n: int, partitions: int, pace_ms: int) -> DataFrame:
    """``n`` rows: value ``row-<id>``, key ``k<id % 97>``, in ``partitions`` Spark partitions."""
    df = spark.range(0, n, numPartitions=partitions)
    if pace_ms:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "1000")  # a pause every 1000 rows

        def paced(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                time.sleep(pace_ms / 1000)
                yield batch

        df = df.mapInArrow(paced, df.schema)
    return df.selectExpr("concat('row-', CAST(id AS STRING)) AS value", "concat('k', CAST(id % 97 AS STRING)) AS key")


def write(spark: SparkSession, a: argparse.Namespace) -> float:
    started = time.perf_counter()
    df = rows(spark, a.rows, a.partitions, a.pace_ms)
    df.write.format("bruce").option("bootstrap.servers", a.bootstrap).option("topic", a.topic).mode("append").save()
    return time.perf_counter() - started


def read(spark: SparkSession, a: argparse.Namespace) -> tuple[int, int, float]:
    started = time.perf_counter()
    df = spark.read.format("bruce").option("bootstrap.servers", a.bootstrap).option("topic", a.topic).load()
    counted = df.selectExpr("count(*) AS n", "count(DISTINCT value) AS d").first()
    return counted.n, counted.d, time.perf_counter() - started


def stream(spark: SparkSession, a: argparse.Namespace) -> float:
    started = time.perf_counter()
    source = (
        spark.readStream.format("bruce")
        .option("bootstrap.servers", a.bootstrap)
        .option("topic", a.topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(max(1, a.rows // 2)))
        .load()
    )
    query = bruce.spark.start_stream(  # started again if Spark's start-up of the source times out
        source.select("key", "value")
        .writeStream.format("bruce")
        .option("bootstrap.servers", a.bootstrap)
        .option("topic", a.copy)
        .option("checkpointLocation", a.checkpoint)
        .trigger(availableNow=True)
    )
    query.awaitTermination(600)
    if query.isActive or query.exception():
        raise SystemExit(f"the streaming query did not finish: {query.exception()}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("write", "read", "roundtrip"))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--copy", help="the streaming query's sink topic (roundtrip)")
    parser.add_argument("--checkpoint", help="the streaming query's checkpoint directory (roundtrip)")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--pace-ms", type=int, default=0)
    a = parser.parse_args()
    spark = SparkSession.builder.appName(f"bruce-cluster-{a.command}").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    bruce.spark.register(spark)
    out: dict[str, object] = {}
    if a.command in ("write", "roundtrip"):
        out["write_s"] = write(spark, a)
    if a.command in ("read", "roundtrip"):
        out["read_rows"], out["read_distinct"], out["read_s"] = read(spark, a)
    if a.command == "roundtrip":
        out["stream_s"] = stream(spark, a)
    out["executors"] = len(spark.sparkContext.statusTracker().getExecutorInfos()) - 1  # the driver is listed too
    print("RESULT " + json.dumps(out), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
