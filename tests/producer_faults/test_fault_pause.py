"""Pause triggers against the fake broker (docs/bruce-compatibility.md#error-acks, #pause-and-backoff): error ACKs that
pause, metadata errors and disconnects during the pause, disconnect before the ACK, socket timeout, correlation
mismatch, unparseable response, leader move, broker restart mid-stream. Each scenario asserts the accounting
invariant."""

from __future__ import annotations

import asyncio

import pytest
from fakebroker import FakeCluster, Fault
from fakebroker.harness import Outcomes, assert_accounting, bruce_config, running, scenario, wait_for

from bruce.producer import DiscardReason, Producer
from bruce.wire.protocol import produce

PRODUCE = produce.KEY


@pytest.mark.parametrize("legacy", [False, True], ids=["modern", "legacy"])
def test_ack_error_then_metadata_error_then_metadata_disconnect(legacy: bool) -> None:
    """Bruce's AckError scenario: md(0), produce(6), md(-1), md(disconnect), md(0), produce(0)."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2])
        outcomes = Outcomes()
        async with running(bruce_config(cluster.bootstrap), sink=outcomes, require_topics=True) as p:
            cluster.brokers[1].script(PRODUCE, Fault.error(6))
            cluster.metadata_faults += [Fault.error(-1), Fault.disconnect()]
            first = p.send("t", b"first", partition=0)
            assert await first == (0, 0)
            assert first.attempts == 1
            later = p.send("t", b"later", partition=0)
            assert await later == (0, 1)
            assert_accounting(p, outcomes, held=0)
            assert p.counters.get("Pause") == 1
        assert [s.outcome for s in cluster.requests("Metadata")] == ["ok", "error -1", "disconnect", "ok"]
        assert [s.outcome for s in cluster.requests("Produce")] == ["error 6", "ok", "ok"]
        assert outcomes.duplicate_count <= 1 and not outcomes.discarded_rows

    scenario(body, legacy=legacy)


@pytest.mark.parametrize("legacy", [False, True], ids=["modern", "legacy"])
def test_disconnect_before_ack_gives_exactly_one_possible_duplicate(legacy: bool, caplog) -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2])
        outcomes = Outcomes()
        async with running(bruce_config(cluster.bootstrap), sink=outcomes) as p:
            cluster.brokers[1].script(PRODUCE, Fault.disconnect())
            handle = p.send("t", b"dup", partition=0)
            assert await handle == (0, 1)  # stored once before the disconnect, again on the resend
            assert handle.possible_duplicate and handle.attempts == 0
            assert_accounting(p, outcomes, held=0)
            assert p.counters.get("PossibleDuplicateMsg") == 1
            assert p.counters.get("ConnectorSocketBrokerClose") == 1
        assert outcomes.duplicate_count == 1 and not outcomes.discarded_rows
        assert cluster.values("t") == [b"dup", b"dup"]

    with caplog.at_level("WARNING", logger="bruce.producer"):
        scenario(body, legacy=legacy)
    assert [r.getMessage() for r in caplog.records] == ["pause: SocketBrokerClose on broker 1"]


@pytest.mark.parametrize(
    ("fault", "counter"),
    [
        (Fault.delay(1.0), "ConnectorSocketTimeout"),
        (Fault.bad_correlation(), "ConnectorProtocolError"),
        (Fault.garbage(), "ConnectorProtocolError"),
    ],
    ids=["socket-timeout", "correlation-mismatch", "unparseable-response"],
)
def test_transport_failures_pause_and_resend_as_possible_duplicates(fault: Fault, counter: str) -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2])
        outcomes = Outcomes()
        config = bruce_config(cluster.bootstrap, socket_timeout_ms=300)
        async with running(config, sink=outcomes) as p:
            cluster.brokers[1].script(PRODUCE, fault)
            handle = p.send("t", b"x", partition=0)
            partition, _ = await handle
            assert partition == 0 and handle.possible_duplicate
            assert p.counters.get(counter) == 1
            assert p.counters.get("Pause") == 1
            assert_accounting(p, outcomes, held=0)
        assert outcomes.duplicate_count == 1 and not outcomes.discarded_rows
        assert b"x" in cluster.values("t")

    scenario(body)


def test_leader_move_follows_the_new_leader_in_order() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2])
        outcomes = Outcomes()
        async with running(bruce_config(cluster.bootstrap), sink=outcomes) as p:
            before = [p.send("t", f"a{i}".encode(), partition=0) for i in range(3)]
            assert await p.flush(5) == 0
            cluster.move_leader("t", 0, 2)
            after = [p.send("t", f"b{i}".encode(), partition=0) for i in range(3)]
            assert await p.flush(5) == 0
            assert [h.result() for h in before + after] == [(0, i) for i in range(6)]
            assert_accounting(p, outcomes, held=0)
        assert [r.value for r in cluster.records("t", 0)] == [b"a0", b"a1", b"a2", b"b0", b"b1", b"b2"]
        assert [s.outcome for s in cluster.requests("Produce") if s.broker == 1][-1] == "error 6"
        assert any(s.broker == 2 for s in cluster.requests("Produce"))

    scenario(body)


def test_broker_restart_mid_stream_reroutes_keyless_messages() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2])
        outcomes = Outcomes()
        async with running(bruce_config(cluster.bootstrap), sink=outcomes) as p:
            first = [p.send("t", f"a{i}".encode()) for i in range(4)]
            assert await p.flush(5) == 0
            await cluster.brokers[1].stop()
            during = [p.send("t", f"b{i}".encode()) for i in range(6)]
            assert await p.flush(10) == 0
            assert {h.result()[0] for h in during} == {1}  # only partition 1 (broker 2) was available
            await cluster.brokers[1].start()
            p.request_metadata_refresh()
            await wait_for(lambda: p.available_partitions("t") == (0, 1), what="broker 1 back in metadata")
            last = [p.send("t", f"c{i}".encode(), partition=0) for i in range(2)]
            assert await p.flush(5) == 0
            assert [h.result()[0] for h in last] == [0, 0]
            assert_accounting(p, outcomes, held=0)
            assert all(h.error is None for h in first + during + last)
        assert sorted(v for v in cluster.values("t") if v.startswith(b"b")) == [f"b{i}".encode() for i in range(6)]

    scenario(body)


def test_partition_key_moves_only_the_keys_of_the_unavailable_partition() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2, 1, 2])  # broker 1 leads partitions 0 and 2
        outcomes = Outcomes()
        async with running(bruce_config(cluster.bootstrap), sink=outcomes) as p:
            await cluster.brokers[1].stop()
            p.request_metadata_refresh()
            await wait_for(lambda: p.available_partitions("t") == (1, 3), what="broker 1 gone from metadata")
            from bruce.producer.message import Message

            batch = [Message(None, f"k{k}".encode(), 0, partition_key=k) for k in range(8)]
            p.submit("t", batch)
            assert await p.flush(5) == 0
            # documented PartitionKey semantics: key % 4; 0 → 1 and 2 → 3 move, 1 and 3 stay
            assert [m.partition for m in batch] == [1, 1, 3, 3, 1, 1, 3, 3]
            assert_accounting(p, outcomes, held=0)

    scenario(body)


def test_explicit_partition_unavailable_is_discarded_with_a_reason() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2])
        outcomes = Outcomes()
        async with running(bruce_config(cluster.bootstrap), sink=outcomes) as p:
            await cluster.brokers[1].stop()
            p.request_metadata_refresh()
            await wait_for(lambda: p.available_partitions("t") == (1,), what="broker 1 gone from metadata")
            handle = p.send("t", b"x", partition=0)
            with pytest.raises(Exception) as caught:
                await handle
            assert caught.value.reason == DiscardReason.NO_AVAILABLE_PARTITIONS
            assert outcomes.discarded_count(DiscardReason.NO_AVAILABLE_PARTITIONS) == 1
            assert_accounting(p, outcomes, held=0)

    scenario(body)


def test_topic_level_metadata_error_during_a_pause_discards_as_bad_topic() -> None:
    """docs/bruce-compatibility.md#routing-checks: a topic answered with an error is unknown, so its rerouted messages
    are BAD_TOPIC."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2])
        cluster.add_topic("other", [2])
        outcomes = Outcomes()
        async with running(bruce_config(cluster.bootstrap), sink=outcomes) as p:
            cluster.brokers[1].script(PRODUCE, Fault.error(6))
            cluster.metadata_faults.append(Fault.error(5, topic="t"))
            handle = p.send("t", b"x", partition=0)
            with pytest.raises(Exception) as caught:
                await handle
            assert caught.value.reason == DiscardReason.BAD_TOPIC
            assert await p.send("other", b"y") == (0, 0)
            assert_accounting(p, outcomes, held=0)
        assert [s.outcome for s in cluster.requests("Metadata")] == ["ok", "error 5"]

    scenario(body)


