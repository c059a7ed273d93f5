"""A generated sweep of damage to every file the library reads at start from its ``state_path`` (docs/producer.md,
"Exactly once across restarts"): the batch journal (which holds the only copy of the batches' messages) and the
cluster file — cut at every record boundary and in the middle of records (every byte for the cluster file), with bits
flipped, and deleted. After each, ``start()``'s settling must keep the invariant, message by message: each message is
in the topic (stored before the crash, resent, or sent again as new) or counted as possibly lost
(``JournalPossiblyLost``, an upper bound: the journal is the only copy; ``JournalLossUnknown`` where no bound is
left); nothing is delivered twice unless sent again
as new (``JournalFallback``, reported); and a damaged cluster file never refuses the cluster the batches were sent to.

The crashed producer: 10 batches of 3 messages; batches 0-3 acknowledged, 4-6 sent and stored by the broker, 7-9 sent
and lost on the way. The log lookups are answered from that truth (against tansu:
tests/e2e/test_producer_state_tansu.py)."""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from damage import TruthSettler, damaged_copies

from bruce.producer.config import ProducerConfig
from bruce.producer.counters import Counters
from bruce.producer.idempotence import state_path as state_module
from bruce.producer.idempotence.journal import Journal
from bruce.producer.idempotence.state_cluster import StateCluster, save_cluster
from bruce.producer.idempotence.state_path import ProducerState
from bruce.producer.metadata.cluster import BrokerNode, ClusterView
from bruce.wire.recordbatch import build_record_batch

from .test_journal_damage import _only_file

BATCHES, PER = 10, 3
STORED = set(range(7))  # in the broker's log before the crash
VIEW = ClusterView({1: BrokerNode(1, "127.0.0.1", 1)}, {}, "cluster-a")


def _value(bid: int, i: int) -> int:
    return bid * PER + i


def _crashed_producer(directory: Path) -> None:
    save_cluster(directory, StateCluster("cluster-a", "127.0.0.1:1"))
    journal = Journal(directory)
    journal.open()
    for bid in range(BATCHES):
        payload = build_record_batch([(None, b"%d" % _value(bid, i), 0, ()) for i in range(PER)])
        journal.sent(bid, ("t", bid % 2), (5, 0, bid // 2 * PER), PER, [], payload)
        if bid < 4:
            journal.finished(bid, ("t", bid % 2), bid)


class Truth(TruthSettler):
    stored = STORED


class StubProducer:
    def __init__(self) -> None:
        self.config = ProducerConfig(bootstrap_servers=("127.0.0.1:1",))
        self.counters = Counters()
        self.sent: list[int] = []

    def journal_batches(self, hook: Any) -> None:
        pass

    def cluster(self) -> ClusterView:
        return VIEW

    async def ready(self, timeout: float | None = None) -> ClusterView:
        return VIEW

    def send(self, topic: str, value: bytes | None, **kwargs: Any) -> None:
        self.sent.append(int(value or b"-1"))


def _start(directory: Path) -> tuple[Counter[int], Counters]:
    Truth.resent = []
    producer = StubProducer()
    state = ProducerState(str(directory))
    asyncio.run(state.settle(producer))  # type: ignore[arg-type]
    state.close()
    before = [_value(bid, i) for bid in STORED for i in range(PER)]
    return Counter(before) + Counter(Truth.resent) + Counter(producer.sent), producer.counters


@pytest.fixture
def crashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(state_module, "Settler", Truth)
    monkeypatch.setattr(os, "fdatasync", lambda fd: None)
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    original = tmp_path / "crashed"
    original.mkdir()
    _crashed_producer(original)
    return original


@pytest.mark.parametrize("which", ["journal", "cluster"])
def test_every_damage_to_the_state_path_keeps_the_invariant(crashed: Path, tmp_path: Path, which: str) -> None:
    name = _only_file(crashed).name if which == "journal" else "cluster"
    cases = 0
    work = tmp_path / "work"
    for case in damaged_copies(crashed, work, name):
        copies, counters = _start(work)  # a damaged cluster file never refuses: StateMismatch would fail here
        missing = [n for n in range(BATCHES * PER) if copies[n] == 0]
        counted = counters.get("JournalPossiblyLost") if not counters.get("JournalLossUnknown") else len(missing)
        assert len(missing) <= counted, f"{case}: {missing} lost, {counters.snapshot()}"
        assert not missing or counters.get("JournalPossiblyLost") or counters.get("JournalLossUnknown"), case
        twice = sum(c - 1 for c in copies.values() if c > 1)
        assert twice <= counters.get("JournalFallback"), f"{case}: {twice} twice, {counters.snapshot()}"
        cases += 1
    assert cases > 20


def test_the_crashed_producer_itself_is_settled_exactly(crashed: Path) -> None:
    copies, counters = _start(crashed)
    assert all(copies[n] == 1 for n in range(BATCHES * PER))
    assert counters.get("JournalPossiblyLost") == 0 and counters.get("JournalFallback") == 0
