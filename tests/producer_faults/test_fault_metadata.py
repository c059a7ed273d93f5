"""Metadata against the fake broker: bootstrap past a dead broker, no refresh storms, periodic refresh, protocol
choice per broker, and topic auto-creation (docs/bruce-compatibility.md#metadata, #topic-auto-creation)."""

from __future__ import annotations

import asyncio

import pytest
from fakebroker import FakeCluster, Fault
from fakebroker.harness import Outcomes, assert_accounting, bruce_config, running, scenario, wait_for

from bruce.producer import DeliveryError, DiscardReason, Producer, ProducerClosed
from bruce.wire.protocol import metadata

FAST_CHECKS = (0.05, 0.1, 0.2)  # instead of Bruce's 3, 6 and 12 s between refreshes after a creation


@pytest.fixture
def fast_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bruce.producer.metadata.fetcher.AUTOCREATE_CHECKS", FAST_CHECKS)


def test_bootstrap_skips_a_dead_broker() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [2])
        await cluster.brokers[1].stop()
        dead = "127.0.0.1:1"  # nothing listens there
        async with running(bruce_config((dead, *cluster.bootstrap[1:]))) as p:
            assert await p.send("t", b"x") == (0, 0)
            assert_accounting(p, held=0)

    scenario(body)


def test_on_demand_refreshes_are_merged_and_rate_limited() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        config = bruce_config(cluster.bootstrap, metadata_min_interval_ms=100)
        async with running(config) as p:
            before = len(cluster.requests("Metadata"))
            for _ in range(50):
                p.request_metadata_refresh()
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.15)
            fetched = len(cluster.requests("Metadata")) - before
            assert 2 <= fetched <= 8  # ~0.65 s of requests at most one fetch per 100 ms, not 50
            updated, modified = p.metadata_times()
            assert updated >= modified > 0

    scenario(body, brokers=1)


def test_periodic_refresh_runs_at_the_interval() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(bruce_config(cluster.bootstrap, metadata_refresh_interval_ms=100)):
            await asyncio.sleep(0.6)
            assert 4 <= len(cluster.requests("Metadata")) <= 9  # every 80-120 ms, plus the first

    scenario(body, brokers=1)


def test_forcing_the_modern_protocol_on_a_kafka_08_broker_fails_with_counted_errors() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with Producer(bruce_config(cluster.bootstrap, protocol="modern")) as p:
            with pytest.raises(TimeoutError):
                await p.ready(0.3)
            assert p.counters.get("GetMetadataFail") >= 1
            assert p.cluster() is None

    scenario(body, brokers=1, legacy=True)


def test_forcing_v0_never_sends_api_versions() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(bruce_config(cluster.bootstrap, protocol="v0")) as p:
            assert await p.send("t", b"x") == (0, 0)
            assert_accounting(p, held=0)
        assert not cluster.requests("ApiVersions")
        assert {s.version for s in cluster.history} == {0}

    scenario(body, brokers=1)


def test_topic_autocreate(fast_checks: None) -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = Outcomes()
        config = bruce_config(cluster.bootstrap, topic_autocreate=True)
        async with running(config, sink=outcomes) as p:
            handle = p.send("fresh", b"x")
            await wait_for(lambda: handle.done, timeout=8, what="delivery to the auto-created topic")
            assert handle.result() == (0, 0)
            assert p.counters.get("TopicAutocreateOk") == 1
            assert_accounting(p, outcomes, held=0)
        assert "created" in [s.outcome for s in cluster.requests("Metadata")]

    scenario(body, brokers=1, autocreate=True)


def test_topic_autocreate_refused() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(bruce_config(cluster.bootstrap, topic_autocreate=True)) as p:
            handle = p.send("fresh", b"x")
            with pytest.raises(DeliveryError) as caught:
                await handle
            assert caught.value.reason == DiscardReason.TOPIC_AUTOCREATE_FAIL
            assert_accounting(p, held=0)

    scenario(body, brokers=1, autocreate=False)


def test_an_empty_cluster_refusing_creation_fails_each_topic() -> None:
    """No topic in the metadata and a broker with auto-creation off: the producer is ready (an empty cluster is a
    cluster, with the daemon's ``require_topics`` too) and each topic's messages fail as TOPIC_AUTOCREATE_FAIL."""

    async def body(cluster: FakeCluster) -> None:
        config = bruce_config(cluster.bootstrap, topic_autocreate=True)
        async with running(config, require_topics=True) as p:
            handles = [p.send(f"fresh-{i % 2}", b"x") for i in range(4)]
            failed = await asyncio.gather(*handles, return_exceptions=True)
            assert [(e.topic, e.reason) for e in failed] == [  # type: ignore[union-attr]
                (f"fresh-{i % 2}", DiscardReason.TOPIC_AUTOCREATE_FAIL) for i in range(4)
            ]
            assert p.counters.snapshot()["TopicAutocreateFail{code=3}"] == 2
            assert_accounting(p, held=0)

    scenario(body, brokers=1, autocreate=False)


