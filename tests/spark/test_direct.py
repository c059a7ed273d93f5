"""Direct delivery (bruce.producer) of Arrow batches, without Spark: routing per row, every row delivered and read
back by confluent-kafka, and a failing broker turned into discards with reasons rather than success."""

from __future__ import annotations

import pyarrow as pa
import pytest
from fakebroker import FakeCluster, Fault
from kafka.partitioner.default import murmur2 as java_murmur2

from bruce.producer import Partition, Topic, partition_for_key, run
from bruce.producer.queueing import Queueing
from bruce.proxy.config.ports import free_port
from bruce.spark.delivery import DeliveryFailed, KafkaUnavailable
from bruce.spark.direct import produce_batches
from bruce.spark.options import write_options
from bruce.spark.schema import BadRow, arrow_rows, row_sends
from bruce.spark.task import deliver
from bruce.wire.plog import murmur2

from .kafka_io import consume_all


def _rows(**columns):
    return arrow_rows(pa.RecordBatch.from_pydict(columns))


def test_routing_per_row() -> None:
    rows = _rows(
        value=[b"a", b"b", b"c", b"d", b"e"],
        key=[None, b"k", b"k", None, None],
        topic=["t1", "t3", "t2", "t2", "t3"],
        partition=pa.array([None, None, 3, None, None], pa.int32()),
        partition_key=pa.array([None, None, 9, 2**32 - 1, None], pa.int64()),
        timestamp=pa.array([5, None, 6, 7, 8], pa.int64()),
    )
    a, b, c, d, e = row_sends(rows, None)  # (topic, value, key, partition, timestamp, headers, partition_key)
    assert a == ("t1", b"a", None, None, 5, None, None)
    assert b[:4] == ("t3", b"b", b"k", None) and b[6] == murmur2(b"k") & 0x7FFFFFFF  # Java's placement
    assert b[4] > 1_600_000_000_000  # no timestamp: now
    assert c == ("t2", b"c", b"k", 3, 6, None, None)  # partition wins over partition_key and key
    assert d == ("t2", b"d", None, None, 7, None, 2**32 - 1)
    assert e[:4] == ("t3", b"e", None, None) and e[6] is None  # any partition
    with_option = [send[0] for send in row_sends(rows, "default")]
    assert with_option == ["default"] * 5  # the topic option wins over the column, as in Spark


def test_partition_key_semantics_are_bruces() -> None:
    topic = Topic("t", tuple(Partition(i, 1) for i in range(4)), {0: 1, 1: 1, 3: 1}, (0, 1, 3))
    ((*_, partition_key),) = row_sends(_rows(value=[b"v"], partition_key=pa.array([6], pa.int64())), "t")
    assert partition_for_key(partition_key, topic) == 3  # 6 % 4 = 2 is unavailable: the next available one


@pytest.mark.parametrize(
    ("columns", "default", "message"),
    [
        ({"value": [b"v"], "topic": pa.array([None], pa.string())}, None, "null topic"),
        ({"value": [b"v"], "partition": pa.array([-1], pa.int32())}, "t", "partition -1 is negative"),
        ({"value": [b"v"], "partition_key": pa.array([2**32], pa.int64())}, "t", "does not fit in 32 bits"),
    ],
)
def test_bad_rows(columns: dict, default: str | None, message: str) -> None:
    with pytest.raises(BadRow, match=message):
        list(row_sends(_rows(**columns), default))


def _batches(n: int, per_batch: int, *, key_every: int = 0) -> list[pa.RecordBatch]:
    out = []
    for start in range(0, n, per_batch):
        ids = range(start, min(n, start + per_batch))
        keys = [str(i % key_every).encode() if key_every else None for i in ids]
        out.append(
            pa.RecordBatch.from_pydict({"value": [b"row-%06d" % i for i in ids], "key": pa.array(keys, pa.binary())})
        )
    return out


