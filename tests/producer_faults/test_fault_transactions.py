"""The transactional producer against the fake broker's transaction coordinator (tests/fakebroker/transactions.py):
the requests in order, retried coordinator errors, fencing on a produce answer and at the coordinator, an abortable
error and the producer id renewed after it, a fatal EndTxn answer, a commit that times out and is called again, and
the misuse errors. What tansu can do is proven on tansu (tests/e2e/test_transactions_tansu.py)."""

from __future__ import annotations

from typing import Any

import pytest
from fakebroker import FakeCluster, Fault
from fakebroker.harness import bruce_config, running, scenario
from fakebroker.transactions import FIRST_TXN_PRODUCER_ID

from bruce.producer import DeliveryError, DiscardReason, Producer, ProducerConfig, TransactionError
from bruce.producer.errors import ConfigError
from bruce.wire.errors import UsageError
from bruce.wire.protocol import add_partitions_to_txn, end_txn, find_coordinator, produce
from bruce.wire.recordbatch import decode_record_batches

PID = FIRST_TXN_PRODUCER_ID
APTT, END, FIND, PRODUCE = add_partitions_to_txn.KEY, end_txn.KEY, find_coordinator.KEY, produce.KEY


def transactional(cluster: FakeCluster, tid: str = "tx", **overrides: Any) -> ProducerConfig:
    return bruce_config(cluster.bootstrap, enable_idempotence=None, transactional_id=tid, **overrides)


def produced_batches(cluster: FakeCluster) -> list[Any]:
    return [
        b
        for seen in cluster.requests("Produce")
        for topic in seen.body.topic_data
        for part in topic.partition_data
        for b in decode_record_batches(part.records)
    ]


def test_commit_and_abort_send_the_requests_in_order_with_transactional_batches() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2])
        async with running(transactional(cluster)) as p:
            await p.init_transactions(5)
            p.begin_transaction()
            handles = [p.send("t", b"c%d" % i, partition=i % 2) for i in range(4)]
            await p.commit_transaction(5)
            assert [h.result()[0] for h in handles] == [0, 1, 0, 1]
            p.begin_transaction()
            p.send("t", b"a", partition=0)
            assert await p.flush(5) == 0
            await p.abort_transaction(5)
            p.begin_transaction()
            await p.commit_transaction(5)  # nothing sent: no EndTxn
        assert cluster.txn.ended == [
            ("tx", True, frozenset({("t", 0), ("t", 1)})),
            ("tx", False, frozenset({("t", 0)})),
        ]
        assert [r.value for r in cluster.records("t", 0)] == [b"c0", b"c2", b"a"]
        batches = produced_batches(cluster)
        assert batches and all(b.is_transactional and (b.producer_id, b.producer_epoch) == (PID, 0) for b in batches)
        assert {s.body.transactional_id for s in cluster.requests("Produce")} == {"tx"}  # ties them to the transaction
        init = [s.body for s in cluster.requests("InitProducerId")]
        assert [(b.transactional_id, b.transaction_timeout_ms) for b in init] == [("tx", 60_000)]
        adds = cluster.requests("AddPartitionsToTxn")
        first_produce = cluster.history.index(cluster.requests("Produce")[0])
        assert cluster.history.index(adds[0]) < first_produce  # the partition is added before its first batch

    scenario(body)


def test_retriable_coordinator_errors_are_retried() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        coordinator = cluster.brokers[1]
        coordinator.script(FIND, Fault.error(15))  # COORDINATOR_NOT_AVAILABLE: asked again
        coordinator.script(APTT, Fault.error(14), Fault.error(51))  # LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS
        coordinator.script(END, Fault.error(16), Fault.error(51))  # NOT_COORDINATOR (found again), CONCURRENT
        async with running(transactional(cluster)) as p:
            await p.init_transactions(5)
            p.begin_transaction()
            handle = p.send("t", b"v", partition=0)
            await p.commit_transaction(5)
            assert handle.result() == (0, 0)
            assert p._txn is not None and p._txn.link.retries == 5
            retried = {e: p.counters.get("TransactionCoordinatorRetry", (("error", e),)) for e in ("NOT_COORDINATOR",
                       "COORDINATOR_LOAD_IN_PROGRESS", "CONCURRENT_TRANSACTIONS")}  # fmt: skip
            assert retried == {"NOT_COORDINATOR": 1, "COORDINATOR_LOAD_IN_PROGRESS": 1, "CONCURRENT_TRANSACTIONS": 2}
            assert p.counters.get("TransactionCommitted") == 1
        assert cluster.txn.ended == [("tx", True, frozenset({("t", 0)}))]
        assert len(cluster.requests("FindCoordinator")) == 3  # the first refused, then init, then after NOT_COORDINATOR

    scenario(body, brokers=1)


