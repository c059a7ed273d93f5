"""exactlyOnce=true on tansu: a streaming copy interrupted in the middle of a micro-batch — kill -9 of the driver's
Python process, query.stop() — and restarted from its checkpoint loses and duplicates nothing, read back with the
library's read_committed reader. The restarts run in the tests' shared session (one driver start-up per run, not
two); kill -9 of the driver's JVM, the same kills at-least-once, and the kills on a standalone cluster (executors
too) are in ``bench/spark_bench.py --exactly-once --kills [--cluster]``. Also: the option's checks, a replayed share
skipped by its marker, a zombie fenced."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from bruce.spark import OptionError, WriteSummary, start_stream
from bruce.spark.exactly_once import Share, last_committed
from bruce.spark.options import MARKER_TOPIC, ClientConfig, write_options

from .eos_runs import committed_values, fill, kill_run

pytestmark = pytest.mark.spark

ROWS, PER_TRIGGER = 4000, 1000  # four micro-batches of two tasks each
# killed or stopped in the second micro-batch, half of it through the slow UDF
KILL = {"exactly_once": True, "rows": ROWS, "max_offsets": PER_TRIGGER, "kill_at": PER_TRIGGER + PER_TRIGGER // 2}


def test_option_checks() -> None:
    base = {"bootstrap.servers": "127.0.0.1:9092", "topic": "t"}
    assert write_options(base).marker_topic is None
    assert write_options(base | {"exactlyOnce": "true"}).marker_topic == MARKER_TOPIC
    assert write_options(base | {"exactlyOnce": "TRUE", "exactlyOnce.markerTopic": "m"}).marker_topic == "m"
    with pytest.raises(OptionError, match="'exactlyOnce': 'yes' is not true or false"):
        write_options(base | {"exactlyOnce": "yes"})
    with pytest.raises(OptionError, match="markerTopic' needs exactlyOnce=true"):
        write_options(base | {"exactlyOnce.markerTopic": "m"})
    with pytest.raises(
        OptionError, match="in transactions, and a transactional producer is idempotent: it needs acks=-1"
    ):
        write_options(base | {"exactlyOnce": "true", "kafka.acks": "1"})
    with pytest.raises(OptionError, match="needs direct writes"):
        write_options({"socket": "/tmp/x", "topic": "t", "exactlyOnce": "true"})


def test_batch_write_refuses_exactly_once(spark, tansu, new_topic) -> None:
    df = spark.createDataFrame([(b"v",)], "value binary")
    writer = df.write.format("bruce").option("bootstrap.servers", tansu.address).option("topic", new_topic())
    with pytest.raises(Exception, match="only streaming writes"):
        writer.option("exactlyOnce", "true").save()


def test_replayed_batch_is_skipped(spark, tansu, new_topic, tmp_path: Path) -> None:
    """The same micro-batch written twice (its commit log entry removed, as when the driver died before writing
    it): the second time every task finds its marker and writes nothing."""
    source, sink, markers = new_topic(partitions=2), new_topic(partitions=2), new_topic(partitions=1)
    fill(tansu.address, source, 100)
    checkpoint = tmp_path / "checkpoint"

    def copy() -> str:
        query = start_stream(
            spark.readStream.format("bruce")
            .option("bootstrap.servers", tansu.address)
            .option("topic", source)
            .option("startingOffsets", "earliest")
            .load()
            .select("key", "value")
            .writeStream.format("bruce")
            .option("bootstrap.servers", tansu.address)
            .option("topic", sink)
            .option("exactlyOnce", "true")
            .option("exactlyOnce.markerTopic", markers)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
        )
        query.awaitTermination(120)
        return query.id

    query_id = copy()
    assert sorted(int(v) for v in committed_values(tansu.address, sink).elements()) == list(range(100))
    for name in ("0", ".0.crc"):  # Spark replays batch 0 at the next start
        (checkpoint / "commits" / name).unlink()
    assert copy() == query_id  # the query id lives in the checkpoint
    values = committed_values(tansu.address, sink)
    assert sorted(int(v) for v in values.elements()) == list(range(100))  # not written twice
    client = ClientConfig((tansu.address,))
    for partition in (0, 1):
        assert last_committed(client, markers, 0, Share(query_id, 0, partition).key) == 0


@pytest.mark.timeout(480)  # one driver start-up (~1 min on a loaded 2-core machine)
def test_driver_killed_mid_batch_exactly_once(spark, tansu, new_topic, tmp_path: Path) -> None:
    """kill -9 of a driver process in its second micro-batch, some of the batch's rows written (in an open
    transaction); the copy restarted from the checkpoint in this session."""
    source, sink = new_topic(partitions=2), new_topic(partitions=2)
    fill(tansu.address, source, ROWS)
    run = kill_run(tansu.address, source, sink, tmp_path, kind="driver", session=spark, **KILL)
    print(run.describe())
    assert run.lost == 0 and run.duplicated == 0, run.describe()
    assert sum(run.values.values()) == ROWS


def test_query_stopped_mid_batch_exactly_once(spark, tansu, new_topic, tmp_path: Path) -> None:
    """query.stop() in the second micro-batch (its tasks cancelled), then the copy restarted, all in this session.
    kill -9 of the driver's JVM, and every kill at-least-once: bench/spark_bench.py --exactly-once --kills."""
    source, sink = new_topic(partitions=2), new_topic(partitions=2)
    fill(tansu.address, source, ROWS)
    run = kill_run(tansu.address, source, sink, tmp_path, kind="stop", session=spark, **KILL)
    print(run.describe())
    assert run.lost == 0 and run.duplicated == 0, run.describe()
    assert sum(run.values.values()) == ROWS