def test_every_row_delivered_and_read_back(tansu, new_topic) -> None:
    topic = new_topic(partitions=3)
    options = write_options(
        {"bootstrap.servers": tansu.address, "topic": topic, "kafka.queue.buffering.max.messages": "700"}
    )
    summary = deliver(iter(_batches(5000, 1000, key_every=11)), options)
    assert (summary.rows, summary.delivered, summary.discarded, summary.mode) == (5000, 5000, {}, "direct")
    got = consume_all(tansu.address, topic, 3, 5000)
    assert sorted(m.value for m in got) == [b"row-%06d" % i for i in range(5000)]
    by_key: dict[bytes, set[int]] = {}
    for m in got:
        by_key.setdefault(m.key, set()).add(m.partition)
    java = {key: {(java_murmur2(key) & 0x7FFFFFFF) % 3} for key in by_key}  # kafka-python's murmur2 partitioner
    assert by_key == java  # one key, one partition: the one Java's producer (and Spark's Kafka sink) would pick


def test_batches_go_as_columns_and_every_row_is_read_back(tansu, new_topic, monkeypatch) -> None:
    def no_send(*args, **kwargs):
        raise AssertionError("a batch went row by row")

    monkeypatch.setattr(Queueing, "send", no_send)  # every Producer's send (its base class's)
    topic = new_topic(partitions=3)
    options = write_options(
        {"bootstrap.servers": tansu.address, "topic": topic, "kafka.queue.buffering.max.messages": "2500"}
    )
    batches = [
        pa.RecordBatch.from_pydict({"value": [b"row-%06d" % i for i in range(s, s + 1000)]})
        for s in range(0, 10_000, 1000)
    ]
    summary = deliver(iter(batches), options)  # 2,500 held at most: later batches wait for acknowledgements
    assert (summary.rows, summary.delivered, summary.discarded) == (10_000, 10_000, {})
    got = consume_all(tansu.address, topic, 3, 10_000)
    assert sorted(m.value for m in got) == [b"row-%06d" % i for i in range(10_000)]
    assert len({m.partition for m in got}) > 1  # keyless rows spread over the partitions


def test_routing_columns_go_as_columns_and_land_as_row_sends_routes_them(tansu, new_topic, monkeypatch) -> None:
    """What a DataFrame read from Kafka carries (topic, partition, key, timestamp, headers), mixed with rows routed
    by partition_key and by key: each row where row_sends puts it, in its order per partition, read back whole."""
    monkeypatch.setattr(Queueing, "send", lambda *a, **k: pytest.fail("a batch went row by row"))
    topic = new_topic(partitions=4)
    n = 3000
    header = pa.struct([("key", pa.string()), ("value", pa.binary())])
    batch = pa.RecordBatch.from_pydict(
        {
            "key": [None if i % 7 == 0 else b"key-%d" % (i % 13) for i in range(n)],
            "value": [b"row-%06d" % i for i in range(n)],
            "topic": [topic] * n,
            "partition": pa.array([i % 4 if i % 3 == 0 else None for i in range(n)], pa.int32()),
            "partition_key": pa.array([i if i % 3 == 1 else None for i in range(n)], pa.int64()),
            "timestamp": pa.array([1_700_000_000_000_000 + 1000 * i for i in range(n)], pa.timestamp("us", tz="UTC")),
            "headers": pa.array(
                [[{"key": "i", "value": b"%d" % i}] if i % 2 else None for i in range(n)], pa.list_(header)
            ),
        }
    )
    options = write_options({"bootstrap.servers": tansu.address, "kafka.queue.buffering.max.messages": "1000"})
    summary = deliver(iter([batch.slice(s, 500) for s in range(0, n, 500)]), options)
    assert (summary.rows, summary.delivered, summary.discarded) == (n, n, {})
    got = consume_all(tansu.address, topic, 4, n)
    info = Topic(topic, tuple(Partition(p, 1) for p in range(4)), dict.fromkeys(range(4), 1), (0, 1, 2, 3))
    sends = list(row_sends(arrow_rows(batch), None))
    by_value = {m.value: m for m in got}
    assert len(by_value) == n
    for _, value, key, partition, ts, headers, partition_key in sends:
        m = by_value[value]
        assert (m.key, m.timestamp, m.headers) == (key, ts, tuple(headers or ()))
        if partition is not None:
            assert m.partition == partition
        elif partition_key is not None:
            assert m.partition == partition_for_key(partition_key, info)
    placed = {value for _, value, key, partition, _, _, pk in sends if (key, partition, pk) != (None, None, None)}
    for partition in range(4):  # each partition's rows placed by their data in the order of the batch
        values = [m.value for m in sorted(got, key=lambda m: m.offset) if m.partition == partition]
        assert [v for v in values if v in placed] == sorted(v for v in values if v in placed)
        keyless = [v for v in values if v not in placed]  # any partition: in their order among themselves
        assert keyless == sorted(keyless)


