"""The daemon's side of the durable spool (docs/spool.md): open it from the options, replay it at start, show it.

Rules:
- :func:`spool_config` turns the ``--spool_*`` options into a :class:`~bruce.proxy.spool.SpoolConfig` (None: no
  spool, Bruce's behaviour). Opening is the daemon's (``Spool.open`` raises only ``SpoolLocked``).
- :class:`Replay` hands what earlier runs left in the spool to the router, before new input is read: each record
  becomes a :class:`~bruce.proxy.messages.message.Message` with its ``spool_seq``. A record the batch journal settled as
  delivered is marked done and not sent (``SpoolSettled``); one it cannot vouch for (no journal, or sent before the
  crash and not settled) is reported as a possible duplicate (``SpoolReplayedPossibleDuplicate``; the discard
  report's ``possible_duplicate_topic`` and the discard log, where Bruce reports resends; the message's own flag stays
  off so it can be packed like a fresh one). It is counted as
  received (``received``, an input of the accounting; ``MsgCreate``) and reserves its charge in the budget like any
  message; when the budget is full, replay waits for room (it pulls the spool's iterator one burst at a time), so a
  spool larger than memory replays at the brokers' pace. A stop request ends replay: what was not handed out stays in
  the spool. A damaged record is counted as received and discarded as SPOOL_CORRUPT (the spool logs file and offset).
- :class:`DiskBacklog` routes what the inputs hold on disk only (the spool's cursor, :mod:`bruce.proxy.spool.cursor`):
  an input that has no room in the budget for a spooled message keeps no copy of it (``spool.cursor.hold``) instead
  of discarding it NO_MEM, and once anything is held so, every later spooled message is held too until the cursor
  caught up (arrival order). :meth:`DiskBacklog.run` reads them back in order and hands each to the router when the
  budget has room (waiting for a release otherwise), counted as created (``MsgCreate``) but not again as received.
  They are in flight meanwhile (:attr:`Outcomes.in_flight`). A record the cursor cannot read is discarded as
  SPOOL_CORRUPT; one larger than the whole budget (it can never fit) as NO_MEM, as the intake would have. At a
  stop the daemon waits (within its shutdown deadline) until :meth:`DiskBacklog.caught_up`; then
  :meth:`DiskBacklog.settle` counts what is left as kept (``Outcomes.kept``, not discarded): not marked done, it
  stays in the spool for the next start.
- :class:`SpoolStatus` gives the spool's counters (``bruce.proxy.spool``) and gauges for ``/metrics`` and the front
  page.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from bruce.producer import Counters, DiscardReason, Labels

from ..accounting import Outcomes
from ..config import NOTICE, Options
from ..intake import TOPIC_CACHE_SIZE, MessageSink
from ..messages import HeldMessage, MessageBudget
from ..spool import FullPolicy, Spool, SpoolConfig, SpoolRecord
from ..status import Gauge

if TYPE_CHECKING:
    from .exactly_once import Verdict

log = logging.getLogger("bruce.spool")

ROOM_WAIT_S = 0.01  # replay's pause while the budget has no room for the next message
BACKLOG_BURST = 256  # records the disk backlog routes before it lets the loop run
BACKLOG_ROOM_WAIT_S = 0.05  # the disk backlog waits for a release this long at most before it tries again
GAUGES = {
    "SpoolBytes": "Bytes of the spool's segment files.",
    "SpoolSegments": "The spool's segment files.",
    "SpoolPending": "Spooled or replayed messages not yet delivered or discarded.",
    "SpoolOldestMs": "Age of the oldest segment still holding an undelivered message, ms.",
    "SpoolFsyncLastUs": "The last spool sync's duration, microseconds.",
    "SpoolFsyncMaxUs": "The longest spool sync's duration, microseconds.",
    "SpoolHeldOnDisk": "Messages held on disk only (no room in the memory budget): read back in order when there is.",
    "SpoolDegraded": "1 after a spool disk error: memory-only until restart (the log says why).",
}


class _TopicNames:
    """Topic names decoded once per distinct name, at most TOPIC_CACHE_SIZE kept (cleared when full), as the intake."""

    def __init__(self) -> None:
        self._names: dict[bytes, str] = {}

    def __call__(self, raw: bytes) -> str:
        topic = self._names.get(raw)
        if topic is None:
            if len(self._names) >= TOPIC_CACHE_SIZE:
                self._names.clear()
            topic = self._names[raw] = raw.decode("utf-8", "surrogateescape")
        return topic


def spool_config(options: Options) -> SpoolConfig | None:
    """The spool settings of ``options``, or None when ``--spool_dir`` is not given."""
    if not options.spool_dir:
        return None
    return SpoolConfig(
        Path(options.spool_dir),
        segment_bytes=options.spool_segment_bytes,
        fsync_ms=options.spool_fsync_ms,
        max_bytes=options.spool_max_bytes,
        full_policy=FullPolicy(options.spool_full_policy),
    )


class Replay:
    """Replays ``spool`` into ``route`` (see the module rules). ``received`` counts what it handed over or
    discarded."""

    def __init__(
        self,
        spool: Spool,
        *,
        sink: MessageSink,
        budget: MessageBudget,
        outcomes: Outcomes,
        counters: Counters,
        settle: Callable[[], Awaitable[Verdict]] | None = None,
    ) -> None:
        self.spool = spool
        self.sink = sink
        self.counters = counters
        self.budget = budget
        self.outcomes = outcomes
        self.received = 0
        self.possible_duplicates = 0  # replayed records that may have been delivered before the restart
        self.settled = 0  # records not replayed: settled by the batch journal (delivered before the restart)
        self.settle = settle  # the batch journal's (bruce.proxy.daemon.exactly_once)

    def _on_corrupt(self, file: str, offset: int, count: int, detail: str) -> None:
        self.received += count
        for _ in range(count):
            self.outcomes.on_discard(DiscardReason.SPOOL_CORRUPT, "", None, b"", 0)

    async def run(self, stopping: Callable[[], bool]) -> int:
        """Hand every record over to the router, oldest first; returns how many. Ends early at a stop request. Logs
        one NOTICE line with the counts when earlier runs left anything."""
        segments, nbytes = self.spool.segments, self.spool.bytes
        start = time.monotonic()
        handed = await self._run(stopping)
        spool = self.spool
        if segments:
            log.log(
                NOTICE,
                "spool replay %s: %d messages from %d segments (%d bytes) replayed (%d of them possible duplicates), "
                "%d settled as delivered by the batch journal, %d skipped as delivered before, %d lost to damage "
                "(SPOOL_CORRUPT), in %.1f s",
                "stopped by the shutdown (the rest stay in the spool)" if stopping() else "done",
                handed,
                segments,
                nbytes,
                self.possible_duplicates,
                self.settled,
                spool.skipped_done,
                spool.corrupt,
                time.monotonic() - start,
            )
        return handed

    async def _run(self, stopping: Callable[[], bool]) -> int:
        handed = 0
        reserve = self.budget.try_reserve
        duplicate = self.outcomes.tracker.record_possible_duplicate
        topic_of = _TopicNames()
        verdict = await self.settle() if self.settle is not None else None
        skip = verdict.settled if verdict is not None else None
        bursts: Iterator[list[SpoolRecord]] = self.spool.replay(skip, on_corrupt=self._on_corrupt)
        for burst in bursts:
            now = time.monotonic()
            for record in burst:
                if verdict is not None and verdict.settled(record.sequence):
                    self.spool.done_run(record.sequence, 1)
                    self.settled += 1
                    continue
                topic = topic_of(record.topic)
                msg = HeldMessage(topic, record.key, record.value, record.timestamp, record.partition_key, now)
                msg.spool_seq = record.sequence
                while not reserve(msg.charge):
                    if stopping():
                        return handed
                    await asyncio.sleep(ROOM_WAIT_S)
                self.received += 1
                handed += 1
                self.counters.inc("MsgCreate")
                if verdict is None or verdict.possible_duplicate(record.sequence):
                    duplicate(topic, msg.key, msg.value, msg.timestamp)
                    self.possible_duplicates += 1
                self.sink.route(msg)
            await asyncio.sleep(0)  # let deliveries and the status pages run between bursts
            if stopping():
                break
        if self.settled:
            self.counters.inc("SpoolSettled", self.settled)
        if self.possible_duplicates:
            self.counters.inc("SpoolReplayedPossibleDuplicate", self.possible_duplicates)
        return handed


class DiskBacklog:
    """Routes the records held on disk only (see the module rules); ``run`` is a task of the daemon."""

    def __init__(
        self,
        spool: Spool,
        *,
        behind: asyncio.Event,
        sink: MessageSink,
        budget: MessageBudget,
        outcomes: Outcomes,
        counters: Counters,
    ) -> None:
        """``behind`` is set by the spool's cursor when it stops being caught up (the spool was opened with
        ``on_behind=behind.set``): :meth:`run` wakes."""
        self.spool = spool
        self.sink = sink
        self.cursor = spool.cursor
        self.budget = budget
        self.outcomes = outcomes
        self.counters = counters
        self.routed = 0
        self._topic = _TopicNames()
        self._wake = behind
        self._room = asyncio.Event()

    def _on_lost(self, count: int) -> None:
        for _ in range(count):
            self.outcomes.on_discard(DiscardReason.SPOOL_CORRUPT, "", None, b"", 0)

    async def run(self) -> None:
        """Route the records held on disk only as the budget makes room, in order; runs until cancelled."""
        cursor = self.cursor
        while True:
            await self._wake.wait()
            self._wake.clear()
            while cursor.start is not None:
                if self.route_some(BACKLOG_BURST):
                    await asyncio.sleep(0)  # let deliveries, the intake and the status pages run
                else:
                    await self._until_room()

    async def _until_room(self) -> None:
        """Wait for a release down to the budget's resume level (at most BACKLOG_ROOM_WAIT_S), or, when usage is
        there already and the next message still does not fit, a short while."""
        self._room.clear()
        self.budget.notify_when_free(self._room.set)
        if self._room.is_set():
            await asyncio.sleep(ROOM_WAIT_S)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._room.wait(), BACKLOG_ROOM_WAIT_S)
        self.budget.cancel_notify(self._room.set)

    async def caught_up(self) -> None:
        """Until nothing is held on disk only (:meth:`run` reads it back meanwhile, as room comes)."""
        while self.cursor.start is not None:
            await asyncio.sleep(BACKLOG_ROOM_WAIT_S)

    def route_some(self, limit: int) -> bool:
        """Hand up to ``limit`` records to the router; False when the budget had no room for the next one."""
        cursor, reserve, route, on_lost = self.cursor, self.budget.try_reserve, self.sink.route, self._on_lost
        now = time.monotonic()
        created = 0
        try:
            for _ in range(limit):
                record = cursor.peek(on_lost)
                if record is None:
                    break
                msg = HeldMessage(
                    self._topic(record.topic), record.key, record.value, record.timestamp, record.partition_key, now
                )
                if not reserve(msg.charge):
                    if msg.charge <= self.budget.capacity:
                        return False
                    cursor.take()  # larger than the whole budget: it can never fit (NO_MEM, as at intake)
                    self.spool.done_run(record.sequence, 1)
                    self.outcomes.on_discard(DiscardReason.NO_MEM, msg.topic, msg.key, msg.value, msg.timestamp)
                    continue
                msg.spool_seq = record.sequence
                cursor.take()
                created += 1
                route(msg)
        finally:
            if created:
                self.routed += created
                self.counters.inc("MsgCreate", created)
        return True

    def settle(self) -> int:
        """At a stop: what is still held on disk only stays in the spool for the next start, counted as kept (not
        discarded); returns how many."""
        held = self.cursor.leave()
        if held:
            self.outcomes.kept(held)
            log.warning("%d messages held on disk only stay in the spool: the next start delivers them", held)
        return held


class SpoolStatus:
    """The spool's counters (a counter set) and gauges for the status pages."""

    __slots__ = ("_spool",)

    def __init__(self, spool: Callable[[], Spool | None]) -> None:
        self._spool = spool  # None until the daemon opened it

    def items(self) -> Iterator[tuple[str, Labels, int]]:
        spool = self._spool()
        for name, value in spool.stats().items() if spool is not None else ():
            if name not in GAUGES:
                yield name, (), value

    def gauges(self) -> list[Gauge]:
        spool = self._spool()
        if spool is None:
            return []
        stats = spool.stats()
        capacity = Gauge("SpoolMaxBytes", "The spool's size limit (--spool_max_bytes).", spool.config.max_bytes)
        return [*(Gauge(name, help, stats[name]) for name, help in GAUGES.items()), capacity]
