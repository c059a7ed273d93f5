"""The pipeline's Structured Streaming job: page views per page per minute, read from one topic and written to
another, both through the ``bruce`` data source.

It reads the events topic (Spark's Kafka columns), counts rows per page (the Kafka key) per one-minute event-time
window (the record timestamp), and writes each updated count as JSON ``{"minute": <epoch ms>, "page": ...,
"views": n}`` keyed by ``page@minute`` — the last record of a key is the current count (a compacted topic keeps
exactly that).

    python examples/pipeline/job.py --bootstrap 127.0.0.1:9092 --checkpoint /tmp/page-view-counts
"""

from __future__ import annotations

import argparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

import bruce.spark


def page_view_counts(events: DataFrame) -> DataFrame:
    """Views per page per minute, as the records to write (key ``page@minute``, JSON value; minute in epoch ms)."""
    counts = (
        events.withWatermark("timestamp", "5 minutes")
        .groupBy(F.window("timestamp", "1 minute"), F.col("key").cast("string").alias("page"))
        .count()
    )
    minute = F.unix_millis(F.col("window.start"))
    return counts.select(
        F.concat_ws("@", "page", minute.cast("string")).alias("key"),
        F.to_json(F.struct(minute.alias("minute"), "page", F.col("count").alias("views"))).alias("value"),
    )


def start(
    spark: SparkSession, bootstrap: str, source: str, sink: str, checkpoint: str, *, available_now: bool = False
) -> StreamingQuery:
    """Start the job: every 2 s, or (``available_now``) once over what the source holds, then stop.

    Counts change as events arrive, so the query runs in update mode. Spark lets Python data sources take only
    appended rows as a streaming sink, so each micro-batch's updated counts are written by a batch write of the
    same data source (``foreachBatch``); a failed micro-batch is written again (at-least-once, like the sink).
    """
    events = (
        spark.readStream.format("bruce")
        .option("bootstrap.servers", bootstrap)
        .option("topic", source)
        .option("startingOffsets", "earliest")
        .load()
    )

    def write_counts(updated: DataFrame, batch_id: int) -> None:
        writer = updated.write.format("bruce").mode("append")
        writer.option("bootstrap.servers", bootstrap).option("topic", sink).save()

    writer = (
        page_view_counts(events)
        .writeStream.outputMode("update")
        .foreachBatch(write_counts)
        .option("checkpointLocation", checkpoint)
    )
    writer = writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime="2 seconds")
    return bruce.spark.start_stream(writer)  # started again if Spark's start-up of the source times out


def latest_counts(spark: SparkSession, bootstrap: str, sink: str) -> dict[tuple[str, int], int]:
    """Read the counts topic back (a batch read): the last count written for each (page, minute)."""
    value = F.col("value").cast("string")
    rows = (
        spark.read.format("bruce")
        .option("bootstrap.servers", bootstrap)
        .option("topic", sink)
        .load()
        .orderBy("partition", "offset")  # a key always lands on one partition: its last record is the latest count
        .select(*(F.get_json_object(value, f"$.{field}").alias(field) for field in ("page", "minute", "views")))
        .collect()
    )
    return {(r.page, int(r.minute)): int(r.views) for r in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="host:port of a Kafka broker")
    parser.add_argument("--source", default="page-views")
    parser.add_argument("--sink", default="page-view-counts")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint directory")
    parser.add_argument("--available-now", action="store_true", help="process what exists, then stop")
    args = parser.parse_args()
    spark = bruce.spark.local_session("page-view-counts")  # a cluster job would build its own session
    query = start(spark, args.bootstrap, args.source, args.sink, args.checkpoint, available_now=args.available_now)
    query.awaitTermination()


if __name__ == "__main__":
    main()
