"""kafka.isolation.level=read_committed: a fake broker (tests/fakebroker) that lists its aborted transactions and one
that lists none (markers decide, read ahead where a marker lies beyond the answer), the last stable offset as the
end, and on tansu transactions written by confluent-kafka read back without the aborted one (tansu lists no aborted
transactions: the markers are what makes it right), through the reader and through Spark."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from confluent_kafka import Producer
from fakebroker import FakeCluster, FetchLog
from fakebroker.harness import fake_cluster_thread

from bruce.spark.committed import decode_batches
from bruce.spark.kafka_reader import KafkaReader, KafkaReadError
from bruce.spark.options import ClientConfig
from bruce.wire.crc import crc32c
from bruce.wire.protocol.fetch import READ_COMMITTED, AbortedTransaction
from bruce.wire.recordbatch import CONTROL_BIT, build_record_batch

TS = 1_700_000_000_000


def _data(base: int, *values: bytes, pid: int = -1) -> bytes:
    records = [(None, v, TS, None) for v in values]
    if pid < 0:
        return build_record_batch(records, base_offset=base)
    return build_record_batch(
        records, base_offset=base, producer_id=pid, producer_epoch=0, base_sequence=base, transactional=True
    )


def _marker(base: int, pid: int, *, commit: bool) -> bytes:
    """A control batch: one record whose key is (version 0, type 1 commit / 0 abort)."""
    key = struct.pack(">hh", 0, 1 if commit else 0)
    built = bytearray(
        build_record_batch(
            [(key, b"\0" * 6, TS, None)], base_offset=base, producer_id=pid, producer_epoch=0, transactional=True
        )
    )
    (attributes,) = struct.unpack_from(">h", built, 21)
    struct.pack_into(">h", built, 21, attributes | CONTROL_BIT)
    struct.pack_into(">I", built, 17, crc32c(bytes(built[21:])))
    return bytes(built)


# offsets: 0 plain | 1-2 producer 7 | 3 commit 7 | 4-5 producer 8 | 6 plain | 7 producer 7 | 8 abort 8 | 9 commit 7
# | 10 plain
LOG = [
    (0, 0, _data(0, b"plain-0")),
    (1, 2, _data(1, b"commit-1", b"commit-2", pid=7)),
    (3, 3, _marker(3, 7, commit=True)),
    (4, 5, _data(4, b"abort-1", b"abort-2", pid=8)),
    (6, 6, _data(6, b"plain-1")),
    (7, 7, _data(7, b"commit-3", pid=7)),
    (8, 8, _marker(8, 8, commit=False)),
    (9, 9, _marker(9, 7, commit=True)),
    (10, 10, _data(10, b"plain-2")),
]
COMMITTED = [b"plain-0", b"commit-1", b"commit-2", b"plain-1", b"commit-3", b"plain-2"]


@contextmanager
def fake_log(last_stable: int, aborted: tuple[AbortedTransaction, ...] | None, log=LOG) -> Iterator[Any]:
    """A fake broker (tests/fakebroker) whose partition t/0 answers Fetch from ``log``, and a read_committed reader
    that fetches one batch per answer (64 bytes), so every transaction's marker lies beyond the answer holding it."""
    cluster = FakeCluster(brokers=1)
    cluster.add_topic("t", [1])
    cluster.fetch_logs[("t", 0)] = FetchLog(tuple(log), last_stable, aborted)
    with fake_cluster_thread(cluster):
        config = ClientConfig(cluster.bootstrap, isolation="read_committed", max_partition_fetch_bytes=64)
        with KafkaReader(config) as reader:
            yield reader, cluster
    cluster.verify()


def _values(reader: KafkaReader, end: int = 11) -> list[bytes | None]:
    return [r.value for batch in reader.read("t", 0, 0, end) for r in batch]


def _levels(cluster: FakeCluster) -> list[tuple[int, int]]:
    """(fetch offset, isolation level) of every Fetch the broker answered."""
    return [(s.body.topics[0].partitions[0].fetch_offset, s.body.isolation_level) for s in cluster.requests("Fetch")]


def test_the_brokers_aborted_list_decides() -> None:
    with fake_log(11, (AbortedTransaction(8, 4),)) as (reader, cluster):
        assert _values(reader) == COMMITTED
        assert {level for _, level in _levels(cluster)} == {READ_COMMITTED}  # no reading ahead: the list suffices


