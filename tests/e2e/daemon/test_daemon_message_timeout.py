"""``--message_timeout_ms`` through the whole daemon, against the fake broker: off by default (Bruce's attempt limits
only); when set, messages for a broker that went down are discarded as MESSAGE_TIMEOUT, counted, reported and
logged like any discard."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakebroker import FakeCluster

from bruce.proxy.config import producer_config
from bruce.proxy.config.model import Broker
from bruce.proxy.config.ports import free_port

from .harness import TIMEOUT, ClusterThread, daemon_starter, make_config, make_options, wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture
def cluster() -> Iterator[ClusterThread]:
    with ClusterThread(FakeCluster(1)) as c:
        c.call(lambda: c.cluster.add_topic("t", [1]))  # one partition, led by broker 1
        yield c
    c.cluster.verify()


def test_off_by_default(workdir: Path) -> None:
    config = make_config((Broker("127.0.0.1", 9092),))
    options = make_options(workdir)
    assert options.message_timeout_ms == 0
    assert producer_config(options, config).message_timeout_ms == 0
    assert producer_config(make_options(workdir, message_timeout_ms=250), config).message_timeout_ms == 250


def test_messages_for_a_broker_that_went_down_time_out(cluster: ClusterThread, workdir: Path) -> None:
    config = make_config(cluster.brokers, batching=False)
    with daemon_starter(workdir, cluster.brokers) as start:
        daemon = start(config, message_timeout_ms=300, discard_log_path=str(workdir / "discard.log"))
        wait_for(lambda: daemon.call(daemon.daemon.producer.cluster) is not None, what="the first metadata")
        broker = cluster.cluster.brokers[1]
        asyncio.run_coroutine_threadsafe(broker.stop(), cluster.loop).result(TIMEOUT)
        with daemon.client() as client:
            for i in range(5):
                client.send_any_partition("t", b"late-%d" % i)
        a = daemon.settle(5)
        assert (a.delivered, a.discarded, daemon.discards("MESSAGE_TIMEOUT")) == (0, 5, 5)
        report = json.loads(daemon.get("/discards/json")[2])["unfinished_report"]
        assert [(t["topic"], t["count"]) for t in report["discard_topic"]] == [("t", 5)]
        daemon.stop()
    lines = (workdir / "discard.log").read_text().splitlines()
    assert [line.split(" info: ")[1].split(" ")[0] for line in lines] == ["MESSAGE_TIMEOUT"] * 5


def test_the_daemon_waits_for_its_first_metadata_beyond_the_message_timeout(workdir: Path) -> None:
    """The message timeout bounds the producer's ``ready()``; the daemon still waits for the first metadata as long
    as it takes (it must not stop when the timeout passes with no broker reachable)."""
    nowhere = (Broker("127.0.0.1", free_port()),)
    with daemon_starter(workdir, nowhere) as start:
        daemon = start(message_timeout_ms=100)
        wait_for(lambda: daemon.counter("MetadataBrokerFail") >= 2, what="two failed metadata fetches")
        assert daemon.running and daemon.error is None
        assert daemon.stop().received == 0
