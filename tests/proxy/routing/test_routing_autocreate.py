"""Auto-creation without blocking: an unknown topic's messages wait, in order and with no count limit of their own,
while its creation runs (bounded by the producer's creation deadline), then are routed through the remaining checks
or discarded with the outcome's reason. Last, the whole path against the fake cluster with a real producer."""

from __future__ import annotations

import asyncio

import pytest
from fakebroker import FakeCluster
from fakebroker.harness import bruce_config, scenario, wait_for

from bruce.producer import Producer
from bruce.producer.reasons import DiscardReason
from bruce.proxy.routing.batcher import Batcher
from bruce.proxy.routing.router import Router

from .helpers import CLUSTER, Rig, config, msg, view

BAD_TOPIC = DiscardReason.BAD_TOPIC
FAIL = DiscardReason.TOPIC_AUTOCREATE_FAIL


def creating_rig(**kw) -> tuple[Rig, list[str]]:
    requested: list[str] = []
    return Rig(create_topic=requested.append, **kw), requested


def test_parked_messages_are_routed_once_the_topic_exists() -> None:
    rig, requested = creating_rig(message_max_bytes=100)
    rig.send("fresh", "1", now=10.0)
    rig.send("fresh", "x" * 100, now=10.5)  # too long: found out when the topic is known
    rig.send("fresh", "2", now=11.0)
    rig.send("good", "other", now=11.0)  # other topics are not held up
    assert requested == ["fresh"]  # one creation per topic
    assert rig.out.take() == [("good", ["other"])] and rig.discards == []
    assert rig.router.held == 3 and rig.router.creating == 1
    rig.state.view = view({**CLUSTER, "fresh": [1]})
    rig.router.creation_done("fresh", None, 12.0)
    assert rig.out.take() == [("fresh", ["1"]), ("fresh", ["2"])]
    assert rig.take_discards() == [(DiscardReason.LONG_MSG, "fresh", "x" * 100)]
    assert rig.router.held == 0 and rig.router.creating == 0
    assert rig.counters.get("RouterTopicAutocreate") == 1


def test_a_view_showing_the_topic_releases_it_before_the_outcome_arrives() -> None:
    rig, _ = creating_rig()
    rig.send("fresh", "1")
    rig.state.view = view({**CLUSTER, "fresh": [1, 2]})
    rig.send("good", "g")  # the next message of any topic notices the new view
    assert rig.out.take() == [("fresh", ["1"]), ("good", ["g"])]
    rig.router.creation_done("fresh", None, 5.0)  # late outcome: nothing left to do
    assert rig.discards == [] and rig.router.held == 0


def test_a_refused_creation_discards_the_parked_messages_with_its_reason() -> None:
    rig, requested = creating_rig()
    rig.send("fresh", "1")
    rig.send("fresh", "2")
    rig.router.creation_done("fresh", FAIL, 2.0)
    assert rig.take_discards() == [(FAIL, "fresh", "1"), (FAIL, "fresh", "2")]
    assert rig.counters.get("DiscardOnTopicAutocreateFail") == 2
    rig.send("fresh", "3", now=3.0)  # a later message tries again
    assert requested == ["fresh", "fresh"] and rig.router.held == 1


def test_created_but_never_in_metadata_is_a_bad_topic() -> None:
    rig, _ = creating_rig()
    rig.send("fresh", "1")
    rig.router.creation_done("fresh", None, 2.0)  # the view still lacks it
    assert rig.take_discards() == [(BAD_TOPIC, "fresh", "1")]
    assert rig.counters.get("RouterCreatedTopicNotInMetadata") == 1


def test_a_creation_that_ran_out_of_time_discards_with_its_own_reason() -> None:
    rig, _ = creating_rig()
    rig.send("fresh", "1", now=10.0)
    rig.send("later", "2", now=12.0)
    rig.router.creation_done("fresh", DiscardReason.TOPIC_CREATE_TIMEOUT, 40.0)
    assert rig.take_discards() == [(DiscardReason.TOPIC_CREATE_TIMEOUT, "fresh", "1")]
    assert rig.counters.get("DiscardOnTopicCreateTimeout") == 1
    assert rig.router.held == 1 and rig.router.creating == 1  # "later" still waits for its own outcome


