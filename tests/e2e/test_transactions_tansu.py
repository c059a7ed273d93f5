"""Transactions on tansu, the test broker: confluent-kafka's transactional producer first (the reference), then ours
doing the same, each read back by confluent-kafka consumers in read_committed and read_uncommitted (CRC checks on).
tansu 0.6's gap is pinned here (docs/producer.md, "Transactions", says the same): it writes the commit and abort
markers and holds the last stable offset at an open transaction, but its Fetch lists no aborted transactions, so a
read_committed consumer receives the records of aborted transactions too. What tansu enforces (fencing by a newer
producer of the same transactional id) is proven here; the error cases it cannot produce are on the fake broker
(tests/producer_faults/test_fault_transactions.py)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka import Producer as ConfluentProducer
from kafkaclient import KafkaClient

from bruce.producer import DeliveryError, DiscardReason, Producer, ProducerConfig, TransactionError
from bruce.spark.kafka_reader import KafkaReader
from bruce.spark.options import ClientConfig
from bruce.wire.protocol import fetch
from bruce.wire.recordbatch import decode_record_batches

pytestmark = pytest.mark.e2e
COMMITTED, UNCOMMITTED = "read_committed", "read_uncommitted"


def read(address: str, topic: str, isolation: str, expected: int, timeout: float = 10.0) -> list[bytes]:
    """Values of partition 0 from offset 0, as a confluent-kafka consumer with ``isolation`` gets them."""
    consumer = Consumer(
        {
            "bootstrap.servers": address,
            "group.id": f"txn-{topic}-{isolation}",
            "isolation.level": isolation,
            "check.crcs": True,
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
            "log_level": 3,
        }
    )
    values: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + timeout
        while len(values) < expected and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is not None:
                assert m.error() is None, m.error()
                values.append(m.value())
        extra = consumer.poll(0.5)  # nothing more than expected
        assert extra is None, extra.value()
    finally:
        consumer.close()
    return values


def fetched(address: str, topic: str) -> tuple[int, int, Any, list[tuple[int, bool, str]]]:
    """A read_committed Fetch of partition 0: (high watermark, last stable offset, aborted transactions listed,
    [(producer id, transactional, "data" or the marker's type: "commit", "abort") per batch])."""
    partition = fetch.FetchPartition(0, 0, 1 << 20)
    request = fetch.FetchRequest(topics=(fetch.FetchTopic(topic, (partition,)),), max_wait_ms=100, isolation_level=1)
    with KafkaClient.connect(address) as client:
        ((answer,),) = [t.partitions for t in client.request(request).responses]
    batches = decode_record_batches(answer.records or b"")
    shape = [(b.producer_id, b.is_transactional, _kind(b)) for b in batches]
    return answer.high_watermark, answer.last_stable_offset, answer.aborted_transactions, shape


def _kind(batch: Any) -> str:
    if not batch.is_control:
        return "data"
    (marker,) = batch.records
    return {0: "abort", 1: "commit"}[int.from_bytes(marker.key[2:4], "big")]  # key: version, type (int16 each)


def pin_tansu_gaps(address: str, committed: str, aborted: str) -> None:
    """Both topics as tansu 0.6 serves them: markers written, but no aborted transaction listed."""
    assert read(address, committed, COMMITTED, 3) == [b"c0", b"c1", b"c2"]
    assert read(address, committed, UNCOMMITTED, 3) == [b"c0", b"c1", b"c2"]
    # Kafka: read_committed gets b"after" only (the aborted batch is listed and dropped, its marker skipped)
    assert read(address, aborted, COMMITTED, 4) == [b"a0", b"a1", b"a2", b"after"]
    assert read(address, aborted, UNCOMMITTED, 4) == [b"a0", b"a1", b"a2", b"after"]
    assert [kind for _, _, kind in fetched(address, committed)[3]] == ["data", "commit"]
    high, stable, listed, batches = fetched(address, aborted)
    assert (high, stable) == (6, 6)  # each marker takes an offset, as in Kafka
    assert [kind for _, _, kind in batches] == ["data", "abort", "data", "commit"]
    assert all(transactional for _, transactional, _ in batches)
    assert not listed  # the gap; Kafka lists the aborted transaction (producer id, first offset 0)


def test_confluent_transactional_producer_on_tansu(tansu, new_topic) -> None:
    """The reference: commit, abort, commit with confluent-kafka."""
    committed, aborted = new_topic(), new_topic()
    producer = ConfluentProducer({"bootstrap.servers": tansu.address, "transactional.id": f"ref-{committed}"})
    producer.init_transactions(10)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(committed, b"c%d" % i, partition=0)
    producer.commit_transaction(10)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(aborted, b"a%d" % i, partition=0)
    assert producer.flush(10) == 0
    producer.abort_transaction(10)
    producer.begin_transaction()
    producer.produce(aborted, b"after", partition=0)
    producer.commit_transaction(10)
    pin_tansu_gaps(tansu.address, committed, aborted)


def test_our_transactional_producer_on_tansu(tansu, new_topic) -> None:
    """Ours doing the same; every batch transactional, under the producer id the coordinator gave."""
    committed, aborted = new_topic(), new_topic()

    async def main() -> None:
        config = ProducerConfig(bootstrap_servers=(tansu.address,), transactional_id=f"ours-{committed}")
        async with Producer(config) as p:
            await p.init_transactions(10)
            p.begin_transaction()
            handles = [p.send(committed, b"c%d" % i, partition=0) for i in range(3)]
            await p.commit_transaction(10)
            assert [h.result() for h in handles] == [(0, 0), (0, 1), (0, 2)]
            p.begin_transaction()
            handles = [p.send(aborted, b"a%d" % i, partition=0) for i in range(3)]
            assert await p.flush(10) == 0  # written before the abort, as confluent-kafka's were
            await p.abort_transaction(10)
            p.begin_transaction()
            p.send(aborted, b"after", partition=0)
            await p.commit_transaction(10)
            seq = p._dispatcher.seq
            assert seq is not None and seq.idem is not None
            pid = seq.idem.producer_id

        for topic in (committed, aborted):
            assert {b[0] for b in fetched(tansu.address, topic)[3]} == {pid}

    asyncio.run(main())
    pin_tansu_gaps(tansu.address, committed, aborted)


def test_a_newer_producer_fences_ours_on_tansu(tansu, new_topic) -> None:
    """confluent-kafka's producer takes our transactional id over: ours then fails for good (PRODUCER_FENCED, as
    confluent-kafka reports in the same place), its message is not written, and the newer producer commits."""
    topic = new_topic()
    tid = f"fence-{topic}"

    async def main() -> None:
        config = ProducerConfig(bootstrap_servers=(tansu.address,), transactional_id=tid)
        async with Producer(config) as ours:
            await ours.init_transactions(10)
            ours.begin_transaction()
            ours.send(topic, b"first", partition=0)
            await ours.commit_transaction(10)
            newer = ConfluentProducer({"bootstrap.servers": tansu.address, "transactional.id": tid})
            await asyncio.to_thread(newer.init_transactions, 10)
            ours.begin_transaction()
            zombie = ours.send(topic, b"zombie", partition=0)
            with pytest.raises(TransactionError) as caught:
                await ours.commit_transaction(10)
            assert caught.value.fatal and caught.value.code == "PRODUCER_FENCED"
            await ours.flush(1)
            with pytest.raises(DeliveryError) as lost:
                zombie.result()
            assert lost.value.reason is DiscardReason.TRANSACTION_ABORTED
            newer.begin_transaction()
            newer.produce(topic, b"newer", partition=0)
            await asyncio.to_thread(newer.commit_transaction, 10)

    asyncio.run(main())
    assert read(tansu.address, topic, COMMITTED, 2) == [b"first", b"newer"]


def test_confluent_is_fenced_by_ours_on_tansu(tansu, new_topic) -> None:
    """The other way round: our init_transactions fences a confluent-kafka producer of the same id."""
    topic = new_topic()
    tid = f"fence2-{topic}"
    older = ConfluentProducer({"bootstrap.servers": tansu.address, "transactional.id": tid})
    older.init_transactions(10)

    async def main() -> None:
        config = ProducerConfig(bootstrap_servers=(tansu.address,), transactional_id=tid)
        async with Producer(config) as ours:
            await ours.init_transactions(10)
            older.begin_transaction()
            older.produce(topic, b"zombie", partition=0)
            with pytest.raises(KafkaException) as caught:
                await asyncio.to_thread(older.commit_transaction, 10)
            assert caught.value.args[0].fatal()
            ours.begin_transaction()
            ours.send(topic, b"ours", partition=0)
            await ours.commit_transaction(10)

    asyncio.run(main())
    assert read(tansu.address, topic, COMMITTED, 1) == [b"ours"]


def test_a_failed_message_makes_the_transaction_abortable_on_tansu(tansu, new_topic) -> None:
    """A message that cannot be delivered (a partition the topic does not have): commit refuses (txn_requires_abort),
    abort works, and the next transaction commits under the same producer id."""
    topic = new_topic()

    async def main() -> None:
        config = ProducerConfig(bootstrap_servers=(tansu.address,), transactional_id=f"abortable-{topic}")
        async with Producer(config) as p:
            await p.init_transactions(10)
            p.begin_transaction()
            p.send(topic, b"kept-out", partition=0)
            p.send(topic, b"nowhere", partition=7)
            with pytest.raises(TransactionError) as caught:
                await p.commit_transaction(10)
            assert caught.value.txn_requires_abort and not caught.value.fatal
            await p.abort_transaction(10)
            p.begin_transaction()
            p.send(topic, b"good", partition=0)
            await p.commit_transaction(10)

    asyncio.run(main())
    # tansu: the aborted b"kept-out" is read by read_committed too (no aborted transaction listed)
    assert read(tansu.address, topic, UNCOMMITTED, 2) == [b"kept-out", b"good"]
    assert read(tansu.address, topic, COMMITTED, 2) == [b"kept-out", b"good"]


def test_an_open_transaction_holds_back_tansus_stable_offset(tansu, new_topic) -> None:
    """As Kafka: the last stable offset stops at the first record of an open transaction, so read_committed waits."""
    topic = new_topic()

    async def main() -> None:
        config = ProducerConfig(bootstrap_servers=(tansu.address,), transactional_id=f"open-{topic}")
        async with Producer(config) as p:
            await p.init_transactions(10)
            p.begin_transaction()
            p.send(topic, b"before", partition=0)
            await p.commit_transaction(10)
            p.begin_transaction()
            p.send(topic, b"open", partition=0)
            assert await p.flush(10) == 0
            high, stable, _, _ = fetched(tansu.address, topic)
            assert (high, stable) == (3, 2)  # "before", its marker, then the open record
            assert await asyncio.to_thread(read, tansu.address, topic, COMMITTED, 1) == [b"before"]
            await p.commit_transaction(10)

    asyncio.run(main())
    assert read(tansu.address, topic, COMMITTED, 2) == [b"before", b"open"]


def test_our_transactions_read_committed_by_the_librarys_reader_on_tansu(tansu, new_topic) -> None:
    """The library's own read_committed reader (which derives the aborted transactions from the markers where the
    broker lists none) reads our committed records and drops the aborted ones on tansu, where confluent-kafka's
    consumer cannot."""
    topic = new_topic()

    async def main() -> None:
        config = ProducerConfig(bootstrap_servers=(tansu.address,), transactional_id=f"lib-{topic}")
        async with Producer(config) as p:
            await p.init_transactions(10)
            for values, commit in (([b"c1", b"c2"], True), ([b"a1", b"a2"], False), ([b"c3"], True)):
                p.begin_transaction()
                for value in values:
                    p.send(topic, value, partition=0)
                assert await p.flush(10) == 0
                await (p.commit_transaction(10) if commit else p.abort_transaction(10))

    asyncio.run(main())
    for isolation, expected in ((UNCOMMITTED, [b"c1", b"c2", b"a1", b"a2", b"c3"]), (COMMITTED, [b"c1", b"c2", b"c3"])):
        with KafkaReader(ClientConfig((tansu.address,), isolation=isolation)) as reader:
            end = reader.latest_offsets(topic, [0])[0]
            assert end == 8  # five records, three markers
            assert [r.value for batch in reader.read(topic, 0, 0, end) for r in batch] == expected
