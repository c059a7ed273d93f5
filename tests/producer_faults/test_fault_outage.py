"""A cluster that goes away with messages pending, against the fake broker: the message timeout fails every handle
with MESSAGE_TIMEOUT and every wait of the API ends (handles, ``flush()`` without a timeout, ``ready()`` without a
timeout); a pause no broker answered probes instead of waiting Bruce's pause backoff, which still follows an error
the broker answers."""

from __future__ import annotations

import asyncio

import pytest
from fakebroker import FakeCluster, Fault
from fakebroker.harness import Outcomes, assert_accounting, bruce_config, running, scenario, wait_for

from bruce.producer import DeliveryError, DiscardReason, Producer, ProducerConfig
from bruce.producer.transport.backoff import ExponentialBackoff, PauseBackoff
from bruce.proxy.config.ports import free_port
from bruce.wire.protocol import produce

PRODUCE = produce.KEY


def test_broker_killed_with_pending_handles_fails_them_all_with_message_timeout() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 1])
        outcomes = Outcomes()
        async with running(bruce_config(cluster.bootstrap, message_timeout_ms=300), sink=outcomes) as p:
            assert await p.send("t", b"before", partition=0) == (0, 0)
            await cluster.brokers[1].stop()
            pending = [p.send("t", b"k%d" % i, key=b"%d" % i) for i in range(200)]
            pending += [p.send("t", b"any%d" % i) for i in range(200)]
            pending += [p.send("t", b"p1", partition=1), p.send("never-known", b"x")]
            assert await p.flush() == 0  # no timeout given: it ends anyway
            assert {h.error.reason for h in pending} == {DiscardReason.MESSAGE_TIMEOUT}  # type: ignore[union-attr]
            with pytest.raises(DeliveryError) as failed:
                await pending[0]
            assert failed.value.reason == DiscardReason.MESSAGE_TIMEOUT
            assert_accounting(p, outcomes, held=0)
            assert outcomes.discarded_count(DiscardReason.MESSAGE_TIMEOUT) == len(pending) == 402
            assert p.counters.get("ConnectorConnectFail") + p.counters.get("GetMetadataFail") >= 1

    scenario(body, brokers=1)


def test_every_wait_ends_when_no_broker_was_ever_reachable() -> None:
    """Nothing listens at the bootstrap address: ``ready()`` and ``flush()`` without timeouts, and awaiting a handle,
    all end after the message timeout."""

    async def main() -> None:
        config = ProducerConfig(bootstrap_servers=(f"127.0.0.1:{free_port()}",), message_timeout_ms=200)
        async with asyncio.timeout(30), Producer(config) as p:
            handle = p.send("t", b"x")
            with pytest.raises(TimeoutError):
                await p.ready()
            with pytest.raises(DeliveryError) as failed:
                await handle
            assert failed.value.reason == DiscardReason.MESSAGE_TIMEOUT
            assert await p.flush() == 0 and p.discarded == 1

    asyncio.run(main())


def test_a_pause_no_broker_answered_probes_and_an_answered_one_waits_bruces_backoff() -> None:
    """A lost connection: no pause backoff at all (the first probe is immediate), even with a 10-minute minimum pause
    delay. An error ACK that pauses: Bruce's pause backoff."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        config = bruce_config(cluster.bootstrap, min_pause_delay_ms=600_000, pause_rate_limit_initial_ms=600_000)
        async with running(config) as p:
            waits: list[str] = []
            pause = p._pause
            pause.backoff = _Spy(PauseBackoff(1, 0, 1), waits, "bruce")  # type: ignore[assignment]
            pause.probe = _Spy(pause.probe, waits, "probe")  # type: ignore[assignment]
            cluster.brokers[1].script(PRODUCE, Fault.disconnect())
            assert (await p.send("t", b"a", partition=0))[0] == 0
            cluster.brokers[1].script(PRODUCE, Fault.error(6))
            assert (await p.send("t", b"b", partition=0))[0] == 0
            assert waits == ["probe", "bruce"] and p.counters.get("Pause") == 2

    scenario(body, brokers=1)


class _Spy:
    """Records which backoff a pause asked for its delay."""

    def __init__(self, inner: PauseBackoff | ExponentialBackoff, calls: list[str], name: str) -> None:
        self._inner, self._calls, self._name = inner, calls, name

    def next_delay(self, *args: float) -> float:
        self._calls.append(self._name)
        return self._inner.next_delay(*args)

    def reset(self) -> None:
        self._inner.reset()  # type: ignore[union-attr]


def test_a_failed_connect_does_not_pause_the_other_brokers() -> None:
    """Broker 1 goes down while idle: a message for its partition fails to connect, which asks for metadata (the
    partition has no leader now: NO_AVAILABLE_PARTITIONS) instead of pausing, and broker 2 keeps delivering."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2])
        outcomes = Outcomes()
        async with running(bruce_config(cluster.bootstrap), sink=outcomes) as p:
            assert [(await p.send("t", b"a", partition=i))[0] for i in (0, 1)] == [0, 1]
            await cluster.brokers[1].stop()
            await wait_for(lambda: p.connected_brokers() == 1, what="the idle connection to broker 1 to close")
            lost = p.send("t", b"b", partition=0)
            kept = [p.send("t", b"c%d" % i, partition=1) for i in range(5)]
            assert await p.flush(10) == 0
            assert lost.error is not None and lost.error.reason == DiscardReason.NO_AVAILABLE_PARTITIONS
            assert [h.result()[0] for h in kept] == [1] * 5
            assert p.counters.get("ConnectorConnectFail") >= 1 and p.counters.get("Pause") == 0
            assert_accounting(p, outcomes, held=0)

    scenario(body)
