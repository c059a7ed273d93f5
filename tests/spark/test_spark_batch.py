"""Batch reads and writes through a local Spark session against tansu: everything written is read back by
confluent-kafka, what confluent-kafka wrote is read back row for row, and a failing broker fails the write."""

from __future__ import annotations

import socket
import threading
from collections import Counter
from pathlib import Path

import pytest
from fakebroker import FakeCluster, Fault
from fakebroker.harness import fake_cluster_thread
from pyspark.sql import functions as F

from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.wire.datagram import parse_datagram

from .kafka_io import consume_all, produce_all

pytestmark = pytest.mark.spark
BASE_TS = 1_700_000_000_000


def _writer(df, address: str, **options):
    w = df.write.format("bruce").mode("append").option("bootstrap.servers", address)
    for k, v in options.items():
        w = w.option(k, v)
    return w


def test_write_then_consume_with_confluent(spark, tansu, new_topic) -> None:
    topic = new_topic(partitions=3)
    df = spark.range(3000).select(
        F.format_string("v-%05d", "id").alias("value"),
        F.when(F.col("id") % 4 == 0, None)
        .otherwise(F.format_string("k%d", F.col("id") % 17).cast("binary"))
        .alias("key"),
        F.array(F.struct(F.lit("n").alias("key"), F.col("id").cast("string").cast("binary").alias("value"))).alias(
            "headers"
        ),
        (F.col("id") + BASE_TS).alias("timestamp"),
    )
    _writer(df, tansu.address, topic=topic).save()
    got = consume_all(tansu.address, topic, 3, 3000)
    assert len(got) == 3000
    expected = {
        (b"v-%05d" % i, None if i % 4 == 0 else b"k%d" % (i % 17), BASE_TS + i, (("n", str(i).encode()),))
        for i in range(3000)
    }
    assert {(m.value, m.key, m.timestamp, m.headers) for m in got} == expected
    keyed = {}
    for m in got:
        if m.key is not None:
            keyed.setdefault(m.key, set()).add(m.partition)
    assert all(len(p) == 1 for p in keyed.values())  # a key always lands on one partition


def test_write_routes_by_topic_partition_and_partition_key(spark, tansu, new_topic) -> None:
    a, b = new_topic(partitions=4), new_topic(partitions=4)
    rows = [(f"r{i}", a if i % 2 else b, 3 if i % 3 == 0 else None, i) for i in range(60)]
    df = spark.createDataFrame(rows, "value string, topic string, partition int, partition_key int")
    _writer(df, tansu.address).save()
    for topic, parity in ((a, 1), (b, 0)):
        got = consume_all(tansu.address, topic, 4, 30)
        assert sorted(m.value for m in got) == sorted(f"r{i}".encode() for i in range(60) if i % 2 == parity)
        for m in got:
            i = int(m.value[1:])
            assert m.partition == (3 if i % 3 == 0 else i % 4)  # the explicit partition, else key mod 4


def _headers(headers: list | None) -> list | None:
    return None if headers is None else [tuple(h) for h in headers]


def test_read_what_confluent_wrote_row_for_row(spark, tansu, new_topic) -> None:
    topic = new_topic(partitions=2)
    messages = [
        {
            "partition": i % 2,
            "key": None if i % 7 == 0 else b"key-%d" % i,
            "value": b"value-%d" % i,
            "timestamp": BASE_TS + i,
            "headers": [("a", b"%d" % i), ("b", None)] if i % 5 == 0 else None,
        }
        for i in range(500)
    ]
    produce_all(tansu.address, topic, messages)
    df = (
        spark.read.format("bruce")
        .option("kafka.bootstrap.servers", tansu.address)
        .option("subscribe", topic)
        .option("maxRecordsPerPartition", "100")
        .option("includeHeaders", "true")
        .load()
    )
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
        "timestampType:int,headers:array<struct<key:string,value:binary>>>"
    )
    assert df.rdd.getNumPartitions() == 6  # 250 records per Kafka partition, split into 3 tasks each
    rows = df.select("*", F.unix_millis("timestamp").alias("ms")).orderBy("partition", "offset").collect()
    got = [
        (
            r.partition,
            r.offset,
            r.key,
            r.value,
            r.ms,
            r.timestampType,
            r.topic,
            r.headers and [tuple(h) for h in r.headers],
        )
        for r in rows
    ]
    want = [
        (p, offset, m["key"], m["value"], m["timestamp"], 0, topic, m["headers"])  # none: null, as in Spark
        for p in (0, 1)
        for offset, m in enumerate(m for m in messages if m["partition"] == p)  # each partition in produce order
    ]
    assert got == want


