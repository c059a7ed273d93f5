"""The daemon's settling of the batch journal at start (bruce.proxy.daemon.exactly_once), with the log lookups stubbed
(the real ones run against tansu in tests/e2e/test_settle_tansu.py and tests/e2e/daemon/test_daemon_exactly_once.py):
which batches are asked about, which spooled messages are settled, which are possible duplicates."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bruce.producer.config import ProducerConfig
from bruce.producer.counters import Counters
from bruce.producer.idempotence.journal import Journal
from bruce.producer.idempotence.recovery import Settlement
from bruce.proxy.daemon import exactly_once
from bruce.proxy.daemon.exactly_once import SpoolJournal, why_at_least_once
from bruce.proxy.spool import Spool, SpoolConfig, SpoolMessage


class StubProducer:
    def __init__(self, **config: Any) -> None:
        self.config = ProducerConfig(**config)
        self.hook: Any = None

    def journal_batches(self, hook: Any) -> None:
        self.hook = hook

    async def ready(self, timeout: float | None = None) -> None:
        return None


def _crashed_run(directory: Path) -> None:
    """Ten spooled messages (sequences 0-9), none marked done, and the journal of the run that sent some of them."""
    with Spool.open(SpoolConfig(directory)) as spool:
        spool.append([SpoolMessage(b"t", None, None, b"v%d" % i, i) for i in range(10)])
    j = Journal(directory)
    j.open()
    j.sent(0, ("t", 0), (9, 0, 0), 3, [(0, 3)])
    j.finished(0, ("t", 0), 5)  # acknowledged: its messages are settled without asking
    j.sent(1, ("t", 1), (9, 0, 0), 3, [(3, 3)])
    j.finished(1, ("t", 1), -1)  # given up (its partition lost its leader), its messages rerouted into batch 2
    j.sent(2, ("t", 0), (9, 0, 3), 3, [(3, 3)])
    j.sent(3, ("t", 0), (9, 0, 6), 2, [(6, 2)])  # sent, outcome unknown
    # sequences 8 and 9 were never sent


def test_acknowledged_batches_settle_without_asking_and_a_rerouted_message_belongs_to_its_latest_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _crashed_run(tmp_path)
    asked: list[int] = []

    class FakeSettler:
        def __init__(self, producer: Any, config: Any, rebuild: Any, *, deadline: float) -> None:
            self.rebuild = rebuild

        async def settle(self, entries: list[Any], acked: dict[Any, int], journaled: Any = None) -> Settlement:
            asked.extend(e.batch_id for e in entries)
            assert acked == {("t", 0): 5}
            by_id = {e.batch_id: e for e in entries}
            assert self.rebuild(by_id[3]) is not None  # the spool still holds its messages: it can be resent
            return Settlement(found=[by_id[2]], fallback=[by_id[3]])

    monkeypatch.setattr(exactly_once, "Settler", FakeSettler)
    counters = Counters()
    with Spool.open(SpoolConfig(tmp_path)) as spool:
        producer = StubProducer()
        journal = SpoolJournal(spool, producer, counters, why_off="")  # type: ignore[arg-type]
        assert producer.hook is not None  # new batches are journaled
        verdict = asyncio.run(journal.settle())
        journal.close()
    assert asked == [2, 3]  # not 0 (acknowledged), not 1 (its messages went into 2)
    assert [s for s in range(10) if verdict.settled(s)] == [0, 1, 2, 3, 4, 5]
    assert [s for s in range(10) if verdict.possible_duplicate(s)] == [6, 7]  # 8 and 9 were never sent
    assert counters.get("JournalFound") == 3 and counters.get("JournalFallback") == 2


def test_without_a_journal_every_replayed_message_is_a_possible_duplicate(tmp_path: Path) -> None:
    with Spool.open(SpoolConfig(tmp_path)) as spool:
        spool.append([SpoolMessage(b"t", None, None, b"v", 0)])
    with Spool.open(SpoolConfig(tmp_path)) as spool:
        journal = SpoolJournal(spool, StubProducer(), Counters(), why_off="")  # type: ignore[arg-type]
        verdict = asyncio.run(journal.settle())
        journal.close()
    assert verdict.possible_duplicate(0) and not verdict.settled(0)


def test_why_at_least_once_names_the_setting() -> None:
    assert why_at_least_once(ProducerConfig()) == ""
    assert why_at_least_once(ProducerConfig(enable_idempotence=False)) == "enable_idempotence is off"
    assert "acks=1" in why_at_least_once(ProducerConfig(acks=1))
    assert "v0" in why_at_least_once(ProducerConfig(protocol="v0"))


def test_new_messages_never_get_a_sequence_the_journal_names(tmp_path: Path) -> None:
    """The spool starts again at 0 once its segments are gone; the journal of an earlier run still names sequences up
    to 41: a new message gets 42, so the journal can never take it for a delivered one."""
    j = Journal(tmp_path, held_from=lambda: 0)  # the spool of that run still held sequence 0 at its end
    j.open()
    j.sent(0, ("t", 0), (9, 0, 0), 42, [(0, 42)])
    j.finished(0, ("t", 0), 7)
    j.close()
    with Spool.open(SpoolConfig(tmp_path)) as spool:
        assert spool.next_sequence == 0  # no segment: the spool alone would start again at 0
        journal = SpoolJournal(spool, StubProducer(), Counters(), why_off="")  # type: ignore[arg-type]
        assert spool.append([SpoolMessage(b"t", None, None, b"new", 0)]) == 42
        verdict = asyncio.run(journal.settle())
        journal.close()
    assert not verdict.settled(42)


@pytest.mark.parametrize("fsync_ms", [0, 100, 250])
def test_the_journal_reaches_the_disk_as_the_spool_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fsync_ms: int
) -> None:
    """--spool_fsync_ms 0: a batch's SENT record is synced before the batch is sent; n: the daemon's timer syncs it in
    the background n ms after the last sync began, not sooner."""
    with Spool.open(SpoolConfig(tmp_path, fsync_ms=fsync_ms)) as spool:
        producer = StubProducer()
        journal = SpoolJournal(spool, producer, Counters(), why_off="")  # type: ignore[arg-type]
        assert journal.journal is not None
        synced: list[int] = []
        real = os.fdatasync
        monkeypatch.setattr(os, "fdatasync", lambda fd: (synced.append(fd), real(fd)))
        for n in range(2):
            part = SimpleNamespace(journal_id=-1, messages=[SimpleNamespace(spool_seq=n)], data=b"")
            batch = SimpleNamespace(tp=("t", 0), producer_id=9, producer_epoch=0, base_sequence=n, count=1)
            batch.records = part
            producer.hook.sent(part, batch)
            assert len(synced) == (n + 1 if fsync_ms == 0 else n)
            if fsync_ms == 0:
                continue
            journal.tick(1000.0 + n * (fsync_ms / 1000 - 0.01))  # the first: due; the second: too early
            if n == 1:
                assert journal.journal._syncing is None
                journal.tick(1000.0 + fsync_ms / 1000)
            assert journal.journal._syncing is not None
            journal.journal._syncing.result(5)
            assert len(synced) == n + 1
        journal.close()


def test_batches_the_last_run_sent_unjournaled_make_every_replay_a_possible_duplicate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Settling found the dead run's producer id in a log past its last journaled sequence: its journal could not
    record what it sent (nothing in the directory was writable), so no replayed message is known never sent."""
    _crashed_run(tmp_path)

    class FakeSettler:
        def __init__(self, producer: Any, config: Any, rebuild: Any, *, deadline: float) -> None:
            pass

        async def settle(self, entries: list[Any], acked: dict[Any, int], journaled: Any = None) -> Settlement:
            assert journaled == {("t", 0, 9, 0): 6, ("t", 1, 9, 0): 0}
            return Settlement(found=list(entries), unjournaled=[("t", 0)])

    monkeypatch.setattr(exactly_once, "Settler", FakeSettler)
    with Spool.open(SpoolConfig(tmp_path)) as spool:
        journal = SpoolJournal(spool, StubProducer(), Counters(), why_off="")  # type: ignore[arg-type]
        verdict = asyncio.run(journal.settle())
        journal.close()
    assert [s for s in range(10) if verdict.possible_duplicate(s) and not verdict.settled(s)] == [8, 9]