def test_a_burst_to_a_new_topic_waits_whole_and_in_order() -> None:
    rig, requested = creating_rig()
    for i in range(20_000):  # twice the count limit the router once had
        rig.send("fresh", str(i))
    assert requested == ["fresh"] and rig.discards == [] and rig.router.held == 20_000
    rig.state.view = view({**CLUSTER, "fresh": [1]})
    rig.router.creation_done("fresh", None, 2.0)
    assert rig.out.take() == [("fresh", [str(i)]) for i in range(20_000)] and rig.discards == []


def test_the_topics_being_created_at_once_are_bounded() -> None:
    rig, requested = creating_rig(park_topics=2)
    for i in range(5):
        rig.send("a", f"a{i}")
    rig.send("b", "b0")
    rig.send("c", "c0")  # a third topic: no room
    assert rig.take_discards() == [(BAD_TOPIC, "c", "c0")]
    assert requested == ["a", "b"]
    assert rig.router.discard_held(DiscardReason.SERVER_SHUTDOWN) == 6
    assert [(topic, value) for _, topic, value in rig.take_discards()] == [
        *(("a", f"a{i}") for i in range(5)),
        ("b", "b0"),
    ]
    assert rig.counters.get("RouterParkTopicsFull") == 1


def test_without_auto_creation_an_unknown_topic_is_discarded_at_once() -> None:
    rig = Rig()
    rig.send("fresh", "1")
    assert rig.take_discards() == [(BAD_TOPIC, "fresh", "1")] and rig.router.held == 0


def test_shutdown_discards_parked_messages() -> None:
    rig, _ = creating_rig()
    rig.send("fresh", "1")
    assert rig.router.discard_held(DiscardReason.SERVER_SHUTDOWN) == 1
    assert rig.take_discards() == [(DiscardReason.SERVER_SHUTDOWN, "fresh", "1")]
    rig.send("other", "2")
    rig.router.creation_done("other", DiscardReason.SERVER_SHUTDOWN, 2.0)  # a creation that could not start
    assert rig.take_discards() == [(DiscardReason.SERVER_SHUTDOWN, "other", "2")]


# ---------------------------------------------------------------- with a real producer


def test_auto_creation_through_the_producer_against_the_fake_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bruce.producer.metadata.fetcher.AUTOCREATE_CHECKS", (0.05, 0.1, 0.2))

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        discards: list[tuple[DiscardReason, str]] = []
        async with Producer(bruce_config(cluster.bootstrap)) as producer:
            await producer.ready(5)
            loop = asyncio.get_running_loop()
            tasks: list[asyncio.Task] = []

            async def resolve(topic: str) -> None:
                router.creation_done(topic, await producer.create_topic(topic), loop.time())

            router = Router(
                cluster=producer.cluster,
                batcher=Batcher(config().batching_for, producer.submit),
                discard=lambda m, reason: discards.append((reason, m.topic)),
                message_max_bytes=1_000_000,
                create_topic=lambda topic: tasks.append(loop.create_task(resolve(topic))),
            )
            for i in range(3):
                router.route(msg("fresh", f"v{i}", loop.time()))
            assert router.held == 3 and len(tasks) == 1
            await asyncio.wait_for(tasks[0], 5)
            await wait_for(lambda: len(cluster.values("fresh")) == 3, what="delivery to the created topic")
            assert cluster.values("fresh") == [b"v0", b"v1", b"v2"]
            assert discards == [] and router.held == 0
            assert producer.counters.get("TopicAutocreateOk") == 1

    scenario(body, brokers=1, autocreate=True)


def test_refused_creation_through_the_producer() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with Producer(bruce_config(cluster.bootstrap)) as producer:
            await producer.ready(5)
            assert await producer.create_topic("fresh") == FAIL
            assert producer.counters.get("TopicAutocreateFail") == 1

    scenario(body, brokers=1, autocreate=False)


@pytest.mark.parametrize("autocreate", [True, False])
def test_a_topic_name_kafka_refuses_is_bad_topic_name_and_never_created(autocreate: bool) -> None:
    """Named for what it is (not TOPIC_AUTOCREATE_FAIL after a broker refused it), with or without auto-creation,
    even before the first metadata."""
    rig, requested = creating_rig(cluster=None) if autocreate else (Rig(cluster=None), [])
    rig.send("bad topic!", "1")
    rig.send("..", "2")
    rig.send("fresh", "3")  # a legal name waits for the first metadata
    assert rig.take_discards() == [
        (DiscardReason.BAD_TOPIC_NAME, "bad topic!", "1"),
        (DiscardReason.BAD_TOPIC_NAME, "..", "2"),
    ]
    assert requested == [] and rig.router.held == 1
