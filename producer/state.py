"""The library's durable idempotence state (``ProducerConfig.state_path``, librdkafka-style ``state.path``): the batch
journal with each batch's bytes, so a producer started on the same path after a ``close()`` or a crash settles what the
earlier one had sent and not seen acknowledged (docs/producer.md, "Exactly once across restarts").

Rules:
- One producer per path: an exclusive ``flock`` on ``PATH/lock`` for the producer's life (the kernel releases it when
  the process dies); a second one gets :class:`StateInUse`.
- At :meth:`Producer.start`, before ``send`` is possible: the journal (:mod:`bruce.producer.journal`) is read; batches
  sent and never finished (no acknowledgement, no failure reported) are settled against their partition's log
  (:mod:`bruce.producer.recovery`, within ``message_timeout_ms``, 30 s at least): found, they stay; missing at the
  tail, they are resent with their producer id, epoch and sequences; those that fall back are sent again as new
  messages to the same partition (their records decoded from the journaled bytes), counted ``JournalFallback`` — not
  awaited by anyone. Counters ``JournalFound``/``JournalResent`` count the messages of the other two.
- A journal that cannot vouch for itself (a record damaged, a file cut short or missing: :mod:`bruce.producer.
  journal_reader`) may have lost batches the library has no other copy of: one ERROR line per file names it, and
  ``JournalPossiblyLost`` counts the messages outstanding when the journal was last written (an upper bound: the
  batches still readable are settled as usual).
- While running, every idempotent batch is journaled before its first send (and again when an epoch bump renumbers
  it) with its bytes as sent, and finished when its fate is known. Batches given up are the caller's (its ``send``
  handle failed): they are not settled later. Messages never sent (still queued when the process died) were never
  journaled: they are the caller's to send again.
- Durability (``state_sync_ms``, 100 by default, like the daemon's ``--spool_fsync_ms``): a record is in the kernel's
  page cache once written, so a crash of the process loses none; against a power loss, 0 syncs each batch's SENT
  record before the batch is sent, *n* syncs in the background every *n* ms (:meth:`ProducerState.sync_loop`, a
  task of the producer's), and ``close()`` syncs.
- Without idempotence (off by configuration, or a broker that cannot take it) nothing is journaled.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from bruce.wire import UsageError, decode_record_batch

from .cluster import ClusterView
from .config import ProducerConfig
from .counters import Counters
from .journal import DELETE_EVERY_S, Journal, JournalEntry, PartJournal, read_journal
from .recovery import Settlement, Settler

log = logging.getLogger("bruce.producer")
MIN_SETTLE_S = 30.0
DAMAGE_COST = (
    "batches recorded only in the unreadable part cannot be settled: their messages are lost unless the broker stored "
    "them"
)


class Settling(Protocol):
    """What settling asks of the producer it starts (:class:`~bruce.producer.producer.Producer` is one)."""

    config: ProducerConfig
    counters: Counters

    def cluster(self) -> ClusterView | None: ...

    def journal_batches(self, journal: PartJournal) -> None: ...

    async def ready(self, timeout: float | None = None) -> ClusterView: ...

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
        headers: Sequence[tuple[str, bytes | None]] | None = None,
    ) -> Any: ...


class StateInUse(UsageError):
    """Another producer holds the state path."""


class ProducerState:
    """The state path of one producer (see the module rules)."""

    def __init__(self, path: str, sync_ms: int = 100) -> None:
        self.directory = Path(path)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock = os.open(self.directory / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock)
            raise StateInUse(f"state_path {path} is in use by another producer: one producer per state path") from None
        self.state = read_journal(self.directory, DAMAGE_COST)
        self.journal = Journal(
            self.directory, next_id=self.state.next_id, next_file=self.state.next_file, sync_ms=sync_ms
        )
        self.journal.open(old=self.state.files)
        self.settlement: Settlement | None = None

    async def settle(self, producer: Settling) -> Settlement:
        """Settle the earlier producer's batches, then journal this one's (see the module rules)."""
        config = producer.config
        producer.journal_batches(PartJournal(self.journal, payload=True))  # before any send, the fallbacks' included
        unsettled = [e for e in self.state.entries if e.finished is None]
        if self.state.problems:
            self._count_damage(producer.counters, unsettled)
        out = Settlement()
        if unsettled:
            wait = max(config.message_timeout_ms / 1000, MIN_SETTLE_S)
            with contextlib.suppress(TimeoutError):
                await producer.ready(wait)
            settler = Settler(producer, config, lambda e: e.payload or None, deadline=time.monotonic() + wait)
            out = await settler.settle(unsettled, self.state.acked)
            self.journal.acked.update(out.acked)
            counters = producer.counters
            counters.inc("JournalFound", sum(e.count for e in out.found))
            counters.inc("JournalResent", sum(e.count for e in out.resent))
            for e in (*out.found, *out.resent):
                self.journal.finished(e.batch_id, e.tp, -2)
            for e in out.fallback:
                records = decode_record_batch(e.payload).records if e.payload else []
                for r in records:
                    producer.send(
                        e.topic, r.value, key=r.key, partition=e.partition, timestamp=r.timestamp, headers=r.headers
                    )
                counters.inc("JournalFallback", len(records))
                self.journal.finished(e.batch_id, e.tp, -1)
            log.warning(
                "state %s: settled %d batches of the earlier producer: %d in the log, %d resent with their sequences, "
                "%d sent again as new (possible duplicates)",
                self.directory,
                len(unsettled),
                len(out.found),
                len(out.resent),
                len(out.fallback),
            )
        self.settlement = out
        return out

    def _count_damage(self, counters: Counters, unsettled: list[JournalEntry]) -> None:
        """The journal cannot vouch for itself: count and say what may be lost (see the module rules)."""
        outstanding = self.state.outstanding
        readable = sum(e.count for e in unsettled)
        counters.inc("JournalPossiblyLost", outstanding)
        log.error(
            "state %s: the batch journal is damaged (%d finding(s) above): up to %d messages may be lost (those of the "
            "batches outstanding when it was last written, counted JournalPossiblyLost); %d messages of batches still "
            "readable there are settled now",
            self.directory,
            len(self.state.problems),
            outstanding,
            readable,
        )

    async def sync_loop(self) -> None:
        """The journal's timer, for the producer's life: background syncs every ``sync_ms`` (see the module rules),
        settled files deleted."""
        every = self.journal.sync_ms / 1000 or DELETE_EVERY_S
        while True:
            await asyncio.sleep(every)
            self.journal.tick()

    def close(self) -> None:
        """Close the journal and release the path."""
        self.journal.close()
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1
