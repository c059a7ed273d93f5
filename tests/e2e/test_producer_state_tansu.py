"""The library's durable idempotence state (``ProducerConfig.state_path``, docs/producer.md "Exactly once across
restarts") against tansu behind a slow proxy: a producer process is killed with SIGKILL once every message was sent at
least once but before all were acknowledged; a new producer on the same path settles the batches the dead one left
(found in the log, or resent with their sequences). confluent-kafka (CRCs on) reads every message back once, each key's
messages in order. Without the state path the same kill loses the unacknowledged batches' fate: the caller would have
to send them again, duplicating those already stored."""

from __future__ import annotations

import asyncio
import logging
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from netproxy import ThreadedProxy, tansu_behind_proxy
from readback import read_back

from bruce.producer import Producer, ProducerConfig, read_journal
from bruce.producer.idempotence.state_path import StateInUse, StateMismatch
from bruce.proxy.daemon.embedded import EmbeddedBroker

pytestmark = pytest.mark.e2e

TOTAL = 3000
KEYS = 5

CHILD = textwrap.dedent(
    """
    import asyncio, sys, time
    from bruce.producer import Producer, ProducerConfig

    async def main(address, topic, state, total):
        config = ProducerConfig(bootstrap_servers=(address,), state_path=state, linger_ms=2, batch_num_messages=40)
        producer = Producer(config)
        await producer.start()
        for n in range(total):
            key = b"key-%d" % (n % 5) if n % 2 == 0 else None
            producer.send(topic, b"%07d" % n, key=key)
        while producer.counters.get("MsgSent") < total:
            await asyncio.sleep(0.001)
        print("acked", producer.counters.get("AckOk"), flush=True)
        await asyncio.sleep(60)

    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
    """
)


@pytest.fixture(scope="module")
def slow_tansu() -> Iterator[tuple[Any, ThreadedProxy]]:
    with tansu_behind_proxy(delay_ms=150) as pair:  # acknowledgements take a while: a kill finds batches in flight
        yield pair


