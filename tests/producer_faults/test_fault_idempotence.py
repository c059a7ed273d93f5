"""The idempotent producer against the fake broker, which checks sequences as Kafka 2.5+ does (and plays older
brokers on demand): lost acknowledgement, a cut with 5 requests in flight, a leader move mid-stream, a broker restart,
out-of-order, unknown-producer and fenced answers, the producer id refused, and the automatic choice. Each scenario
reads back exactly the messages sent, once, in order per partition, and asserts the accounting invariant; a resend
caused by a lost acknowledgement, a timeout or a broken connection counts no possible duplicate."""

from __future__ import annotations

import asyncio
import gc
import logging
from pathlib import Path
from typing import Any

import pytest
from fakebroker import FakeCluster, Fault
from fakebroker.cluster import FIRST_PRODUCER_ID
from fakebroker.harness import Outcomes, assert_accounting, bruce_config, running, scenario, wait_for

from bruce.producer import DiscardReason, Producer, ProducerConfig
from bruce.producer.errors import ConfigError
from bruce.producer.idempotence.journal import read_journal
from bruce.wire.protocol import api_versions, init_producer_id, produce

PRODUCE = produce.KEY


def idempotent(cluster: FakeCluster, **overrides: Any) -> ProducerConfig:
    """Bruce's test setup (one message per request), idempotence left to its default (on: the fake broker takes it)."""
    return bruce_config(cluster.bootstrap, enable_idempotence=None, **overrides)


async def send_all(p: Producer, values: list[bytes], partitions: int = 1) -> None:
    handles = [p.send("t", v, partition=i % partitions) for i, v in enumerate(values)]
    assert await p.flush(20) == 0
    for h in handles:
        h.result()  # delivered, or raises its DeliveryError
        assert not h.possible_duplicate


def stored_once_in_order(cluster: FakeCluster, values: list[bytes], partitions: int = 1) -> None:
    for p in range(partitions):
        assert [r.value for r in cluster.records("t", p)] == values[p::partitions]


async def peak_in_flight(p: Producer, peaks: list[int]) -> None:
    while True:
        peaks.append(p.requests_in_flight())
        await asyncio.sleep(0.001)


def test_on_by_default_five_batches_in_flight_per_partition_each_stored_once_in_order() -> None:
    values = [b"v%03d" % i for i in range(60)]

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 1])
        outcomes = Outcomes()
        async with running(idempotent(cluster), sink=outcomes) as p:
            cluster.brokers[1].script(PRODUCE, Fault.ok(), *[Fault.delay(0.05)] * 10)  # answers come slowly
            peaks: list[int] = []
            watcher = asyncio.create_task(peak_in_flight(p, peaks))
            await send_all(p, values, partitions=2)
            watcher.cancel()
            assert max(peaks) == 5
            assert_accounting(p, outcomes, held=0)
            assert p.counters.get("ProducerIdAssigned") == 1 and p.counters.get("PossibleDuplicateMsg") == 0
        stored_once_in_order(cluster, values, partitions=2)
        assert [s.outcome for s in cluster.requests("InitProducerId")] == [f"producer id {FIRST_PRODUCER_ID:#x}"]
        for partition in (0, 1):  # every batch carries the producer id, epoch 0 and the next sequence
            sequences = [s for seen in cluster.requests("Produce") for s in seen.sequences if s[1] == partition]
            assert sequences == [("t", partition, FIRST_PRODUCER_ID, 0, i) for i in range(30)]

    scenario(body, brokers=1)


