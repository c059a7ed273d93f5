"""The fake broker fails loudly: a request nobody scripted, or a scripted fault nobody used, fails the test with the
request shown."""

from __future__ import annotations

import asyncio

import pytest
from fakebroker import FakeCluster, Fault
from fakebroker.harness import scenario
from kafkaclient import KafkaClient

from bruce.wire.protocol import produce


def test_an_unscripted_request_fails_the_test_and_shows_the_request() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])

        def fetch() -> None:
            # the fake broker hangs up on it
            with KafkaClient.connect(cluster.bootstrap[0], timeout=5) as client, pytest.raises(OSError):
                client.fetch("t", 0, 0, version=4)

        await asyncio.to_thread(fetch)

    with pytest.raises(AssertionError, match=r"unscripted request: broker 1: Fetch v4 .*FetchRequest"):
        scenario(body, brokers=1)


def test_a_scripted_fault_nobody_used_fails_the_test() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.brokers[1].script(produce.KEY, Fault.error(6))

    with pytest.raises(AssertionError, match="1 fault"):
        scenario(body, brokers=1)