def _kill_when_all_sent(address: str, topic: str, state: Path, cut: ThreadedProxy | None = None) -> int:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, address, topic, str(state), str(TOTAL)], stdout=subprocess.PIPE, text=True
    )
    try:
        line = child.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("acked"), f"the producer process said {line!r}"
        if cut is not None:
            cut.cut()  # what the proxy still held never reaches the broker
        child.send_signal(signal.SIGKILL)
        assert child.wait(10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
    return int(line.split()[1])


def _check(address: str, topic: str) -> None:
    reads = read_back(address, topic, 3, TOTAL, timeout=60, extra=0.5)
    numbers = Counter(int(m.value()) for m in reads)
    assert [n for n in range(TOTAL) if numbers[n] == 0] == [], "lost"
    assert {n: c for n, c in numbers.items() if c > 1} == {}, "duplicated"
    by_key: dict[bytes, list[int]] = {}
    for m in sorted(reads, key=lambda m: (m.partition(), m.offset())):
        if m.key() is not None:
            by_key.setdefault(m.key(), []).append(int(m.value()))
    assert all(seen == sorted(seen) for seen in by_key.values()), "a key's messages out of order"


@pytest.mark.parametrize("cut", [False, True], ids=["in-flight", "cut-then-kill"])
def test_a_killed_producer_s_batches_are_settled_by_the_next_one_on_the_same_state_path(
    slow_tansu: tuple[Any, ThreadedProxy], tmp_path: Path, cut: bool
) -> None:
    """``cut``: the connection is cut just before the kill: the batches the proxy held are missing and are resent
    with their producer id and sequences."""
    broker, proxy = slow_tansu
    topic = f"state-kill-{cut}"
    broker.create_topic(topic, 3)
    state = tmp_path / "state"
    acked = _kill_when_all_sent(proxy.address, topic, state, proxy if cut else None)
    assert acked < TOTAL, "every batch was acknowledged before the kill: nothing to settle"

    async def restart() -> dict[str, int]:
        async with Producer(ProducerConfig(bootstrap_servers=(proxy.address,), state_path=str(state))) as producer:
            return {name: producer.counters.get(name) for name in ("JournalFound", "JournalResent", "JournalFallback")}

    counters = asyncio.run(restart())
    assert counters["JournalFound"] + counters["JournalResent"] == TOTAL - acked
    assert counters["JournalFallback"] == 0
    if cut:
        assert counters["JournalResent"] > 0
    _check(proxy.address, topic)
    print(f"\nkilled with {acked} of {TOTAL} acknowledged; the next producer settled: {counters}")


def test_one_producer_per_state_path(slow_tansu: tuple[Any, ThreadedProxy], tmp_path: Path) -> None:
    _, proxy = slow_tansu
    config = ProducerConfig(bootstrap_servers=(proxy.address,), state_path=str(tmp_path / "s"))

    async def two() -> None:
        async with Producer(config):
            with pytest.raises(StateInUse, match="in use by another producer"):
                await Producer(config).start()

    asyncio.run(two())


def test_a_journal_cut_in_half_after_a_kill_is_reported_and_what_may_be_lost_counted(
    slow_tansu: tuple[Any, ThreadedProxy], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The journal of the killed producer is cut to half its size: the batches recorded in the other half cannot be
    settled (the library has no other copy of them). The next producer says so in one ERROR line naming the file and
    counts the messages that may be lost (JournalPossiblyLost, an upper bound); nothing is read back twice. The
    connection is cut before the kill, so the batches the proxy held never reached the broker: lost for real when
    their records are in the half cut off."""
    broker, proxy = slow_tansu
    topic = "state-cut-in-half"
    broker.create_topic(topic, 3)
    state = tmp_path / "state"
    acked = _kill_when_all_sent(proxy.address, topic, state, proxy)
    assert acked < TOTAL, "every batch was acknowledged before the kill: nothing to settle"
    (journal,) = sorted(state.glob("*.batches"))
    journal.write_bytes(journal.read_bytes()[: journal.stat().st_size // 2])

    async def restart() -> int:
        async with Producer(ProducerConfig(bootstrap_servers=(proxy.address,), state_path=str(state))) as producer:
            return producer.counters.get("JournalPossiblyLost")

    with caplog.at_level(logging.ERROR):
        possibly_lost = asyncio.run(restart())
    reads = read_back(proxy.address, topic, 3, TOTAL, timeout=5, extra=0.5)
    numbers = Counter(int(m.value()) for m in reads)
    lost = [n for n in range(TOTAL) if numbers[n] == 0]
    assert {n: c for n, c in numbers.items() if c > 1} == {}, "duplicated"
    assert len(lost) <= possibly_lost, f"{len(lost)} lost, {possibly_lost} counted as possibly lost"
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any(str(journal) in line for line in errors), errors
    print(f"\nkilled with {acked} of {TOTAL} acknowledged, journal cut: {len(lost)} lost, {possibly_lost} counted")


def test_a_state_path_used_against_another_cluster_is_refused_at_once_or_abandoned_when_asked(
    slow_tansu: tuple[Any, ThreadedProxy], tmp_path: Path
) -> None:
    """The killed producer's batches were sent to one cluster; a producer on the same state path reaches another
    (another cluster id; the topic is not there): ``start()`` refuses within seconds, naming both clusters and the
    topic, and sends nothing; with ``state_abandon`` it gives the batches up, counted (JournalAbandoned), and the
    next start has nothing left to settle."""
    broker, proxy = slow_tansu
    topic = "state-other-cluster"
    broker.create_topic(topic, 3)
    state = tmp_path / "state"
    _kill_when_all_sent(proxy.address, topic, state, proxy)
    unsettled = sum(e.count for e in read_journal(state).entries if e.finished is None)
    assert unsettled > 0

    async def start(address: str, **options: Any) -> int:
        producer = Producer(ProducerConfig(bootstrap_servers=(address,), state_path=str(state), **options))
        try:
            await asyncio.wait_for(producer.start(), 20)
            return producer.counters.get("JournalAbandoned")
        finally:
            await producer.close()

    with EmbeddedBroker(env={"CLUSTER_ID": "another-cluster"}) as other:
        began = time.monotonic()
        with pytest.raises(StateMismatch) as refused:
            asyncio.run(start(other.address))
        assert time.monotonic() - began < 10
        said = str(refused.value)
        assert "tansu_cluster" in said and "another-cluster" in said and topic in said and str(state) in said
        assert asyncio.run(start(other.address, state_abandon=True)) == unsettled
        assert asyncio.run(start(other.address)) == 0  # nothing left to settle, and the path is the other's now
        assert topic not in AdminClient({"bootstrap.servers": other.address}).list_topics(timeout=10).topics