def test_an_acknowledged_batch_leaves_no_reference_cycle() -> None:
    """A part and its batch point at each other while in flight; once acknowledged the link is cut, so its messages
    are freed at once rather than by the garbage collector (whose passes over held messages cost the daemon CPU)."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(idempotent(cluster, batch_num_messages=10)) as p:
            await send_all(p, [b"warm"])
            gc.collect()
            gc.set_debug(gc.DEBUG_SAVEALL)
            try:
                await send_all(p, [b"v%03d" % i for i in range(50)])
                gc.collect()
                kinds = {type(o).__name__ for o in gc.garbage}
            finally:
                gc.set_debug(0)
                gc.garbage.clear()
            assert not kinds & {"Part", "Batch", "Message"}, kinds

    scenario(body, brokers=1)


@pytest.mark.parametrize("kafka_0_11", [False, True], ids=["kafka-1.0+", "kafka-0.11.0"])
def test_a_lost_acknowledgement_is_resent_with_its_sequence_stored_once_and_no_possible_duplicate(
    kafka_0_11: bool,
) -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        cluster.sequences.duplicate_error = kafka_0_11
        cluster.fetch_produced = True  # a DUPLICATE_SEQUENCE_NUMBER answer is checked in the log
        outcomes = Outcomes()
        async with running(idempotent(cluster), sink=outcomes) as p:
            cluster.brokers[1].script(PRODUCE, Fault.disconnect(store=True))
            handle = p.send("t", b"once", partition=0)
            assert await handle == (0, 0)  # the original offset (0.11.0 does not say it: found in the log)
            assert not handle.possible_duplicate
            assert p.counters.get("PossibleDuplicateMsg") == 0 and outcomes.duplicate_count == 0
            assert p.counters.get("AckDuplicateSequence") == (1 if kafka_0_11 else 0)
            assert p.counters.get("AckDuplicateFound") == (1 if kafka_0_11 else 0)
            assert_accounting(p, outcomes, held=0)
        assert cluster.values("t") == [b"once"]
        first, resent = cluster.requests("Produce")
        assert first.sequences == resent.sequences and resent.duplicates == 1

    scenario(body, brokers=1)


def test_a_duplicate_answer_is_journaled_only_once_the_log_check_decided(tmp_path: Path) -> None:
    """The batch journal gets the FINISHED record of a batch answered DUPLICATE_SEQUENCE_NUMBER from the log check
    (found at offset 0), not "given up" (-1) at the answer: a crash while checking must leave it to be settled."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        cluster.sequences.duplicate_error = True
        cluster.fetch_produced = True
        async with running(idempotent(cluster, state_path=str(tmp_path)), sink=Outcomes()) as p:
            cluster.brokers[1].script(PRODUCE, Fault.disconnect(store=True))
            assert await p.send("t", b"once", partition=0) == (0, 0)
            assert p.counters.get("AckDuplicateFound") == 1
            state = read_journal(tmp_path)  # as a crash now would leave it
            assert [(e.base_sequence, e.finished) for e in state.entries] == [(0, 0)]

    scenario(body, brokers=1)