def test_fenced_on_produce_is_fatal_and_the_newer_producer_goes_on() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(transactional(cluster)) as old:
            await old.init_transactions(5)
            old.begin_transaction()
            cluster.brokers[1].script(PRODUCE, Fault.error(47))  # INVALID_PRODUCER_EPOCH
            zombie = old.send("t", b"zombie", partition=0)
            with pytest.raises(TransactionError) as caught:
                await old.commit_transaction(5)
            assert (
                caught.value.fatal
                and not caught.value.txn_requires_abort
                and caught.value.code == "INVALID_PRODUCER_EPOCH"
            )
            await old.flush(1)
            with pytest.raises(DeliveryError) as lost:
                zombie.result()
            assert lost.value.reason is DiscardReason.TRANSACTION_ABORTED
            for call in (old.begin_transaction, lambda: old.send("t", b"x")):
                with pytest.raises(TransactionError, match="failed for good"):
                    call()
            with pytest.raises(TransactionError):
                await old.abort_transaction(1)
            assert old.counters.get("TransactionFatal", (("reason", "INVALID_PRODUCER_EPOCH"),)) == 1
        assert cluster.txn.ended == []

    scenario(body, brokers=1)


def test_a_second_producer_fences_the_first_at_the_coordinator() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(transactional(cluster)) as first, running(transactional(cluster)) as second:
            await first.init_transactions(5)
            await second.init_transactions(5)  # epoch 1: the first is fenced
            first.begin_transaction()
            first.send("t", b"zombie", partition=0)
            with pytest.raises(TransactionError) as caught:
                await first.commit_transaction(5)
            assert caught.value.fatal and caught.value.code == "PRODUCER_FENCED"
            second.begin_transaction()
            second.send("t", b"ok", partition=0)
            await second.commit_transaction(5)
        assert cluster.values("t") == [b"ok"]
        assert cluster.txn.ended == [("tx", True, frozenset({("t", 0)}))]

    scenario(body, brokers=1)


def test_an_abortable_error_needs_abort_which_renews_the_producer_id() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(transactional(cluster)) as p:
            await p.init_transactions(5)
            p.begin_transaction()
            cluster.brokers[1].script(PRODUCE, Fault.error(45))  # OUT_OF_ORDER_SEQUENCE_NUMBER
            lost = p.send("t", b"lost", partition=0)
            with pytest.raises(TransactionError) as caught:
                await p.commit_transaction(5)
            assert caught.value.txn_requires_abort and not caught.value.fatal
            with pytest.raises(TransactionError):
                p.begin_transaction()
            await p.abort_transaction(5)
            with pytest.raises(DeliveryError):
                lost.result()
            p.begin_transaction()
            kept = p.send("t", b"kept", partition=0)
            await p.commit_transaction(5)
            assert kept.result() == (0, 0)
            assert p.counters.get("TransactionAbortable", (("reason", "OUT_OF_ORDER_SEQUENCE_NUMBER"),)) == 1
            assert p.counters.get("TransactionAborted") == 1 and p.counters.get("TransactionCommitted") == 1
        renew = cluster.requests("InitProducerId")[-1].body
        assert (renew.producer_id, renew.producer_epoch) == (PID, 0)  # KIP-360: the current id and epoch
        assert cluster.values("t") == [b"kept"]
        assert cluster.txn.ended == [("tx", False, frozenset({("t", 0)})), ("tx", True, frozenset({("t", 0)}))]
        assert {(b.producer_id, b.producer_epoch) for b in produced_batches(cluster)} == {(PID, 0), (PID, 1)}

    scenario(body, brokers=1)