def test_a_topic_name_kafka_refuses_fails_at_once_as_bad_topic_name() -> None:
    """Never asked of a broker (no creation request): the name itself is the problem, and the error says why."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(bruce_config(cluster.bootstrap, topic_autocreate=True)) as p:
            before = len(cluster.requests("Metadata"))
            with pytest.raises(DeliveryError) as caught:
                await p.send("bad topic!", b"x")
            assert caught.value.reason == DiscardReason.BAD_TOPIC_NAME
            assert "characters Kafka refuses: ' ', '!'" in str(caught.value)
            assert await p.send("t", b"y") == (0, 0)  # nothing else held up
            assert len(cluster.requests("Metadata")) == before
            assert_accounting(p, held=0)

    scenario(body, brokers=1, autocreate=True)


def test_create_topic_asks_then_refreshes_until_the_topic_shows(fast_checks: None) -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(bruce_config(cluster.bootstrap)) as p:
            assert await p.create_topic("fresh") is None
            assert p.available_partitions("fresh") == (0,)
            assert p.counters.get("TopicAutocreateOk") == 1
            assert await p.send("fresh", b"x") == (0, 0)
            requests = len(cluster.requests("Metadata"))
            assert await p.create_topic("fresh") is None  # known: nothing to ask
            assert len(cluster.requests("Metadata")) == requests
        created = [s for s in cluster.requests("Metadata") if s.outcome == "created"]
        assert len(created) == 1 and [t.name for t in created[0].body.topics] == ["fresh"]
        assert created[0].body.allow_auto_topic_creation

    scenario(body, brokers=1, autocreate=True)


def test_create_topic_refused_is_topic_autocreate_fail() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(bruce_config(cluster.bootstrap)) as p:
            assert await p.create_topic("fresh") == DiscardReason.TOPIC_AUTOCREATE_FAIL
            assert p.counters.snapshot()["TopicAutocreateFail{code=3}"] == 1

    scenario(body, brokers=1, autocreate=False)


def test_create_topic_that_never_shows_times_out(fast_checks: None) -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(bruce_config(cluster.bootstrap, topic_create_timeout_ms=600)) as p:
            cluster.add_topic("fresh", [1])
            # the creation request and every refresh until the deadline see the topic still being created (error 5)
            cluster.metadata_faults.extend([Fault.error(5, topic="fresh")] * 100)
            assert await p.create_topic("fresh") == DiscardReason.TOPIC_CREATE_TIMEOUT
            cluster.metadata_faults.clear()
            assert p.available_partitions("fresh") is None
            assert p.counters.get("TopicAutocreateOk") == 1 and p.counters.get("TopicAutocreateTimeout") == 1
            assert len(cluster.requests("Metadata")) >= 5  # it kept looking, past Bruce's three checks

    scenario(body, brokers=1)


def test_create_topic_tries_each_broker_and_survives_a_dead_one(fast_checks: None) -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [2])
        async with running(bruce_config(cluster.bootstrap)) as p:
            cluster.brokers[1].script(metadata.KEY, Fault.disconnect())
            assert await p.create_topic("fresh") is None
        asked = [(s.broker, s.outcome) for s in cluster.requests("Metadata") if s.body.topics]
        assert asked[:2] == [(1, "disconnect"), (2, "created")]

    scenario(body, brokers=2, autocreate=True)


def test_create_topic_needs_a_running_producer() -> None:
    async def body(cluster: FakeCluster) -> None:
        p = Producer(bruce_config(cluster.bootstrap))
        with pytest.raises(ProducerClosed):
            await p.create_topic("fresh")

    scenario(body, brokers=1)


def test_topic_autocreate_that_never_shows_discards_as_create_timeout(fast_checks: None) -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(bruce_config(cluster.bootstrap, topic_autocreate=True, topic_create_timeout_ms=600)) as p:
            cluster.add_topic("fresh", [1])
            # the on-demand refresh, the creation request and every check see the topic being created
            cluster.metadata_faults.extend([Fault.error(5, topic="fresh")] * 100)
            with pytest.raises(DeliveryError) as caught:
                await p.send("fresh", b"x")
            cluster.metadata_faults.clear()
            assert caught.value.reason == DiscardReason.TOPIC_CREATE_TIMEOUT
            assert "creation deadline" in str(caught.value)
            assert_accounting(p, held=0)

    scenario(body, brokers=1)
