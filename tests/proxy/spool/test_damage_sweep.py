"""A generated sweep of damage to every file the daemon reads at start (docs/spool.md, "What damage costs"): segments,
the manifest, done files, the tail mark and the batch journal — each cut at every record boundary and in the middle
of records (every byte for the small files), with bits flipped, and deleted. After each, the daemon's start (the spool
opened, the journal settled, the spool replayed) must keep the invariant, message by message:

- read back = sent: each message ends in the topic (stored before the crash, resent by settling, or replayed), or is
  counted lost (SPOOL_CORRUPT) — and the count is exact: exactly the messages that are nowhere;
- every duplicate reported: a message stored before the crash and replayed was replayed as a possible duplicate;
- nothing three times.

The crashed run (built with the real Spool and Journal): 60 messages in segments of 10; 12 batches of 5. Batches 0-5
acknowledged (messages 0-24 marked done and saved, 25-29 not yet), batch 6 sent and stored by the broker, batch 7 sent
and lost on the way, batches 8-11 never sent. The log lookups are answered from that truth (the real ones run against
tansu in tests/e2e/test_settle_tansu.py); the replay loop is :class:`bruce.proxy.daemon.spooling.Replay`'s."""

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
from bruce.producer.idempotence.journal import Journal
from bruce.proxy.daemon import exactly_once
from bruce.proxy.daemon.exactly_once import SpoolJournal
from bruce.proxy.spool import Spool, SpoolConfig, SpoolMessage

from .test_spool_writer import _crash

MESSAGES, BATCH, SEGMENT_BYTES = 60, 5, 28 + 10 * 60
ACKED = range(0, 30)  # batches 0-5
DONE = range(0, 25)  # of them, marked done and saved
STORED = {bid for bid in range(7)}  # batches in the broker's log before the crash: 0-6 (7 was lost on the way)
SENT_BATCHES = 8


def _message(n: int) -> SpoolMessage:
    return SpoolMessage(b"t", None, None, b"%019d" % n, n)


def _crashed_run(directory: Path) -> None:
    spool = Spool.open(SpoolConfig(directory, segment_bytes=SEGMENT_BYTES, done_every_ms=1000))
    for first in range(0, MESSAGES, BATCH):
        spool.append([_message(n) for n in range(first, first + BATCH)])
    journal = Journal(directory, held_from=lambda: spool.held_from)
    journal.open()
    for bid in range(SENT_BATCHES):
        journal.sent(bid, ("t", bid % 2), (9, 0, bid // 2 * BATCH), BATCH, [(bid * BATCH, BATCH)])
        if bid * BATCH in ACKED:
            journal.finished(bid, ("t", bid % 2), bid * 10)
    spool.done_run(DONE.start, len(DONE))
    spool.tick(1e9)  # the done files saved
    journal.tick(1e9)
    _crash(spool)


class Truth(TruthSettler):
    stored = STORED


class StubProducer:
    config = ProducerConfig()

    def journal_batches(self, hook: Any) -> None:
        pass

    async def ready(self, timeout: float | None = None) -> None:
        return None


def _start(directory: Path) -> tuple[dict[int, bool], list[int], int]:
    """The daemon's start on ``directory``: the messages replayed (with their possible-duplicate flag), those resent
    by settling, and the losses counted."""
    Truth.resent = []
    lost: list[int] = []
    spool = Spool.open(SpoolConfig(directory, segment_bytes=SEGMENT_BYTES, done_every_ms=0))
    journal = SpoolJournal(spool, StubProducer(), Counters(), why_off="")  # type: ignore[arg-type]
    verdict = asyncio.run(journal.settle())
    replayed: dict[int, bool] = {}
    for burst in spool.replay(verdict.settled, on_corrupt=lambda _file, _offset, count, _detail: lost.append(count)):
        for record in burst:
            if not verdict.settled(record.sequence):  # as Replay._run: settled records are not sent again
                replayed[int(record.value)] = verdict.possible_duplicate(record.sequence)
    journal.close()
    _crash(spool)
    return replayed, Truth.resent, sum(lost)


def _check(case: str, replayed: dict[int, bool], resent: list[int], counted: int) -> None:
    before = {n for n in range(MESSAGES) if n // BATCH in STORED}
    copies = Counter(before) + Counter(replayed.keys()) + Counter(resent)
    missing = [n for n in range(MESSAGES) if copies[n] == 0]
    assert counted == len(missing), f"{case}: {len(missing)} messages nowhere, {counted} counted lost: {missing}"
    twice = [n for n in range(MESSAGES) if copies[n] > 1 and not replayed.get(n)]
    assert twice == [], f"{case}: delivered twice without being reported: {twice}"
    assert max(copies.values()) <= 2, f"{case}: {copies.most_common(3)}"


@pytest.fixture
def crashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(exactly_once, "Settler", Truth)
    monkeypatch.setattr(os, "fdatasync", lambda fd: None)  # the sweep is about what is read: no disk waits
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    original = tmp_path / "crashed"
    _crashed_run(original)
    return original


@pytest.mark.parametrize("kind", ["seg", "batches", "manifest", "tail", "done"])
def test_every_damage_to_a_file_read_at_start_keeps_the_invariant(crashed: Path, tmp_path: Path, kind: str) -> None:
    files = sorted(p.name for p in crashed.iterdir() if p.name.split(".")[-1] == kind)
    assert files, f"the crashed run left no {kind} file"
    cases = 0
    work = tmp_path / "work"
    for name in files:
        for case in damaged_copies(crashed, work, name):
            _check(case, *_start(work))
            cases += 1
    assert cases > 20


def test_the_crashed_run_itself_replays_exactly_and_reports_nothing(crashed: Path) -> None:
    replayed, resent, counted = _start(crashed)
    _check("no damage", replayed, resent, counted)
    assert counted == 0 and sorted(resent) == list(range(35, 40))  # batch 7, lost on the way, resent
    assert replayed == {n: False for n in range(40, 60)}  # never sent: fresh; 25-29 settled by the journal
