"""The library's state path with a damaged journal (bruce.producer.idempotence.state_path): the batches whose records
are lost cannot be settled — the library has no other copy of them — so the start says so in one ERROR line naming the
file and counts the messages that may be lost (``JournalPossiblyLost``: the messages of the batches outstanding when the
journal was last written, an upper bound); what is readable is settled as usual. The log lookups are stubbed here
(against tansu: tests/e2e/test_producer_state_tansu.py)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from bruce.producer.config import ProducerConfig
from bruce.producer.counters import Counters
from bruce.producer.idempotence import state_path as state_module
from bruce.producer.idempotence.journal import Journal, journal_files
from bruce.producer.idempotence.recovery import Settlement
from bruce.producer.idempotence.state_path import ProducerState
from bruce.wire.recordbatch import build_record_batch


class StubProducer:
    def __init__(self) -> None:
        self.config = ProducerConfig(message_timeout_ms=1000)
        self.counters = Counters()
        self.sent: list[Any] = []

    def journal_batches(self, hook: Any) -> None:
        pass

    def cluster(self) -> None:
        return None

    async def ready(self, timeout: float | None = None) -> None:
        return None

    def send(self, *args: Any, **kwargs: Any) -> None:
        self.sent.append(args)


class FindEverything:
    """Settling that finds every batch it is given in the log."""

    def __init__(self, producer: Any, config: Any, rebuild: Any, *, deadline: float) -> None:
        pass

    async def settle(self, entries: list[Any], acked: dict[Any, int], journaled: Any = None) -> Settlement:
        return Settlement(found=list(entries))


def _crashed_producer(directory: Path) -> list[int]:
    """Ten batches of 3 messages sent, the first four acknowledged; where each SENT record starts."""
    j = Journal(directory)
    j.open()
    starts = []
    for bid in range(10):
        starts.append(j._size)
        payload = build_record_batch([(None, b"m%d-%d" % (bid, i), 0, ()) for i in range(3)])
        j.sent(bid, ("t", bid % 2), (5, 0, bid * 3), 3, [], payload)
    for bid in range(4):
        j.finished(bid, ("t", bid % 2), bid)
    return starts


def test_a_journal_cut_in_half_is_reported_and_what_may_be_lost_is_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    starts = _crashed_producer(tmp_path)
    ((_, path),) = journal_files(tmp_path)
    path.write_bytes(path.read_bytes()[: starts[6] + 11])  # batches 6-9 and every FINISHED record cut off
    monkeypatch.setattr(state_module, "Settler", FindEverything)
    producer = StubProducer()
    with caplog.at_level(logging.ERROR):
        state = ProducerState(str(tmp_path))
        asyncio.run(state.settle(producer))  # type: ignore[arg-type]
        state.close()
    assert producer.counters.get("JournalFound") == 18  # the readable batches 0-5
    # The header was last written with the last SENT record: 10 batches of 3 outstanding then (the FINISHED records
    # after it do not rewrite it). Batches 6-9 (12 messages) are the ones lost: at most 30 is an upper bound.
    assert producer.counters.get("JournalPossiblyLost") == 30
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any(str(path) in line and "cut short" in line for line in errors), errors
    assert any("up to 30 messages may be lost" in line for line in errors), errors


def test_an_intact_journal_counts_nothing_as_possibly_lost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _crashed_producer(tmp_path)
    monkeypatch.setattr(state_module, "Settler", FindEverything)
    producer = StubProducer()
    state = ProducerState(str(tmp_path))
    asyncio.run(state.settle(producer))  # type: ignore[arg-type]
    state.close()
    assert producer.counters.get("JournalFound") == 18 and producer.counters.get("JournalPossiblyLost") == 0
