"""A streaming copy job for the kill runs (tests/spark/test_exactly_once.py, bench/spark_bench.py): topic → bruce
sink, run as its own driver process so it can be killed.

``python eos_job.py '<json>'``: address, source, sink, checkpoint, exactly_once (bool), max_offsets (per trigger),
row_delay (seconds slept per row in a Python UDF: micro-batches long enough to be killed in), stop_after (query.stop()
once the sink's high watermark reaches it; 0: never), marker_topic (optional). The query runs with
trigger(availableNow=True): it ends by itself once the source is copied. Prints ``JVM <pid>`` once the session is up.
"""

from __future__ import annotations

import json
import sys
import time


def main(args: dict) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType

    import bruce.spark
    from bruce.spark import KafkaReader
    from bruce.spark.options import ClientConfig

    spark = bruce.spark.local_session("bruce-eos-job")
    jvm_pid = spark.sparkContext._jvm.ProcessHandle.current().pid()
    print(f"JVM {jvm_pid}", flush=True)
    delay = float(args["row_delay"])

    @F.udf(BinaryType())
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
        .select("key", slow("value").alias("value"))
    )
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
    query = writer.start()
    stop_after = int(args.get("stop_after", 0))
    if stop_after:
        with KafkaReader(ClientConfig((args["address"],))) as kafka:
            while query.isActive:
                written = sum(kafka.latest_offsets(args["sink"], kafka.partitions(args["sink"])).values())
                if written >= stop_after:
                    query.stop()  # in the middle of a micro-batch: its tasks are cancelled
                    print(f"STOPPED at {written}", flush=True)
                    break
                time.sleep(0.05)
    query.awaitTermination()
    print("DONE", flush=True)
    spark.stop()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
    sys.exit(0)