def test_marker_lookup_sees_commits_past_an_open_transaction(tansu, new_topic) -> None:
    """The marker lookup: a committed marker after another producer's open transaction (which holds the last
    stable offset below it) counts; a marker of an aborted transaction does not."""
    from bruce.producer import Producer, ProducerConfig, run

    topic = new_topic(partitions=1)
    key = Share("q", 0, 0).key

    def config(txn: str) -> ProducerConfig:
        return ProducerConfig(bootstrap_servers=(tansu.address,), transactional_id=txn, transaction_timeout_ms=60_000)

    client = ClientConfig((tansu.address,))
    found: list[int | None] = []

    async def scenario() -> None:
        async with Producer(config("marker-a")) as a:
            await a.init_transactions(10)
            a.begin_transaction()
            a.send(topic, b"3", key, 0)
            await a.commit_transaction(10)
        other = Producer(config("marker-other"))
        await other.start()
        await other.init_transactions(10)
        other.begin_transaction()
        await other.send(topic, b"9", b"someone-else", 0)  # written, left open: the LSO stays here
        async with Producer(config("marker-a")) as a:
            await a.init_transactions(10)
            a.begin_transaction()
            a.send(topic, b"4", key, 0)
            await a.commit_transaction(10)
            a.begin_transaction()
            await a.send(topic, b"5", key, 0)
            await a.abort_transaction(10)
        found.append(await asyncio.to_thread(last_committed, client, topic, 0, key))  # `other` still open
        await other.abort_transaction(10)
        await other.close()

    assert last_committed(client, topic, 0, key) is None
    run(scenario())
    assert found == [4]
    assert last_committed(client, topic, 0, key) == 4
    assert last_committed(client, topic, 0, b"q:1") is None


def test_zombie_share_is_fenced_and_a_third_attempt_skipped(tansu, new_topic) -> None:
    """Two attempts of one share (a zombie left running, its replay): the replay's init_transactions fences the
    zombie, whose commit then fails; only the replay's rows are committed; a third attempt finds the marker."""
    import pyarrow as pa

    from bruce.producer import Producer, TransactionError, run
    from bruce.spark.direct import produce_batches
    from bruce.spark.exactly_once import TaskTransaction

    sink, markers = new_topic(partitions=1), new_topic(partitions=1)
    options = write_options(
        {"bootstrap.servers": tansu.address, "topic": sink, "exactlyOnce": "true", "exactlyOnce.markerTopic": markers}
    )
    share = Share("zombie-query", 5, 0)

    def rows(value: bytes) -> Iterator[pa.RecordBatch]:
        return iter([pa.record_batch({"value": pa.array([value], pa.binary())})])

    async def scenario() -> tuple[WriteSummary, WriteSummary]:
        zombie_txn = TaskTransaction(options, share)
        async with Producer(zombie_txn.config) as zombie:
            await zombie.ready(10)
            assert await zombie_txn.open(zombie, 10)
            await zombie.send(sink, b"zombie")  # written in its open transaction
            replay = await produce_batches(rows(b"replay"), options, TaskTransaction(options, share))
            with pytest.raises(TransactionError):
                await zombie_txn.commit(zombie, 10)
        third = await produce_batches(rows(b"third"), options, TaskTransaction(options, share))
        return replay, third

    replay, third = run(scenario())
    assert (replay.delivered, replay.skipped, third.delivered, third.skipped) == (1, 0, 0, 1)
    assert committed_values(tansu.address, sink) == Counter({b"replay": 1})
