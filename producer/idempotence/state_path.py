"""The library's durable idempotence state (``ProducerConfig.state_path``, librdkafka-style ``state.path``): the batch
journal with each batch's bytes, so a producer started on the same path after a ``close()`` or a crash settles what the
earlier one had sent and not seen acknowledged (docs/producer.md, "Exactly once across restarts").

Rules:
- One producer per path: an exclusive ``flock`` on ``PATH/lock`` for the producer's life (the kernel releases it when
  the process dies); a second one gets :class:`StateInUse`.
- At :meth:`Producer.start`, before ``send`` is possible: the journal (:mod:`bruce.producer.idempotence.journal`) is
  read; batches sent and never finished (no acknowledgement, no failure reported) are settled against their partition's
  log (:mod:`bruce.producer.idempotence.recovery`, within ``message_timeout_ms``, 30 s at least): found, they stay;
  missing at the tail, they are resent with their producer id, epoch and sequences; those that fall back are sent again
  as new messages to the same partition (their records decoded from the journaled bytes), counted ``JournalFallback`` —
  not awaited by anyone. Counters ``JournalFound``/``JournalResent`` count the messages of the other two.
- A journal that cannot vouch for itself (a record damaged, a file cut short or missing: :mod:`bruce.producer.
  journal_reader`) may have lost batches the library has no other copy of: one ERROR line per file names it, and
  ``JournalPossiblyLost`` counts the messages outstanding when the journal was last written (an upper bound: the
  batches still readable are settled as usual); when that is not known (the newest file or its header gone, or the
  whole journal where the ``cluster`` file says this path journaled before) ``JournalLossUnknown`` counts the start.
- While running, every idempotent batch is journaled before its first send (and again when an epoch bump renumbers
  it) with its bytes as sent, and finished when its fate is known. Batches given up are the caller's (its ``send``
  handle failed): they are not settled later. Messages never sent (still queued when the process died) were never
  journaled: they are the caller's to send again.
- Durability (``state_sync_ms``, 100 by default, like the daemon's ``--spool_fsync_ms``): a record is in the kernel's
  page cache once written, so a crash of the process loses none; against a power loss, 0 syncs each batch's SENT
  record before the batch is sent, *n* syncs in the background every *n* ms (:meth:`ProducerState.sync_loop`, a
  task of the producer's), and ``close()`` syncs.
- Without idempotence (off by configuration, or a broker that cannot take it) nothing is journaled.
- The path belongs to one cluster (:mod:`bruce.producer.idempotence.state_cluster`: ``PATH/cluster``, written before
  this producer's first batch is journaled, and after settling): a producer that reaches a cluster with another cluster
  id while the journal holds unsettled batches gets :class:`StateMismatch` from ``start()`` — naming both clusters,
  the topics and the path, nothing sent, nothing left running — unless ``state_abandon``: then the batches are given
  up (FINISHED as given up), counted ``JournalAbandoned`` (messages) and logged. Without a cluster id on either side
  (Metadata before v2, a path an earlier bruce wrote, a damaged file: logged) the cluster is taken for the same. A
  topic the cluster does not have is not waited for (:mod:`bruce.producer.idempotence.recovery`): its batches fall back
  at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from bruce.wire import UsageError, decode_record_batch

from ..config import ProducerConfig
from ..counters import Counters
from ..metadata import ClusterView
from .journal import DELETE_EVERY_S, Journal, JournalEntry, PartJournal, read_journal
from .recovery import Settlement, Settler, highest_sequences
from .state_cluster import CLUSTER_NAME, Damaged, StateCluster, load_cluster, save_cluster

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


class StateMismatch(UsageError):
    """The state path belongs to another cluster than the one the producer reached, and holds batches to settle."""

    reason = "STATE_OTHER_CLUSTER"


class _Recording(PartJournal):
    """The library's journal hook: the state path says which cluster it belongs to before this producer's first batch
    is journaled."""

    __slots__ = ("record",)

    def __init__(self, journal: Journal, record: Callable[[], None]) -> None:
        super().__init__(journal, payload=True)
        self.record: Callable[[], None] | None = record

    def sent(self, part: Any, batch: Any) -> None:
        if self.record is not None:
            self.record()
            self.record = None
        super().sent(part, batch)


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
        self.journal.hold([e for e in self.state.entries if e.finished is None])  # kept until settled
        self.settlement: Settlement | None = None
        self.cluster = load_cluster(self.directory)
        if isinstance(self.cluster, Damaged):
            log.warning(
                "state %s: %s %s: which cluster it belongs to is not known; taken for the one reached",
                self.directory,
                CLUSTER_NAME,
                self.cluster.why,
            )

    async def settle(self, producer: Settling) -> Settlement:
        """Settle the earlier producer's batches, then journal this one's (see the module rules)."""
        config = producer.config
        # before any send, the fallbacks' included
        producer.journal_batches(_Recording(self.journal, lambda: self._record(producer)))
        unsettled = [e for e in self.state.entries if e.finished is None]
        if not self.state.files and self.cluster is not None:  # it journaled here before: its journal is gone
            self.state.problems.append(f"{self.directory}: no batch journal file (deleted?)")
            self.state.outstanding = None
            log.error("state %s: its batch journal is gone (deleted?); %s", self.directory, DAMAGE_COST)
        if self.state.problems:
            self._count_damage(producer.counters, unsettled)
        out = Settlement()
        if unsettled:
            wait = max(config.message_timeout_ms / 1000, MIN_SETTLE_S)
            with contextlib.suppress(TimeoutError):
                await producer.ready(wait)
            if not self._same_cluster(producer, unsettled):
                unsettled = []
        if unsettled:
            settler = Settler(producer, config, lambda e: e.payload or None, deadline=time.monotonic() + wait)
            out = await settler.settle(unsettled, self.state.acked, highest_sequences(self.state.entries))
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
        self._record(producer)
        return out

    def _same_cluster(self, producer: Settling, unsettled: list[JournalEntry]) -> bool:
        """Whether ``unsettled`` may be settled on the cluster reached; when not: :class:`StateMismatch`, or with
        ``state_abandon`` False after giving them up (see the module rules)."""
        view, stored = producer.cluster(), self.cluster
        if not isinstance(stored, StateCluster) or view is None or None in (view.cluster_id, stored.cluster_id):
            return True
        if view.cluster_id == stored.cluster_id:
            return True
        reached = StateCluster(view.cluster_id, ",".join(producer.config.bootstrap_servers))
        messages = sum(e.count for e in unsettled)
        what = (
            f"state_path {self.directory} belongs to {stored.describe()}, this producer reached {reached.describe()}: "
            f"the earlier producer's {len(unsettled)} unsettled batches ({messages} messages, topics "
            f"{', '.join(sorted({e.topic for e in unsettled}))}) can only be settled there"
        )
        if not producer.config.state_abandon:
            raise StateMismatch(
                f"{what}; point bootstrap_servers at that cluster, use another state_path, or set state_abandon to "
                "give them up"
            )
        producer.counters.inc("JournalAbandoned", messages)
        for e in unsettled:
            self.journal.finished(e.batch_id, e.tp, -1)
        log.warning("state: %s; given up (state_abandon): %d messages counted JournalAbandoned", what, messages)
        return False

    def _record(self, producer: Settling) -> None:
        """Say which cluster the state path belongs to, once the producer knows (nothing when it does not yet)."""
        view = producer.cluster()
        if view is None:
            return
        reached = StateCluster(view.cluster_id, ",".join(producer.config.bootstrap_servers))
        if reached == self.cluster:
            return
        try:
            save_cluster(self.directory, reached)
        except OSError as e:
            log.error("state %s: cannot write %s (%s)", self.directory, CLUSTER_NAME, e)
        self.cluster = reached

    def _count_damage(self, counters: Counters, unsettled: list[JournalEntry]) -> None:
        """The journal cannot vouch for itself: count and say what may be lost (see the module rules)."""
        outstanding = self.state.outstanding
        readable = sum(e.count for e in unsettled)
        if outstanding is None:
            counters.inc("JournalLossUnknown")
            bound = "an unknown number of messages may be lost (its newest header is gone: JournalLossUnknown)"
        else:
            counters.inc("JournalPossiblyLost", outstanding)
            bound = (
                f"up to {outstanding} messages may be lost (those of the batches outstanding when it was last "
                "written, counted JournalPossiblyLost)"
            )
        log.error(
            "state %s: the batch journal is damaged (%d finding(s) above): %s; %d messages of batches still readable "
            "there are settled now",
            self.directory,
            len(self.state.problems),
            bound,
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