def test_a_duplicate_answer_for_a_batch_the_broker_does_not_hold_is_sent_again_not_counted_delivered() -> None:
    """tansu on object storage has answered DUPLICATE_SEQUENCE_NUMBER for a batch it never stored: the producer reads
    the partition's log for the batch's identity, does not find it, and sends the messages again as a new batch."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        cluster.fetch_produced = True
        outcomes = Outcomes()
        async with running(idempotent(cluster), sink=outcomes) as p:
            assert await p.send("t", b"first", partition=0) == (0, 0)
            # the broker's producer state claims sequence 1 while its log does not hold it: "already stored" (46)
            pid = cluster.requests("Produce")[0].sequences[0][2]
            cluster.sequences.stored("t", 0, pid, 0, 1, 1, 1)
            cluster.sequences.duplicate_error = True
            handle = p.send("t", b"second", partition=0)
            assert await handle == (0, 1)  # stored by the second send, at its offset
            assert p.counters.get("AckDuplicateSequence") == 1
            assert p.counters.get("AckDuplicateNotStored") == 1 and p.counters.get("AckDuplicateFound") == 0
            assert_accounting(p, outcomes, held=0)
        assert cluster.values("t") == [b"first", b"second"]  # stored once
        sequences = [s for seen in cluster.requests("Produce") for s in seen.sequences]
        assert [s[-1] for s in sequences] == [0, 1, 2]  # sent again as a new batch: the next sequence

    scenario(body, brokers=1)


def test_a_cut_with_five_requests_in_flight_resends_them_in_order_with_their_sequences() -> None:
    values = [b"c%03d" % i for i in range(40)]

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = Outcomes()
        async with running(idempotent(cluster), sink=outcomes) as p:
            # the first ack opens the pipeline; the broker is slow on the next ones, then drops the connection after
            # storing one: the requests behind it were written and never read
            cluster.brokers[1].script(PRODUCE, Fault.ok(), Fault.delay(0.1), Fault.ok(), Fault.disconnect(store=True))
            peaks: list[int] = []
            watcher = asyncio.create_task(peak_in_flight(p, peaks))
            await send_all(p, values)
            watcher.cancel()
            assert max(peaks) == 5
            assert_accounting(p, outcomes, held=0)
            cut = p.counters.get("ConnectorSocketBrokerClose") + p.counters.get("ConnectorSocketError")
            assert 1 <= cut <= 5 and p.counters.get("Pause") == 1  # each request lost with the connection
            assert p.counters.get("PossibleDuplicateMsg") == 0 and outcomes.duplicate_count == 0
        stored_once_in_order(cluster, values)
        assert sum(seen.duplicates for seen in cluster.requests("Produce")) == 1  # the stored one, resent

    scenario(body, brokers=1)


def test_a_leader_move_mid_stream_keeps_the_sequences() -> None:
    values = [b"m%03d" % i for i in range(30)]

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = Outcomes()
        async with running(idempotent(cluster), sink=outcomes) as p:
            await send_all(p, values[:10])
            cluster.move_leader("t", 0, 2)  # broker 1 answers NOT_LEADER_OR_FOLLOWER from now on
            await send_all(p, values[10:])
            assert_accounting(p, outcomes, held=0)
            assert p.counters.get("IdempotenceEpochBump") == 0 and p.counters.get("PossibleDuplicateMsg") == 0
        stored_once_in_order(cluster, values)
        by_broker = {seen.broker for seen in cluster.requests("Produce") if seen.outcome == "ok"}
        assert by_broker == {1, 2}
        sequences = [s[4] for seen in cluster.requests("Produce") if seen.outcome == "ok" for s in seen.sequences]
        assert sequences == list(range(30))  # one producer id and epoch throughout, the sequence continuing

    scenario(body, brokers=2)


def test_a_broker_restart_mid_stream_loses_and_duplicates_nothing() -> None:
    values = [b"r%03d" % i for i in range(40)]

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = Outcomes()
        async with running(idempotent(cluster), sink=outcomes) as p:
            cluster.brokers[1].script(PRODUCE, Fault.ok(), *[Fault.delay(0.05)] * 5)
            handles = [p.send("t", v, partition=0) for v in values]
            await wait_for(lambda: p.requests_in_flight() >= 3, what="requests in flight")
            await cluster.brokers[1].stop()
            await asyncio.sleep(0.1)
            await cluster.brokers[1].start()
            assert await p.flush(20) == 0
            assert [h.result()[0] for h in handles] == [0] * len(values)
            assert p.counters.get("PossibleDuplicateMsg") == 0
            assert_accounting(p, outcomes, held=0)
        stored_once_in_order(cluster, values)

    scenario(body, brokers=1)


@pytest.mark.parametrize(
    ("code", "bumps", "producer_ids"),
    [(45, 1, 1), (59, 1, 1), (47, 0, 2)],
    ids=["OUT_OF_ORDER_SEQUENCE_NUMBER", "UNKNOWN_PRODUCER_ID", "INVALID_PRODUCER_EPOCH"],
)
def test_sequence_errors_bump_the_epoch_or_get_a_new_producer_id(code: int, bumps: int, producer_ids: int) -> None:
    values = [b"s%03d" % i for i in range(20)]

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = Outcomes()
        async with running(idempotent(cluster), sink=outcomes) as p:
            await send_all(p, values[:5])
            cluster.brokers[1].script(PRODUCE, Fault.error(code))  # the next batch is refused, not stored
            await send_all(p, values[5:])
            assert p.counters.get("IdempotenceEpochBump") == bumps
            assert p.counters.get("ProducerIdAssigned") == producer_ids
            assert p.counters.get("PossibleDuplicateMsg") == 0
            assert_accounting(p, outcomes, held=0)
        stored_once_in_order(cluster, values)
        assert len(cluster.producer_ids) == producer_ids
        last = cluster.requests("Produce")[-1].sequences[0]
        assert last[2:] == ((FIRST_PRODUCER_ID + producer_ids - 1), bumps, 14)  # restarted at 0 with the new epoch

    scenario(body, brokers=1)


def test_a_broker_closing_on_api_versions_while_idempotent_is_connected_to_again_not_given_up() -> None:
    """A modern broker starting up may close connections on ApiVersions, which reads as Kafka 0.8: the idempotent
    producer does not use that connection (nor end idempotence over it) and connects again."""
    values = [b"a%03d" % i for i in range(20)]

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = Outcomes()
        async with running(idempotent(cluster), sink=outcomes) as p:
            await send_all(p, values[:10])
            cluster.brokers[1].script(PRODUCE, Fault.disconnect(store=True))
            # the pause's metadata connection, then the sender's: each falls back to the 0.8 protocol
            cluster.brokers[1].script(api_versions.KEY, Fault.disconnect(), Fault.disconnect())
            await send_all(p, values[10:])
            assert p.counters.get("IdempotenceFatal") == 0 and p.counters.get("PossibleDuplicateMsg") == 0
            assert p.counters.get("ConnectorConnectFail") == 1
            assert_accounting(p, outcomes, held=0)
        stored_once_in_order(cluster, values)
        assert all(s.version > 0 for s in cluster.requests("Produce"))  # never the 0.8 protocol

    scenario(body, brokers=1)


def test_a_batch_over_the_attempt_limit_is_dropped_whole_and_the_epoch_bumped() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = Outcomes()
        async with running(idempotent(cluster, max_failed_delivery_attempts=2), sink=outcomes) as p:
            await send_all(p, [b"a", b"b"])
            cluster.brokers[1].script(PRODUCE, *[Fault.error(7)] * 3)  # REQUEST_TIMED_OUT: retriable, 3 attempts
            lost = p.send("t", b"lost", partition=0)
            assert await p.flush(10) == 0
            assert lost.error is not None and lost.error.reason == DiscardReason.DELIVERY_ATTEMPT_LIMIT
            await send_all(p, [b"c", b"d"])
            assert p.counters.get("IdempotenceEpochBump") == 1 and p.counters.get("PossibleDuplicateMsg") == 0
            assert_accounting(p, outcomes, held=0)
        stored_once_in_order(cluster, [b"a", b"b", b"c", b"d"])
        assert [s.sequences[0][3:] for s in cluster.requests("Produce")[-2:]] == [(1, 0), (1, 1)]  # epoch 1, from 0

    scenario(body, brokers=1)


def test_a_batch_of_unknown_outcome_that_expires_is_a_possible_duplicate_and_the_epoch_bumped() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = Outcomes()
        async with running(idempotent(cluster, message_timeout_ms=300), sink=outcomes) as p:
            await send_all(p, [b"a"])
            cluster.brokers[1].script(PRODUCE, Fault.delay(0.2))
            lost = p.send("t", b"x", partition=0)
            await wait_for(lambda: p.requests_in_flight() == 1, what="the request")
            await cluster.brokers[1].stop()  # its outcome is unknown: the broker may store it after all
            await asyncio.sleep(0.8)
            await cluster.brokers[1].start()
            assert await p.flush(10) == 0
            assert lost.error is not None and lost.error.reason == DiscardReason.MESSAGE_TIMEOUT
            assert lost.possible_duplicate and p.counters.get("PossibleDuplicateMsg") == 1
            await send_all(p, [b"y"])
            assert p.counters.get("IdempotenceEpochBump") == 1
            assert_accounting(p, outcomes, held=0)
        assert cluster.values("t") in ([b"a", b"y"], [b"a", b"x", b"y"])

    scenario(body, brokers=1)


def test_the_cluster_refusing_idempotence_falls_back_to_at_least_once(caplog) -> None:
    values = [b"f%03d" % i for i in range(10)]

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        cluster.brokers[1].script(init_producer_id.KEY, Fault.error(31))  # CLUSTER_AUTHORIZATION_FAILED
        outcomes = Outcomes()
        async with running(idempotent(cluster), sink=outcomes) as p:
            await send_all(p, values)
            assert p.counters.get("IdempotenceFatal", (("reason", "CLUSTER_AUTHORIZATION_FAILED"),)) == 1
            assert p.counters.get("ProducerIdAssigned") == 0
            assert_accounting(p, outcomes, held=0)
        stored_once_in_order(cluster, values)
        assert all(not seen.sequences for seen in cluster.requests("Produce"))  # plain batches

    with caplog.at_level(logging.INFO, logger="bruce.producer"):
        scenario(body, brokers=1)
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "CLUSTER_AUTHORIZATION_FAILED" in errors[0], errors


def test_a_retriable_init_producer_id_error_is_asked_again() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        cluster.brokers[1].script(init_producer_id.KEY, Fault.error(15), Fault.disconnect())  # COORDINATOR_NOT_AV.
        outcomes = Outcomes()
        async with running(idempotent(cluster), sink=outcomes) as p:
            await send_all(p, [b"a", b"b"])
            assert p.counters.get("ProducerIdRetry") == 2 and p.counters.get("ProducerIdAssigned") == 1
        stored_once_in_order(cluster, [b"a", b"b"])

    scenario(body, brokers=1)


def test_init_producer_id_refused_retriably_too_often_falls_back_to_at_least_once() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        cluster.brokers[1].script(init_producer_id.KEY, *[Fault.error(15)] * 3)  # COORDINATOR_NOT_AVAILABLE
        async with running(idempotent(cluster, max_failed_delivery_attempts=2)) as p:
            await send_all(p, [b"a", b"b"])
            assert p.counters.get("ProducerIdRetry") == 2
            assert p.counters.get("IdempotenceFatal", (("reason", "COORDINATOR_NOT_AVAILABLE"),)) == 1
        stored_once_in_order(cluster, [b"a", b"b"])

    scenario(body, brokers=1)


def test_init_producer_id_unanswered_too_often_falls_back_to_at_least_once() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        cluster.brokers[1].script(init_producer_id.KEY, *[Fault.disconnect()] * 3)  # the connection cut each time
        async with running(idempotent(cluster, max_failed_delivery_attempts=2)) as p:
            await send_all(p, [b"a", b"b"])
            assert p.counters.get("ProducerIdRetry") == 2 and p.counters.get("ProducerIdAssigned") == 0
            assert p.counters.get("IdempotenceFatal", (("reason", "TRANSPORT"),)) == 1
        stored_once_in_order(cluster, [b"a", b"b"])

    scenario(body, brokers=1)


def test_off_with_one_log_line_on_a_kafka_0_8_broker(caplog) -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(idempotent(cluster)) as p:
            await send_all(p, [b"x", b"y"])
        assert cluster.values("t") == [b"x", b"y"]
        assert not cluster.requests("InitProducerId")

    with caplog.at_level(logging.INFO, logger="bruce.producer"):
        scenario(body, brokers=1, legacy=True)
    lines = [r.getMessage() for r in caplog.records if "idempotent producer" in r.getMessage()]
    assert len(lines) == 1 and "off" in lines[0], lines


def test_settings() -> None:
    assert ProducerConfig().idempotence_wanted
    assert not ProducerConfig(acks=1).idempotence_wanted  # auto: off with acks other than -1
    assert not ProducerConfig(protocol="v0").idempotence_wanted
    assert not ProducerConfig(max_in_flight_requests_per_connection=6).idempotence_wanted
    assert not ProducerConfig(enable_idempotence=False).idempotence_wanted
    assert ProducerConfig.from_mapping({"enable.idempotence": True}).enable_idempotence is True
    for bad, words in [
        ({"enable_idempotence": True, "acks": 1}, "acks=-1"),
        ({"enable_idempotence": True, "protocol": "v0"}, "0.8 protocol"),
        ({"enable_idempotence": True, "max_in_flight_requests_per_connection": 6}, "1 to 5"),
        ({"enable_idempotence": "yes"}, "must be true or false"),
    ]:
        with pytest.raises(ConfigError, match=words):
            ProducerConfig(**bad)
