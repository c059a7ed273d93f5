"""Where Spark's Kafka connector and ``format("bruce")`` must behave alike, through a local Spark session against
tansu, read back by confluent-kafka: the topic option over the topic column (batch and stream), a DataFrame read from
Kafka written back as it is, save modes and output modes, the Java client settings Spark users pass, failOnDataLoss
with a topic missing for a trigger, and offsets JSON naming every partition."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from bruce.spark import start_stream

from .kafka_io import consume_all, produce_all

pytestmark = pytest.mark.spark


def _read(spark, address: str, **options):
    reader = spark.read.format("bruce").option("bootstrap.servers", address)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def _stream(spark, address: str, **options):
    reader = spark.readStream.format("bruce").option("bootstrap.servers", address)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def _run_available(df, checkpoint: Path, *, mode: str = "append", **options) -> None:
    writer = df.writeStream.format("bruce").outputMode(mode).option("checkpointLocation", str(checkpoint))
    for k, v in options.items():
        writer = writer.option(k, v)
    query = start_stream(writer.trigger(availableNow=True))
    try:
        query.awaitTermination(120)
    finally:
        query.stop()
    if query.exception():
        raise AssertionError(str(query.exception()))


def test_topic_option_wins_over_the_topic_column(spark, tansu, new_topic, tmp_path: Path) -> None:
    chosen, column = new_topic(), new_topic()
    df = spark.createDataFrame([(f"b{i}", column) for i in range(20)], "value string, topic string")
    df.write.format("bruce").mode("append").option("bootstrap.servers", tansu.address).option("topic", chosen).save()
    source = new_topic()
    produce_all(tansu.address, source, [{"value": b"s%d" % i} for i in range(30)])
    rows = _stream(spark, tansu.address, topic=source, startingOffsets="earliest").selectExpr(
        "value", "topic"
    )  # the topic column names the source: Spark's sink would write back to it without the option
    _run_available(rows, tmp_path / "checkpoint", **{"bootstrap.servers": tansu.address, "topic": chosen})
    got = consume_all(tansu.address, chosen, 1, 50)
    assert Counter(m.value for m in got) == Counter([b"b%d" % i for i in range(20)] + [b"s%d" % i for i in range(30)])
    assert consume_all(tansu.address, column, 1, 0, timeout=2) == []
    assert len(consume_all(tansu.address, source, 1, 30, timeout=5)) == 30  # nothing written back to the source


def _header(i: int) -> list | None:
    return [("h", b"%d" % i)] if i % 3 else None


def test_a_dataframe_read_from_kafka_writes_back_as_it_is(spark, tansu, new_topic) -> None:
    source, copy = new_topic(partitions=2), new_topic(partitions=2)
    produce_all(
        tansu.address,
        source,
        [{"partition": i % 2, "key": b"k%d" % i, "value": b"v%d" % i, "headers": _header(i)} for i in range(40)],
    )
    df = _read(spark, tansu.address, topic=source, includeHeaders="true")
    assert "offset" in df.columns and "timestampType" in df.columns  # ignored by the sink, as by Spark's
    headers = {r.value: r.headers for r in df.select("value", "headers").collect()}
    assert headers[b"v0"] is None and headers[b"v1"][0].value == b"1"  # no headers: null, as in Spark
    df.write.format("bruce").option("bootstrap.servers", tansu.address).option("topic", copy).save()  # no mode
    got = consume_all(tansu.address, copy, 2, 40)
    assert sorted((m.partition, m.key, m.value, m.headers) for m in got) == sorted(
        (i % 2, b"k%d" % i, b"v%d" % i, (("h", b"%d" % i),) if i % 3 else ()) for i in range(40)
    )  # the partition column is used, as Spark's sink uses it


def test_save_modes_as_sparks_kafka_sink(spark, tansu, new_topic) -> None:
    topic = new_topic()
    df = spark.createDataFrame([("x",)], "value string")
    for mode in ("error", "errorifexists", "append"):  # Spark's Kafka sink: Append and ErrorIfExists (the default)
        df.write.format("bruce").mode(mode).option("bootstrap.servers", tansu.address).option("topic", topic).save()
    df.write.save(format="bruce", **{"bootstrap.servers": tansu.address, "topic": topic})
    assert len(consume_all(tansu.address, topic, 1, 4)) == 4
    with pytest.raises(Exception, match="Overwrite is not allowed for Kafka"):
        df.write.format("bruce").mode("overwrite").option("bootstrap.servers", tansu.address).option(
            "topic", topic
        ).save()
    with pytest.raises(Exception, match="Ignore"):  # refused by Spark, as Spark's Kafka sink refuses it
        df.write.format("bruce").mode("ignore").option("bootstrap.servers", tansu.address).option("topic", topic).save()


def test_streaming_complete_output_mode(spark, tansu, new_topic, tmp_path: Path) -> None:
    source, counts = new_topic(), new_topic()
    produce_all(tansu.address, source, [{"key": b"k%d" % (i % 3), "value": b"%d" % i} for i in range(30)])
    totals = (
        _stream(spark, tansu.address, topic=source, startingOffsets="earliest")
        .groupBy("key")
        .count()
        .selectExpr("key", "cast(count as string) as value")
    )
    sink = {"bootstrap.servers": tansu.address, "topic": counts}
    _run_available(totals, tmp_path / "complete", mode="complete", **sink)
    got = consume_all(tansu.address, counts, 1, 3)
    assert sorted((m.key, m.value) for m in got) == [(b"k0", b"10"), (b"k1", b"10"), (b"k2", b"10")]
    with pytest.raises(Exception, match="does not support Update mode"):  # Spark's refusal for Python sinks (docs)
        _run_available(totals, tmp_path / "update", mode="update", **sink)


def test_java_client_settings_spark_users_pass(spark, tansu, new_topic) -> None:
    topic = new_topic(partitions=2)
    java_producer = {
        "kafka.compression.type": "lz4",
        "kafka.max.request.size": "2000000",
        "kafka.retries": "10",
        "kafka.delivery.timeout.ms": "60000",
        "kafka.buffer.memory": "33554432",
        "kafka.enable.idempotence": "true",
        "kafka.acks": "all",
    }
    df = spark.range(500).selectExpr("cast(id as string) as key", "cast(id as string) as value")
    writer = df.write.format("bruce").option("bootstrap.servers", tansu.address).option("topic", topic)
    for k, v in java_producer.items():
        writer = writer.option(k, v)
    writer.save()
    assert sorted(int(m.value) for m in consume_all(tansu.address, topic, 2, 500)) == list(range(500))
    java_consumer = {
        "kafka.isolation.level": "read_committed",
        "kafka.max.poll.records": "100",
        "kafka.fetch.min.bytes": "1",
        "kafka.fetch.max.bytes": "1048576",
        "kafka.session.timeout.ms": "45000",
        "kafka.receive.buffer.bytes": "65536",
        "kafka.default.api.timeout.ms": "60000",
        "kafka.metadata.max.age.ms": "300000",
    }
    rows = _read(spark, tansu.address, topic=topic, **java_consumer).collect()
    assert sorted(int(r.value) for r in rows) == list(range(500))


def test_fail_on_data_loss_false_survives_a_topic_missing_for_a_trigger(
    spark, tansu, new_topic, tmp_path: Path
) -> None:
    kept, dropped = new_topic(), new_topic()
    produce_all(tansu.address, kept, [{"value": b"kept-%d" % i} for i in range(3)])
    produce_all(tansu.address, dropped, [{"value": b"dropped-%d" % i} for i in range(3)])
    checkpoint = str(tmp_path / "checkpoint")

    def run(**options) -> list[bytes]:
        got: list[bytes] = []
        query = start_stream(
            _stream(spark, tansu.address, topic=f"{kept},{dropped}", startingOffsets="earliest", **options)
            .select("value")
            .writeStream.foreachBatch(lambda df, _: got.extend(r.value for r in df.collect()))
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
        )
        try:
            query.awaitTermination(120)
        finally:
            query.stop()
        if query.exception():
            raise AssertionError(str(query.exception()))
        return sorted(got)

    assert len(run(failOnDataLoss="false")) == 6
    admin = AdminClient({"bootstrap.servers": tansu.address, "log_level": 3})
    admin.delete_topics([dropped])[dropped].result(timeout=30)
    del admin
    produce_all(tansu.address, kept, [{"value": b"kept-later"}])
    with pytest.raises(Exception, match="does not exist"):
        run()  # failOnDataLoss=true: the missing topic fails the query
    assert run(failOnDataLoss="false") == [b"kept-later"]  # warned; the other topic read on
    tansu.create_topic(dropped, 1)
    produce_all(tansu.address, dropped, [{"value": b"dropped-again"}])
    assert run(failOnDataLoss="false") == [b"dropped-again"]  # back: read from its earliest offset


def test_offsets_json_names_every_partition_as_in_spark(spark, tansu, new_topic) -> None:
    topic = new_topic(partitions=2)
    produce_all(tansu.address, topic, [{"partition": i % 2, "value": b"%d" % i} for i in range(10)])
    with pytest.raises(Exception, match=r"every partition must be named.*has partitions \[0, 1\].*names \[0\]"):
        _read(spark, tansu.address, topic=topic, startingOffsets=f'{{"{topic}": {{"0": 1}}}}').collect()
    with pytest.raises(Exception, match=r"endingOffsets.*every partition must be named"):
        _read(spark, tansu.address, topic=topic, endingOffsets=f'{{"{topic}": {{"1": 3}}}}').collect()
    with pytest.raises(Exception, match=f"startingOffsets for {topic}-1 can't be latest for batch queries"):
        _read(spark, tansu.address, topic=topic, startingOffsets=f'{{"{topic}": {{"0": 1, "1": -1}}}}').collect()
    rows = _read(spark, tansu.address, topic=topic, startingOffsets=f'{{"{topic}": {{"0": 1, "1": -2}}}}').collect()
    assert len(rows) == 9
