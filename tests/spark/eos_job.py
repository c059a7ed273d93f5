"""A streaming copy job for the kill runs (tests/spark/eos_runs.py): topic → bruce sink, run as its own driver
process so it can be killed, or (:func:`start_copy`) as a query in a session the caller already has.

``python eos_job.py '<json>'``: address, source, sink, checkpoint, exactly_once (bool), max_offsets (per trigger),
row_delay (seconds slept per row in a Python UDF: micro-batches long enough to be killed in), stop_after (query.stop()
once the sink's high watermark reaches it; 0: never), marker_topic (optional), master and conf (optional: a Spark
standalone cluster's URL and the session's settings; default a local[2] session). The query runs with
trigger(availableNow=True): it ends by itself once the source is copied. Prints ``JVM <pid>`` once the session is up.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def session(args: dict) -> Any:
    """The driver's session: local[2], or connected to ``args["master"]`` with ``args["conf"]``."""
    import bruce.spark

    if not args.get("master"):
        return bruce.spark.local_session("bruce-eos-job")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(args["master"]).appName("bruce-eos-job")
    for key, value in args.get("conf", {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    bruce.spark.register(spark)
    return spark


def start_copy(spark: Any, args: dict) -> Any:
    """Start the copy (a StreamingQuery) in ``spark``."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType

    delay = float(args.get("row_delay", 0))

    @F.udf(BinaryType(), useArrow=False)  # a plain row UDF, said so (else Spark guesses from the hints, and warns)
    def slow(value: bytes) -> bytes:
        time.sleep(delay)
        return value

    stream = (
        spark.readStream.format("bruce")
        .option("bootstrap.servers", args["address"])
        .option("topic", args["source"])
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(args["max_offsets"]))
        .load()
    )
    stream = stream.select("key", slow("value").alias("value") if delay else "value")
    writer = (
        stream.writeStream.format("bruce")
        .option("bootstrap.servers", args["address"])
        .option("topic", args["sink"])
        .option("checkpointLocation", args["checkpoint"])
        .option("exactlyOnce", "true" if args["exactly_once"] else "false")
        .trigger(availableNow=True)
    )
    if args.get("marker_topic"):
        writer = writer.option("exactlyOnce.markerTopic", args["marker_topic"])
    from bruce.spark import start_stream

    return start_stream(writer)


def stop_when_written(query: Any, args: dict) -> int | None:
    """``query.stop()`` once the sink's high watermark reaches ``args["stop_after"]``; returns it (None: the query
    ended first)."""
    from bruce.spark import KafkaReader
    from bruce.spark.options import ClientConfig

    with KafkaReader(ClientConfig((args["address"],))) as kafka:
        partitions = kafka.partitions(args["sink"])
        while query.isActive:
            written = sum(kafka.latest_offsets(args["sink"], partitions).values())
            if written >= int(args["stop_after"]):
                query.stop()  # in the middle of a micro-batch: its tasks are cancelled
                return written
            time.sleep(0.05)
    return None


def main(args: dict) -> None:
    spark = session(args)
    print(f"JVM {spark.sparkContext._jvm.ProcessHandle.current().pid()}", flush=True)
    query = start_copy(spark, args)
    if int(args.get("stop_after", 0)):
        at = stop_when_written(query, args)
        if at is not None:
            print(f"STOPPED at {at}", flush=True)
    query.awaitTermination()
    print("DONE", flush=True)
    spark.stop()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
    sys.exit(0)