@pytest.mark.parametrize("aborted", [None, ()])
def test_without_a_list_the_markers_decide(aborted) -> None:
    with fake_log(11, aborted) as (reader, cluster):
        assert _values(reader) == COMMITTED
        ahead = [offset for offset, level in _levels(cluster) if level != READ_COMMITTED]
        # each answer holds one batch, so every transaction's marker lies beyond it: read ahead (uncommitted, as a
        # marker may lie above the LSO), each offset at most once more
        assert ahead == [3, 6, 7, 8, 9]


def test_the_read_stops_at_the_last_stable_offset() -> None:
    with fake_log(7, None) as (reader, _):  # producer 7's transaction from offset 7 is still open
        assert _values(reader) == [b"plain-0", b"commit-1", b"commit-2", b"plain-1"]


def test_a_transaction_without_marker_below_the_lso_fails_loudly() -> None:
    with fake_log(11, None, log=LOG[:6]) as (reader, _), pytest.raises(KafkaReadError) as caught:
        _values(reader, 8)
    assert caught.value.reason == "TRANSACTION_UNKNOWN" and "producer id 8 holding offsets 4-5" in str(caught.value)


# ---------------------------------------------------------------- on tansu


def _transactions(address: str, topic: str) -> Producer:
    """plain-0, a committed transaction (2), an aborted one (2), plain-1, an open transaction (1), plain-2."""
    plain = Producer({"bootstrap.servers": address, "log_level": 3})
    txn = Producer({"bootstrap.servers": address, "transactional.id": f"{topic}-txn", "log_level": 3})
    txn.init_transactions(20)
    plain.produce(topic, b"plain-0")
    plain.flush(20)
    txn.begin_transaction()
    txn.produce(topic, b"commit-1")
    txn.produce(topic, b"commit-2")
    txn.commit_transaction(20)
    txn.begin_transaction()
    txn.produce(topic, b"abort-1")
    txn.produce(topic, b"abort-2")
    txn.flush(20)
    txn.abort_transaction(20)
    plain.produce(topic, b"plain-1")
    plain.flush(20)
    txn.begin_transaction()
    txn.produce(topic, b"open-1")
    txn.flush(20)
    plain.produce(topic, b"plain-2")
    plain.flush(20)
    return txn


def test_tansu_committed_and_aborted_transactions(tansu, new_topic) -> None:
    topic = new_topic()
    txn = _transactions(tansu.address, topic)
    try:
        for isolation, expected in (
            ("read_uncommitted", [b"plain-0", b"commit-1", b"commit-2", b"abort-1", b"abort-2", b"plain-1"]),
            ("read_committed", [b"plain-0", b"commit-1", b"commit-2", b"plain-1"]),
        ):
            with KafkaReader(ClientConfig((tansu.address,), isolation=isolation)) as reader:
                end = reader.latest_offsets(topic, [0])[0]
                got = [r.value for batch in reader.read(topic, 0, 0, end) for r in batch]
                if isolation == "read_committed":  # what tansu gets wrong: no aborted list, the aborted records sent
                    answer = reader._call("fetch", lambda: reader._fetch(topic, 0, 0, 1 << 20))
                    sent = [r.value for r in decode_batches(answer.records)[0].records()]
                    assert not answer.aborted_transactions and b"abort-1" in sent
            if isolation == "read_uncommitted":
                assert end == 10 and got == [*expected, b"open-1", b"plain-2"]
            else:
                assert end == 8 and got == expected  # up to the open transaction, the aborted one left out
    finally:
        txn.abort_transaction(20)


@pytest.mark.spark
def test_spark_read_committed_on_tansu(spark, tansu, new_topic) -> None:
    topic = new_topic()
    _transactions(tansu.address, topic).commit_transaction(20)  # the open one commits: open-1 is readable now
    df = (
        spark.read.format("bruce")
        .option("bootstrap.servers", tansu.address)
        .option("topic", topic)
        .option("kafka.isolation.level", "read_committed")
        .load()
    )
    got = [bytes(r.value) for r in df.orderBy("offset").collect()]
    assert got == [b"plain-0", b"commit-1", b"commit-2", b"plain-1", b"open-1", b"plain-2"]
