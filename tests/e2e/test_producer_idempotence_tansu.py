"""The idempotent producer (on by default) against tansu, every connection through the fault-injecting proxy
(tests/netproxy.py): the happy path with several requests in flight, and acknowledgements lost then the connection
cut with requests in flight. confluent-kafka reads everything back with CRC checks on: each message once, in order
per partition, and no possible duplicate counted."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from netproxy import ThreadedProxy, tansu_behind_proxy
from readback import read_back

from bruce.producer import Producer, ProducerConfig

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def behind_proxy() -> Iterator[tuple[Any, ThreadedProxy]]:
    with tansu_behind_proxy(delay_ms=5) as pair:  # a few ms each way: requests overlap
        yield pair


def config(proxy: ThreadedProxy, **overrides: Any) -> ProducerConfig:
    settings: dict[str, Any] = dict(
        bootstrap_servers=(proxy.address,),
        linger_ms=1,
        produce_request_data_limit=600,  # 100 messages per request: several requests, pipelined
        batch_num_messages=50,
        reconnect_backoff_ms=10,
        reconnect_backoff_max_ms=100,
        min_pause_delay_ms=50,
        pause_rate_limit_initial_ms=50,
        dispatcher_restart_max_delay_ms=200,
        request_timeout_ms=5000,
        message_timeout_ms=60_000,
    )
    settings.update(overrides)
    return ProducerConfig(**settings)


def total(counters: dict[str, int], name: str) -> int:
    """A counter of ``snapshot()`` summed over its labels."""
    return sum(v for k, v in counters.items() if k == name or k.startswith(name + "{"))


def exactly_once_in_order(address: str, topic: str, partitions: int, values: list[bytes]) -> None:
    got = read_back(address, topic, partitions, len(values), extra=1.0)  # a surplus (a duplicate) shows too
    assert sorted(m.value() for m in got) == sorted(values)
    for p in range(partitions):
        assert [m.value() for m in got if m.partition() == p] == values[p::partitions]


def test_happy_path_several_requests_in_flight_stored_once_in_order(behind_proxy) -> None:
    broker, proxy = behind_proxy
    topic = "idem-happy"
    broker.create_topic(topic, 2)
    values = [b"h%05d" % i for i in range(3000)]

    async def main() -> tuple[int, dict[str, int]]:
        async with Producer(config(proxy)) as p:
            await p.ready(10)
            peak = 0
            for i, v in enumerate(values):
                p.send(topic, v, partition=i % 2)
                if i % 100 == 99:
                    await asyncio.sleep(0)  # let batches leave while more are queued
                    peak = max(peak, p.requests_in_flight())
            while p.held:
                peak = max(peak, p.requests_in_flight())
                await asyncio.sleep(0.001)
            assert await p.flush(30) == 0 and p.delivered == len(values)
            return peak, p.counters.snapshot()

    peak, counters = asyncio.run(main())
    assert peak > 1  # pipelined
    assert total(counters, "ProducerIdAssigned") == 1 and total(counters, "PossibleDuplicateMsg") == 0
    exactly_once_in_order(proxy.address, topic, 2, values)


def test_lost_acknowledgements_and_a_cut_with_requests_in_flight_store_each_message_once(behind_proxy) -> None:
    broker, proxy = behind_proxy
    topic = "idem-cut"
    broker.create_topic(topic, 1)
    values = [b"c%05d" % i for i in range(2000)]

    async def main() -> dict[str, int]:
        async with Producer(config(proxy)) as p:
            await p.ready(10)
            handles = [p.send(topic, v, partition=0) for v in values[:1000]]
            deadline = time.monotonic() + 10
            while p.delivered < 200 and time.monotonic() < deadline:
                await asyncio.sleep(0.001)
            await asyncio.to_thread(proxy.set_drop_answers, True)  # tansu stores, its answers are lost
            deadline = time.monotonic() + 10
            while p.requests_in_flight() < 3 and time.monotonic() < deadline:
                await asyncio.sleep(0.001)
            await asyncio.sleep(0.05)
            assert await asyncio.to_thread(proxy.cut) >= 1
            await asyncio.to_thread(proxy.set_drop_answers, False)
            handles += [p.send(topic, v, partition=0) for v in values[1000:]]
            assert await p.flush(30) == 0
            assert all(h.error is None and not h.possible_duplicate for h in handles)
            return p.counters.snapshot()

    counters = asyncio.run(main())
    assert total(counters, "PossibleDuplicateMsg") == 0 and total(counters, "Pause") >= 1
    assert total(counters, "AckDuplicateSequence") > 0  # tansu answered a resend of a stored batch (46)
    exactly_once_in_order(proxy.address, topic, 1, values)
