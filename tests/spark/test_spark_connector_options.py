"""Spark's Kafka connector options through a local Spark session against tansu: assign, subscribePattern, the
timestamp options (ListOffsets by timestamp, checked against what the records carry), minPartitions, includeHeaders,
minOffsetsPerTrigger/maxTriggerDelay, failOnDataLoss on a recreated topic, and the ignored group id options."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from bruce.spark import start_stream

from .kafka_io import produce_all

pytestmark = pytest.mark.spark
BASE_TS = 1_700_000_000_000


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


def _timed(topic_address: tuple[str, str], partitions: int, per_partition: int) -> None:
    """``per_partition`` records in each partition, record i at BASE_TS + 1000 * i, value b"<partition>:<i>"."""
    address, topic = topic_address
    messages = [
        {"partition": p, "value": b"%d:%d" % (p, i), "timestamp": BASE_TS + 1000 * i}
        for p in range(partitions)
        for i in range(per_partition)
    ]
    produce_all(address, topic, messages)


def test_assign_reads_only_those_partitions(spark, tansu, new_topic) -> None:
    topic = new_topic(partitions=3)
    _timed((tansu.address, topic), 3, 10)
    rows = _read(spark, tansu.address, assign=f'{{"{topic}": [0, 2]}}').collect()
    assert sorted({r.partition for r in rows}) == [0, 2] and len(rows) == 20
    with pytest.raises(Exception, match=r"has no partition\(s\) \[7\]"):
        _read(spark, tansu.address, assign=f'{{"{topic}": [7]}}').collect()


def test_subscribe_pattern_matches_whole_names(spark, tansu, new_topic) -> None:
    a, b, other = new_topic(prefix="pattern-a"), new_topic(prefix="pattern-b"), new_topic(prefix="xpattern-a")
    for topic in (a, b, other):
        produce_all(tansu.address, topic, [{"value": topic.encode()}])
    rows = _read(spark, tansu.address, subscribePattern=r"pattern-[ab]-\d+").collect()
    assert sorted(r.topic for r in rows) == sorted([a, b])  # "xpattern-a-N" contains a match but is no match


def test_timestamps_start_and_end_where_the_records_say(spark, tansu, new_topic) -> None:
    topic = new_topic(partitions=2)
    _timed((tansu.address, topic), 2, 20)  # record i of each partition at BASE_TS + 1000 * i

    def indexes(**options) -> list[tuple[int, int]]:
        rows = _read(spark, tansu.address, topic=topic, **options).collect()
        return sorted((r.partition, int(r.value.split(b":")[1])) for r in rows)

    # startingTimestamp: the first record at or after it (7.5 s → record 8); endingTimestamp: up to, not including
    got = indexes(startingTimestamp=str(BASE_TS + 7500), endingTimestamp=str(BASE_TS + 12_000))
    assert got == [(p, i) for p in (0, 1) for i in range(8, 12)]
    by_partition = f'{{"{topic}": {{"0": {BASE_TS + 15_000}, "1": {BASE_TS}}}}}'
    got = indexes(startingOffsetsByTimestamp=by_partition)
    assert got == [(0, i) for i in range(15, 20)] + [(1, i) for i in range(20)]
    with pytest.raises(Exception, match="no record has a timestamp"):  # after the last record: Spark's "error"
        indexes(startingTimestamp=str(BASE_TS + 60_000))
    assert indexes(startingTimestamp=str(BASE_TS + 60_000), startingOffsetsByTimestampStrategy="latest") == []
    assert len(indexes(startingTimestamp=str(BASE_TS), endingTimestamp=str(BASE_TS + 60_000))) == 40  # to the end


def test_min_partitions_splits_and_headers_only_when_asked(spark, tansu, new_topic) -> None:
    topic = new_topic(partitions=2)
    produce_all(
        tansu.address, topic, [{"partition": i % 2, "value": b"%d" % i, "headers": [("h", b"x")]} for i in range(90)]
    )
    plain = _read(spark, tansu.address, topic=topic)
    assert plain.rdd.getNumPartitions() == 2 and "headers" not in plain.columns
    split = _read(spark, tansu.address, topic=topic, minPartitions="6", includeHeaders="true")
    assert split.rdd.getNumPartitions() == 6
    rows = split.collect()
    assert sorted(int(r.value) for r in rows) == list(range(90)) and all(r.headers[0].key == "h" for r in rows)


def test_group_id_options_are_accepted_and_change_nothing(spark, tansu, new_topic) -> None:
    topic = new_topic()
    produce_all(tansu.address, topic, [{"value": b"%d" % i} for i in range(5)])
    rows = _read(spark, tansu.address, topic=topic, groupIdPrefix="mine", **{"kafka.group.id": "g"}).collect()
    assert len(rows) == 5


def test_min_offsets_per_trigger_waits_for_enough_records(spark, tansu, new_topic, tmp_path: Path) -> None:
    topic = new_topic()
    name = f"min_{topic.replace('-', '_')}"
    produce_all(tansu.address, topic, [{"value": b"a%d" % i} for i in range(3)])
    options = {"startingOffsets": "earliest", "minOffsetsPerTrigger": "10", "maxTriggerDelay": "4s"}
    query = start_stream(
        _stream(spark, tansu.address, topic=topic, **options)
        .select("value")
        .writeStream.format("memory")
        .queryName(name)
        .trigger(processingTime="200 milliseconds")
    )
    try:
        _wait_rows(spark, name, 3)  # the first trigger runs whatever it finds (as Spark: no earlier batch)
        produce_all(tansu.address, topic, [{"value": b"b%d" % i} for i in range(4)])
        started = time.monotonic()
        time.sleep(1.5)
        assert spark.table(name).count() == 3  # 4 new records < 10: no micro-batch yet
        _wait_rows(spark, name, 7)  # maxTriggerDelay passed since the last micro-batch: the 4 go through
        assert time.monotonic() - started > 1.5
        produce_all(tansu.address, topic, [{"value": b"c%d" % i} for i in range(10)])
        _wait_rows(spark, name, 17)  # 10 new records: at once
    finally:
        query.stop()


def test_fail_on_data_loss_when_the_topic_was_recreated(spark, tansu, new_topic, tmp_path: Path) -> None:
    topic = new_topic()
    produce_all(tansu.address, topic, [{"value": b"old-%d" % i} for i in range(10)])
    checkpoint = str(tmp_path / "checkpoint")

    def run(**options) -> list[bytes]:
        got: list[bytes] = []  # foreachBatch runs in this process: the rows of each micro-batch land here
        query = start_stream(
            _stream(spark, tansu.address, topic=topic, startingOffsets="earliest", **options)
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

    assert len(run()) == 10
    admin = AdminClient({"bootstrap.servers": tansu.address, "log_level": 3})
    admin.delete_topics([topic])[topic].result(timeout=30)
    del admin  # its librdkafka handle would keep reconnecting after the session's broker stops
    tansu.create_topic(topic, 1)
    produce_all(tansu.address, topic, [{"value": b"new-%d" % i} for i in range(3)])
    with pytest.raises(Exception, match=r"offset went back from 10 to 3.*failOnDataLoss=false"):
        run()
    assert run(failOnDataLoss="false") == []  # as Spark: warned, read on from the new end (3)
    produce_all(tansu.address, topic, [{"value": b"later"}])
    assert run(failOnDataLoss="false") == [b"later"]


def _wait_rows(spark, name: str, n: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while spark.table(name).count() < n:
        assert time.monotonic() < deadline, f"{name}: fewer than {n} rows after {timeout} s"
        time.sleep(0.2)
    assert spark.table(name).count() == n