def test_read_offsets_json(spark, tansu, new_topic) -> None:
    topic = new_topic(partitions=2)
    produce_all(tansu.address, topic, [{"partition": i % 2, "value": b"%d" % i} for i in range(40)])
    df = (
        spark.read.format("bruce")
        .option("bootstrap.servers", tansu.address)
        .option("topic", topic)
        .option("startingOffsets", f'{{"{topic}": {{"0": 5, "1": -2}}}}')
        .option("endingOffsets", f'{{"{topic}": {{"0": 8, "1": -1}}}}')
        .load()
    )
    got = Counter((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == Counter([(0, 5), (0, 6), (0, 7)] + [(1, o) for o in range(20)])


def test_read_empty_topic(spark, tansu, new_topic) -> None:
    topic = new_topic(partitions=2)
    assert (
        spark.read.format("bruce").option("bootstrap.servers", tansu.address).option("topic", topic).load().count() == 0
    )


def test_bad_options_fail_at_planning(spark, tansu) -> None:
    df = spark.range(3).select(F.col("id").cast("string").alias("value"))
    with pytest.raises(Exception, match="no topic: give the 'topic' option"):
        _writer(df, tansu.address).save()
    with pytest.raises(Exception, match="cannot be overwritten"):
        df.write.format("bruce").mode("overwrite").option("bootstrap.servers", tansu.address).option(
            "topic", "t"
        ).save()
    with pytest.raises(Exception, match="topic 'absent-topic' does not exist"):
        spark.read.format("bruce").option("bootstrap.servers", tansu.address).option(
            "topic", "absent-topic"
        ).load().collect()


def test_broker_refusing_writes_fails_the_task(spark) -> None:
    cluster = FakeCluster(brokers=1)
    cluster.add_topic("refused", [1, 1])
    cluster.brokers[1].script(0, *[Fault.error(87)] * 100)  # INVALID_RECORD for every produce
    df = spark.range(2000).select(F.col("id").cast("string").alias("value"))
    with fake_cluster_thread(cluster), pytest.raises(Exception) as failed:
        _writer(df, cluster.bootstrap[0], topic="refused").save()
    text = str(failed.value)
    assert "not every row was delivered" in text and "KAFKA_ERROR_ACK" in text and "INVALID_RECORD" in text
    assert cluster.requests("Produce") and cluster.records("refused") == []


def test_broker_gone_fails_the_task(spark, tmp_path: Path) -> None:
    broker = EmbeddedBroker(log_path=tmp_path / "tansu.log").start()
    try:
        broker.create_topic("short-lived", 1)
        df = spark.range(100).select(F.col("id").cast("string").alias("value"))
        _writer(df, broker.address, topic="short-lived").save()  # works while the broker is up
    finally:
        broker.stop()
    with pytest.raises(Exception) as failed:
        _writer(df, broker.address, topic="short-lived", **{"delivery.timeout.ms": "2000"}).save()
    text = str(failed.value)
    assert f"no broker of {broker.address} answered Metadata within 2.0 s" in text and "no row was sent" in text


def test_write_through_the_daemon_socket(spark, tmp_path: Path) -> None:
    """A stand-in for the daemon reads the socket while the job writes (the kernel queues only a few datagrams)."""
    path = str(tmp_path / "bruce.sock")
    received: list[bytes] = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        sock.settimeout(0.2)

        def drain() -> None:
            while len(received) < 200:
                try:
                    received.append(sock.recv(70000))
                except TimeoutError:
                    if done.is_set():
                        return

        done = threading.Event()
        reader = threading.Thread(target=drain)
        reader.start()
        try:
            df = spark.range(200).select(
                F.format_string("e%d", "id").alias("value"), (F.col("id") % 3).alias("partition_key")
            )
            df.write.format("bruce").mode("append").option("socket", path).option("topic", "events").save()
        finally:
            done.set()
            reader.join(10)
    got = [parse_datagram(d) for d in received]
    assert sorted((d.topic, d.value, d.partition_key) for d in got) == sorted(
        (b"events", b"e%d" % i, i % 3) for i in range(200)
    )