def test_messages_sent_before_the_first_metadata_wait_for_it() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2])
        await cluster.brokers[1].stop()
        await cluster.brokers[2].stop()
        async with Producer(bruce_config(cluster.bootstrap)) as p:
            early = [p.send("t", b"early"), p.send("t", b"keyed", key=b"k")]
            await asyncio.sleep(0.2)
            assert p.held == 2 and p.queue_stats()["t"].send_wait == 2
            for broker in cluster.brokers.values():
                await broker.start()
            assert await p.flush(5) == 0
            assert all(h.error is None for h in early)
            assert_accounting(p, held=0)

    scenario(body)


def test_a_pause_during_close_is_still_handled_within_the_deadline() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2])
        outcomes = Outcomes()
        p = Producer(bruce_config(cluster.bootstrap), sink=outcomes)
        await p.start()
        await p.ready(5)
        cluster.brokers[1].script(PRODUCE, Fault.error(6))
        handle = p.send("t", b"x", partition=0)
        await p.shutdown(5)
        assert handle.result() == (0, 0) and handle.attempts == 1
        assert p.counters.get("Pause") == 1
        assert_accounting(p, outcomes, held=0)

    scenario(body)


@pytest.mark.parametrize("legacy", [False, True], ids=["modern", "legacy"])
def test_order_within_a_partition_survives_resends_pauses_and_disconnects(legacy: bool) -> None:
    """One message per request, so the next request is always staged while one is in flight: every failure must put
    the staged messages back behind the failed ones."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = Outcomes()
        async with running(bruce_config(cluster.bootstrap, socket_timeout_ms=300), sink=outcomes) as p:
            resend = 2 if legacy else 7
            cluster.brokers[1].script(
                PRODUCE,
                Fault.ok(),
                Fault.error(resend),
                Fault.ok(),
                Fault.error(6),
                Fault.ok(),
                Fault.disconnect(store=False),
                Fault.ok(),
                Fault.delay(0.6),  # beyond the socket timeout: failed here, stored by the broker later
            )
            config_values = [f"m{i:02d}".encode() for i in range(20)]
            handles = [p.send("t", v, partition=0) for v in config_values]
            assert await p.flush(10) == 0
            assert_accounting(p, outcomes, held=0)
            assert all(h.error is None for h in handles)
        got = cluster.values("t")
        # the timed-out request was stored once before its resend: drop that one duplicate, the rest is in order
        duplicates = [v for v in set(got) if got.count(v) > 1]
        assert len(duplicates) <= 1
        if duplicates:
            got.remove(duplicates[0])
        assert got == config_values

    scenario(body, brokers=1)
