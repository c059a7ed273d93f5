"""Running a producer against a fake cluster: Bruce's test configuration, a started producer, an outcome sink that
records every report, and the accounting invariant every fault scenario asserts.

Rules: each scenario runs in its own event loop with a hard time limit; the cluster is verified at the end (no
unscripted request, no unused fault) whatever the scenario asserted.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from bruce.producer import DiscardReason, Message, Producer, ProducerConfig

from .cluster import KAFKA_MESSAGE_MAX_BYTES, FakeCluster

FAST = dict(
    min_pause_delay_ms=50,
    pause_rate_limit_initial_ms=50,
    pause_rate_limit_max_double=2,
    dispatcher_restart_max_delay_ms=300,
    metadata_min_interval_ms=20,
    metadata_retry_backoff_max_ms=100,
    reconnect_backoff_ms=10,
    reconnect_backoff_max_ms=50,
    connect_timeout_ms=1000,
    request_timeout_ms=5000,
    socket_timeout_ms=5000,
    linger_ms=0,
    retry_backoff_ms=10,
)


def bruce_config(bootstrap: Sequence[str], **overrides: Any) -> ProducerConfig:
    """Bruce's integration-test setup (docs/bruce-compatibility.md#test-checklist): no batching, produce request data
    limit 0, fast pauses, and Bruce's at-least-once delivery (idempotence off: the fake broker would take it; the
    idempotent scenarios turn it on)."""
    settings: dict[str, Any] = dict(
        FAST, bootstrap_servers=tuple(bootstrap), produce_request_data_limit=0, enable_idempotence=False
    )
    settings["batch_num_messages"] = 1
    settings.update(overrides)
    return ProducerConfig(**settings)


@asynccontextmanager
async def running(config: ProducerConfig, **kwargs: Any) -> AsyncIterator[Producer]:
    """A started producer (``Producer(config, **kwargs)``) that has its first cluster view; closed on leaving."""
    async with Producer(config, **kwargs) as producer:
        await producer.ready(5)
        yield producer


class Outcomes:
    """An OutcomeSink recording every report, as the daemon's accounting would."""

    def __init__(self) -> None:
        self.delivered_rows: list[tuple[str, int, int, list[Message]]] = []
        self.discarded_rows: list[tuple[str, list[Message], DiscardReason]] = []
        self.duplicate_rows: list[tuple[str, list[Message]]] = []

    def delivered(self, topic: str, partition: int, base_offset: int, messages: Sequence[Message]) -> None:
        self.delivered_rows.append((topic, partition, base_offset, list(messages)))

    def discarded(self, topic: str, messages: Sequence[Message], reason: DiscardReason) -> None:
        self.discarded_rows.append((topic, list(messages), reason))

    def possible_duplicates(self, topic: str, messages: Sequence[Message]) -> None:
        self.duplicate_rows.append((topic, list(messages)))

    @property
    def delivered_count(self) -> int:
        return sum(len(ms) for *_, ms in self.delivered_rows)

    def discarded_count(self, reason: DiscardReason | None = None) -> int:
        return sum(len(ms) for _, ms, r in self.discarded_rows if reason is None or r == reason)

    @property
    def duplicate_count(self) -> int:
        return sum(len(ms) for _, ms in self.duplicate_rows)


def assert_accounting(producer: Producer, outcomes: Outcomes | None = None, *, held: int | None = None) -> None:
    """sent = delivered + discarded + in flight, and the sink heard the same; ``held``: the expected in-flight count."""
    assert producer.accepted == producer.delivered + producer.discarded + producer.held, (
        producer.accepted,
        producer.delivered,
        producer.discarded,
        producer.held,
    )
    if outcomes is not None:
        assert outcomes.delivered_count == producer.delivered
        assert outcomes.discarded_count() == producer.discarded
    if held is not None:
        assert producer.held == held


def scenario(
    body: Callable[[FakeCluster], Awaitable[None]],
    *,
    brokers: int = 2,
    legacy: bool = False,
    autocreate: bool = False,
    message_max_bytes: int = KAFKA_MESSAGE_MAX_BYTES,
    limit: float = 60,
) -> None:
    """Run ``body(cluster)`` on a fresh fake cluster in a new event loop, then verify the cluster."""

    async def main() -> FakeCluster:
        cluster = FakeCluster(brokers, legacy=legacy, autocreate=autocreate, message_max_bytes=message_max_bytes)
        async with cluster:
            async with asyncio.timeout(limit):
                await body(cluster)
            return cluster

    cluster = asyncio.run(main())
    cluster.verify()


async def wait_for(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Poll ``predicate`` every 10 ms until true; AssertionError after ``timeout`` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


@contextmanager
def fake_cluster_thread(cluster: FakeCluster) -> Iterator[FakeCluster]:
    """Run a fake cluster on its own event loop in a thread, for blocking clients (Spark tasks, the Spark reader)."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(cluster.__aenter__())
        ready.set()
        loop.run_forever()
        loop.run_until_complete(cluster.__aexit__(None, None, None))
        loop.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        yield cluster
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
