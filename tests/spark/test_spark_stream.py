"""Structured Streaming through the data source against tansu: a topic copied to another over several micro-batches
with nothing lost or duplicated, and maxOffsetsPerTrigger with trigger(availableNow=True)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from bruce.spark import start_stream

from .kafka_io import consume_all, produce_all

pytestmark = pytest.mark.spark


def _source(spark, address: str, topic: str, **options):
    reader = spark.readStream.format("bruce").option("bootstrap.servers", address).option("topic", topic)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_stream_round_trip_over_micro_batches(spark, tansu, new_topic, tmp_path: Path) -> None:
    source, sink = new_topic(partitions=2), new_topic(partitions=3)
    produce_all(tansu.address, source, [{"value": b"before-%d" % i} for i in range(50)])
    query = start_stream(
        _source(spark, tansu.address, source, startingOffsets="earliest", includeHeaders="true")
        .selectExpr("key", "value", "headers", "timestamp")
        .writeStream.format("bruce")
        .option("bootstrap.servers", tansu.address)
        .option("topic", sink)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
    )
    sent = [b"before-%d" % i for i in range(50)]
    try:
        query.processAllAvailable()
        for round_ in range(3):
            batch = [{"key": b"k%d" % (i % 5), "value": b"r%d-%d" % (round_, i)} for i in range(200)]
            produce_all(tansu.address, source, batch)
            sent += [m["value"] for m in batch]
            query.processAllAvailable()
        progress = [p for p in query.recentProgress if p["numInputRows"]]
    finally:
        query.stop()
    assert len(progress) >= 4 and sum(p["numInputRows"] for p in progress) == len(sent)
    got = consume_all(tansu.address, sink, 3, len(sent))
    assert Counter(m.value for m in got) == Counter(sent)  # each exactly once


def test_available_now_with_max_offsets_per_trigger(spark, tansu, new_topic) -> None:
    topic = new_topic(partitions=2)
    produce_all(tansu.address, topic, [{"partition": i % 2, "value": b"%d" % i} for i in range(100)])
    name = f"capped_{topic.replace('-', '_')}"
    query = start_stream(
        _source(spark, tansu.address, topic, startingOffsets="earliest", maxOffsetsPerTrigger="30")
        .select("partition", "offset", "value")
        .writeStream.format("memory")
        .queryName(name)
        .trigger(availableNow=True)
    )
    query.awaitTermination(120)
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sum(sizes) == 100 and len(sizes) >= 4 and max(sizes) <= 30
    rows = spark.table(name).collect()
    assert sorted(int(r.value) for r in rows) == list(range(100))
    assert Counter((r.partition, r.offset) for r in rows) == Counter((p, o) for p in (0, 1) for o in range(50))