def test_unreachable_broker_fails_before_taking_rows() -> None:
    port = free_port()
    options = write_options(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "topic": "t",
            "delivery.timeout.ms": "1500",
            "kafka.connect.timeout.ms": "200",
        }
    )
    batches = iter(_batches(300, 100))
    with pytest.raises(KafkaUnavailable, match=f"no broker of 127.0.0.1:{port} answered Metadata within 1.5 s"):
        deliver(batches, options)
    assert len(list(batches)) == 3  # no row was taken


def test_broker_lost_after_metadata_discards_on_delivery_timeout() -> None:
    async def scenario():
        cluster = FakeCluster(brokers=1)
        async with cluster:
            cluster.add_topic("t", [1])
            cluster.brokers[1].script(0, *[Fault.delay(5)] * 20)  # produce answers never arrive in time
            options = write_options(
                {"bootstrap.servers": cluster.bootstrap[0], "topic": "t", "delivery.timeout.ms": "1000"}
            )
            return await produce_batches(iter(_batches(300, 100)), options)

    summary = run(scenario())
    assert (summary.rows, summary.delivered, summary.discarded) == (300, 0, {"MESSAGE_TIMEOUT": 300})
    failed = DeliveryFailed(summary)
    assert failed.reason == "MESSAGE_TIMEOUT"
    assert "not every row was delivered" in str(failed) and "at-least-once" in str(failed)


def test_broker_refusing_writes_fails_fast() -> None:
    async def scenario():
        async with FakeCluster(brokers=1) as cluster:
            cluster.add_topic("t", [1, 1])
            cluster.brokers[1].script(0, *[Fault.error(87)] * 50)  # INVALID_RECORD on every produce
            options = write_options({"bootstrap.servers": cluster.bootstrap[0], "topic": "t"})
            summary = await produce_batches(iter(_batches(50_000, 1000)), options)
            return summary, cluster

    summary, cluster = run(scenario())
    assert summary.delivered == 0 and summary.discarded.get("KAFKA_ERROR_ACK", 0) >= 1
    assert summary.rows == summary.discarded_total < 50_000  # stopped taking input after the first discard
    assert "INVALID_RECORD" in summary.first_error
    assert cluster.unexpected == [] and all(s.outcome == "error 87" for s in cluster.requests("Produce"))


def test_unknown_topic_is_a_bad_topic_discard_without_autocreate(tansu) -> None:
    options = write_options(
        {"bootstrap.servers": tansu.address, "topic": "never-created-topic", "kafka.topic.autocreate": "false"}
    )
    with pytest.raises(DeliveryFailed) as failed:
        deliver(iter(_batches(10, 10)), options)
    assert failed.value.summary.discarded == {"BAD_TOPIC": 10}
    assert "never-created-topic" in str(failed.value)


def test_a_row_over_message_max_bytes_is_a_bad_row() -> None:
    async def scenario():
        async with FakeCluster(brokers=1) as cluster:
            cluster.add_topic("t", [1])
            options = write_options(
                {"bootstrap.servers": cluster.bootstrap[0], "topic": "t", "kafka.message.max.bytes": "2000"}
            )
            batch = pa.RecordBatch.from_pydict({"value": [b"small", b"x" * 5000]})
            with pytest.raises(BadRow, match=r"larger than kafka\.message\.max\.bytes allows: MSG_SIZE_TOO_LARGE"):
                await produce_batches(iter([batch]), options)

    run(scenario())