def test_a_fatal_end_txn_answer_and_a_retriable_timeout() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(transactional(cluster)) as p:
            await p.init_transactions(5)
            p.begin_transaction()
            p.send("t", b"v", partition=0)
            cluster.brokers[1].script(END, Fault.delay(0.6))
            with pytest.raises(TransactionError) as slow:
                await p.commit_transaction(0.3)
            assert slow.value.retriable and slow.value.code == "TIMED_OUT"
            await p.commit_transaction(5)  # called again: done
            p.begin_transaction()
            p.send("t", b"w", partition=0)
            cluster.brokers[1].script(END, Fault.error(48))  # INVALID_TXN_STATE
            with pytest.raises(TransactionError) as fatal:
                await p.commit_transaction(5)
            assert fatal.value.fatal and fatal.value.code == "INVALID_TXN_STATE"
        assert [committed for _, committed, _ in cluster.txn.ended] == [True, True]

    scenario(body, brokers=1)


def test_misuse_is_a_clear_error() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        with pytest.raises(UsageError, match="start the producer first"):
            await Producer(transactional(cluster)).init_transactions(1)
        async with running(transactional(cluster)) as p:
            with pytest.raises(UsageError, match="init_transactions"):
                p.begin_transaction()
            with pytest.raises(UsageError, match="begin_transaction"):
                p.send("t", b"v")
            await p.init_transactions(5)
            with pytest.raises(UsageError, match="already"):
                await p.init_transactions(5)
            with pytest.raises(UsageError, match="begin_transaction"):
                p.send("t", b"v")
            with pytest.raises(UsageError, match="no transaction"):
                await p.commit_transaction(1)
            p.begin_transaction()
            with pytest.raises(UsageError, match="already open"):
                p.begin_transaction()
            await p.abort_transaction(1)
        async with running(bruce_config(cluster.bootstrap)) as plain:
            with pytest.raises(UsageError, match="transactional_id"):
                await plain.init_transactions(1)

    scenario(body, brokers=1)


@pytest.mark.parametrize(
    "overrides, match",
    [
        ({"transactional_id": ""}, "transactional_id: must not be empty"),
        ({"transactional_id": "x", "acks": 1}, "acks=-1"),
        ({"transactional_id": "x", "enable_idempotence": False}, "enable_idempotence"),
        ({"transactional_id": "x", "transaction_timeout_ms": 0}, "transaction_timeout_ms"),
    ],
)
def test_bad_transactional_settings(overrides: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        ProducerConfig(**overrides)
    assert (
        ProducerConfig.from_mapping({"transactional.id": "a", "transaction.timeout.ms": 5000}).transactional_id == "a"
    )


def test_a_transactional_producer_is_idempotent() -> None:
    config = ProducerConfig(transactional_id="a")
    assert config.idempotence_wanted and Producer(config)._dispatcher.seq is not None


def test_add_partitions_answers_per_partition() -> None:
    """A retriable partition error is asked again after the backoff; TOPIC_AUTHORIZATION_FAILED makes the transaction
    abortable, and its messages are discarded by the abort."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(transactional(cluster)) as p:
            await p.init_transactions(5)
            p.begin_transaction()
            cluster.brokers[1].script(APTT, Fault.error(3))  # UNKNOWN_TOPIC_OR_PARTITION: retriable
            first = p.send("t", b"v", partition=0)
            await p.commit_transaction(5)
            assert first.result() == (0, 0)
            p.begin_transaction()
            cluster.brokers[1].script(APTT, Fault.error(29))  # TOPIC_AUTHORIZATION_FAILED
            refused = p.send("t", b"w", partition=0)
            with pytest.raises(TransactionError) as caught:
                await p.commit_transaction(5)
            assert caught.value.txn_requires_abort and caught.value.code == "TOPIC_AUTHORIZATION_FAILED"
            await p.abort_transaction(5)
            with pytest.raises(DeliveryError):
                refused.result()
        assert len(cluster.requests("AddPartitionsToTxn")) == 3
        assert cluster.values("t") == [b"v"]
        assert cluster.txn.ended == [("tx", True, frozenset({("t", 0)}))]  # nothing added in the second: no EndTxn

    scenario(body, brokers=1)
