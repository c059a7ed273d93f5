"""Messages for a topic that does not exist yet: they wait for its creation, in arrival order, bounded only by the
memory budget and the creation deadline, while other topics keep flowing; a shutdown waits for them like for any
held message. On tansu (create-on-first-use, read back with confluent-kafka) and, where a creation must be made slow
or must never finish, on the fake broker."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fakebroker import FakeCluster, Fault

from bruce.proxy.daemon.embedded import EmbeddedBroker

from .harness import ClusterThread, DaemonThread, consume_topic, daemon_starter, make_config, wait_for

pytestmark = pytest.mark.e2e

TANSU_PARTITIONS = 4  # what tansu gives a topic it creates on first use


def test_a_burst_to_a_new_topic_is_held_whole_then_delivered(
    start_daemon: Callable[..., DaemonThread], tansu: EmbeddedBroker, request: pytest.FixtureRequest
) -> None:
    """50,000 datagrams to a topic nobody created, as fast as one client sends them: none is discarded (the old
    router parked 10,000 and discarded the rest as BAD_TOPIC), every one is read back exactly once."""
    topic = f"fresh-burst-{id(request) % 100_000}"
    d = start_daemon(topic_autocreate=True, msg_buffer_max=64 * 1024)
    go = asyncio.Event()
    producer = d.daemon.producer
    create = producer.create_topic

    async def held_up(name: str) -> object:  # the creation starts only once the whole burst is held
        await go.wait()
        return await create(name)

    producer.create_topic = held_up  # type: ignore[method-assign]
    count = 50_000
    with d.client() as client:
        for i in range(count):
            client.send_any_partition(topic, b"%06d" % i + b"x" * 94)
    wait_for(lambda: d.accounting().received == count, what="the burst to be read")
    assert d.call(lambda: d.daemon.router.held) == count
    d.call(go.set)
    a = d.settle(count, timeout=120)
    assert (a.received, a.delivered, a.discarded) == (count, count, 0)
    assert d.counter("RouterTopicAutocreate") == 1
    reads = consume_topic(tansu.address, topic, TANSU_PARTITIONS, count, timeout=120)
    seen = Counter(r.value[:6] for r in reads)
    assert len(reads) == count and len(seen) == count, (len(reads), len(seen))
    for partition in range(TANSU_PARTITIONS):  # arrival order kept within each partition
        values = [r.value for r in sorted(reads, key=lambda r: r.offset) if r.partition == partition]
        assert values == sorted(values)


def test_stop_right_after_the_first_message_to_a_new_topic_delivers_it(
    start_daemon: Callable[..., DaemonThread], tansu: EmbeddedBroker, request: pytest.FixtureRequest
) -> None:
    topic = f"fresh-stop-{id(request) % 100_000}"
    d = start_daemon(topic_autocreate=True)
    with d.client() as client:
        client.send_any_partition(topic, b"the only one")
    wait_for(lambda: d.accounting().received == 1, what="the datagram to be read")
    a = d.stop()
    assert (a.received, a.delivered, a.discarded) == (1, 1, 0)
    assert [r.value for r in consume_topic(tansu.address, topic, TANSU_PARTITIONS, 1)] == [b"the only one"]


# ---------------------------------------------------------------- slow or endless creations (fake broker)


@pytest.fixture
def cluster() -> Iterator[ClusterThread]:
    with ClusterThread(FakeCluster(1, autocreate=True)) as c:
        c.call(lambda: c.cluster.add_topic("t", [1]))
        yield c


@pytest.fixture
def start(cluster: ClusterThread, workdir: Path) -> Iterator[Callable[..., DaemonThread]]:
    """``start(**options)``: an auto-creating daemon on the fake cluster, with its first metadata."""
    with daemon_starter(workdir, cluster.brokers) as start_daemon:

        def make(**overrides: object) -> DaemonThread:
            d = start_daemon(make_config(cluster.brokers, batching=False), topic_autocreate=True, **overrides)
            wait_for(lambda: d.call(d.daemon.producer.cluster) is not None, what="the first metadata")
            return d

        yield make


def _slow_creation(cluster: ClusterThread, seconds: float) -> None:
    """The next Metadata request (the creation's) is answered after ``seconds``."""
    cluster.call(lambda: cluster.cluster.metadata_faults.append(Fault.delay(seconds)))


def test_shutdown_waits_for_a_topic_being_created(
    cluster: ClusterThread, start: Callable[..., DaemonThread], caplog: pytest.LogCaptureFixture
) -> None:
    """Issue: Ctrl-C 1-4 s after the first message to a new topic discarded it as SERVER_SHUTDOWN."""
    d = start()
    _slow_creation(cluster, 1.0)
    with d.client() as client:
        client.send_any_partition("fresh", b"v0")
        client.send_any_partition("fresh", b"v1")
    wait_for(lambda: d.accounting().received == 2, what="the datagrams to be read")
    assert d.call(lambda: d.daemon.router.held) == 2  # still waiting for the creation
    with caplog.at_level(logging.INFO, logger="bruce.proxy.daemon.daemon"):
        a = d.stop()
    assert (a.received, a.delivered, a.discarded) == (2, 2, 0)
    assert cluster.call(lambda: cluster.cluster.values("fresh")) == [b"v0", b"v1"]
    assert "waiting up to 10 s to deliver 2 held messages; a second Ctrl-C (or SIGTERM) stops at once" in caplog.text
    assert "delivered the 2 held messages in " in caplog.text  # how the wait ended


def test_a_creation_past_its_deadline_discards_as_topic_create_timeout(
    cluster: ClusterThread, start: Callable[..., DaemonThread]
) -> None:
    d = start(topic_create_timeout=300)
    _slow_creation(cluster, 2.0)  # the creation request is not answered within the deadline
    with d.client() as client:
        client.send_any_partition("fresh", b"late")
        client.send_any_partition("t", b"flows")  # another topic is not held up
    wait_for(lambda: d.accounting().delivered == 1, what="the other topic's delivery")
    a = d.settle(2)
    assert (a.delivered, a.discarded) == (1, 1)
    assert d.discards("TOPIC_CREATE_TIMEOUT") == 1 and d.counter("TopicAutocreateTimeout") == 1
    assert cluster.call(lambda: cluster.cluster.values("t")) == [b"flows"]
    d.stop()
