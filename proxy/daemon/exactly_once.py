"""Exactly once across daemon crashes: the batch journal beside the spool, and settling it at start (docs/spool.md,
"Exactly once across crashes").

Rules:
- With the spool and the idempotent producer (the default where the broker takes it), every batch's identity is
  journaled before it is sent (:mod:`bruce.producer.idempotence.journal`, in the spool directory), with the spool
  sequences of its messages. Without idempotence (``enable_idempotence`` off, acks ≠ -1, ``--kafka_protocol v0``, a
  broker that cannot take it) nothing is journaled: one NOTICE says so and the spool is at-least-once, as before.
- At start, before replay (:meth:`SpoolJournal.settle`): the earlier runs' journal is read. Messages of batches known
  as acknowledged are *settled*: marked done at replay, not sent again. Batches sent and not known as acknowledged
  whose messages the spool still holds are settled against the partition's log
  (:mod:`bruce.producer.idempotence.recovery`): found there, or resent with their own producer id, epoch and sequence
  and acknowledged, they are settled too; those that fall back are replayed as possible duplicates. Every other replayed
  message was never sent: it is replayed as a fresh message, not reported as a possible duplicate — when the journal
  vouches for itself (its files exist, none says it went off, none is damaged:
  :mod:`bruce.producer.idempotence.journal_reader`, each finding logged with what it costs) and settling found no batch
  it did not journal; else every replayed message it does not settle is a possible duplicate. A GAP record (journal
  files lost while the last run ran) makes the sequences up to the one it names possible duplicates. Batches whose
  messages were lost from the spool are looked for in the log too: found, their messages were delivered (not counted
  lost at replay, :meth:`~bruce.proxy.spool.Spool.replay`'s ``skip``).
- A journal write error turns it off with the OFF state recorded in its header
  (:mod:`bruce.producer.idempotence.journal`; its log line says what that costs here: ``UNJOURNALED_COST``).
- The journal is synced as the spool is (``--spool_fsync_ms``): with 0 each SENT record is on disk before its batch
  is sent; with *n* it is synced in the background every *n* ms (the daemon's timer calls :meth:`SpoolJournal.tick`
  with the spool's).
- Settling waits for the first metadata and ends within :data:`SETTLE_S` (brokers unreachable: what is left falls
  back). FINISHED records for every batch settled or fallen back go to the new journal, so the next start does not
  settle them again; the earlier files are deleted by the journal's rule once their messages left the spool.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from bruce.producer import (
    Counters,
    Journal,
    JournalEntry,
    PartJournal,
    Producer,
    ProducerConfig,
    Settler,
    highest_sequences,
    read_journal,
)
from bruce.wire import build_record_batch

from ..config import NOTICE
from ..messages import HeldMessage
from ..spool import Spool, SpoolRecord

log = logging.getLogger("bruce.spool")

SETTLE_S = 30.0  # the most settling may take at start (then what is left is replayed as possible duplicates)
REPLAY_COST = "the messages the spool replays and the journal does not settle are reported as possible duplicates"
UNJOURNALED_COST = "the spool's messages the next start replays may have been delivered already"


@dataclass(slots=True)
class Verdict:
    """What settling decided for the replay: sequences settled (not sent again) as sorted disjoint runs, sequences that
    fell back (possible duplicates), and whether the unsettled rest is known never sent."""

    firsts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    fallback: set[int] = field(default_factory=set)
    complete: bool = False
    unvouched_top: int = -1  # the journal lost records while it ran: sequences up to this one are not vouched for

    def settled(self, seq: int) -> bool:
        i = bisect.bisect_right(self.firsts, seq) - 1
        return i >= 0 and seq < self.ends[i]

    def possible_duplicate(self, seq: int) -> bool:
        return not self.complete or seq <= self.unvouched_top or seq in self.fallback


def _merge(runs: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    firsts: list[int] = []
    ends: list[int] = []
    for first, count in sorted(runs):
        if ends and first <= ends[-1]:
            ends[-1] = max(ends[-1], first + count)
        else:
            firsts.append(first)
            ends.append(first + count)
    return firsts, ends


class SpoolJournal:
    """The daemon's batch journal (see the module rules)."""

    def __init__(self, spool: Spool, producer: Producer[HeldMessage], counters: Counters, *, why_off: str) -> None:
        self.spool = spool
        self.producer = producer
        self.counters = counters
        self.directory = Path(spool.directory)
        self.why_off = why_off  # "" when the producer may be idempotent
        self.journal: Journal | None = None
        self.state = read_journal(self.directory, REPLAY_COST)
        # The spool starts again at 0 when it is empty; the journal's sequences must never name new messages
        spool.continue_after(max((top for _, top in self.state.files if top < 2**62), default=-1))
        if why_off:
            log.log(NOTICE, "spool: at-least-once across crashes (%s): a crash may send messages again", why_off)
            return
        journal = Journal(
            self.directory,
            next_id=self.state.next_id,
            next_file=self.state.next_file,
            held_from=lambda: spool.held_from,
            sync_ms=spool.config.fsync_ms,
            cost=UNJOURNALED_COST,
        )
        try:
            journal.open(old=self.state.files)
        except OSError as e:  # the spool is degraded too, most likely: memory-only, at least once
            log.error("spool: the batch journal cannot be created (%s): at-least-once across crashes", e)
            return
        self.journal = journal
        journal.acked.update(self.state.acked)
        self.producer.journal_batches(PartJournal(journal, payload=False))

    async def settle(self) -> Verdict:
        """Settle the earlier runs' batches (see the module rules); returns the verdict for the replay."""
        state = self.state
        verdict = Verdict(complete=state.complete, unvouched_top=state.unvouched_top)
        settled = [run for e in state.entries if e.acknowledged for run in e.runs]
        verdict.firsts, verdict.ends = _merge(settled)
        # A message belongs to the latest batch that held it (a batch given up had its messages rerouted into another)
        owner: dict[int, JournalEntry] = {}
        for entry in state.entries:
            if not entry.acknowledged:
                for s in entry.sequences():
                    if not verdict.settled(s):
                        owner[s] = entry
        records, lost = self.spool.peek(set(owner)) if owner else ({}, set())
        owned: dict[int, list[int]] = {}  # batch id -> its messages the spool still holds
        gone: dict[int, list[int]] = {}  # batch id -> its messages lost from the spool: settled only if found
        for s in sorted(records):
            owned.setdefault(owner[s].batch_id, []).append(s)
        for s in sorted(lost):
            gone.setdefault(owner[s].batch_id, []).append(s)
        unsettled = [e for e in state.entries if e.batch_id in owned or e.batch_id in gone]
        if unsettled:
            started = time.monotonic()
            deadline = started + SETTLE_S
            with contextlib.suppress(TimeoutError):
                await self.producer.ready(SETTLE_S)
            empty = self.producer.config.empty_as_null
            settler = Settler(
                self.producer,
                self.producer.config,
                lambda e: _rebuild([records[s] for s in owned.get(e.batch_id, ())], empty),
                deadline=deadline,
            )
            out = await settler.settle(unsettled, state.acked, highest_sequences(state.entries))
            if out.unjournaled:  # the last run sent batches its journal could not record (logged by the settler)
                verdict.complete = False
            found = [s for e in out.found for s in (*owned.get(e.batch_id, ()), *gone.get(e.batch_id, ()))]
            resent = [s for e in out.resent for s in owned.get(e.batch_id, ())]
            settled += [(s, 1) for s in (*found, *resent)]
            self.counters.inc("JournalFound", len(found))
            self.counters.inc("JournalResent", len(resent))
            for e in out.fallback:
                verdict.fallback.update(owned.get(e.batch_id, ()))
            self.counters.inc("JournalFallback", len(verdict.fallback))
            if self.journal is not None:
                self.journal.acked.update(out.acked)
                for e in (*out.found, *out.resent, *out.fallback):
                    self.journal.finished(e.batch_id, e.tp, -1 if e in out.fallback else -2)
            log.log(
                NOTICE,
                "spool: settled %d batches sent before the restart in %.1f s: %d in the log already, %d resent with "
                "their producer id and sequence, %d replayed as possible duplicates",
                len(unsettled),
                time.monotonic() - started,
                len(out.found),
                len(out.resent),
                len(out.fallback),
            )
        verdict.firsts, verdict.ends = _merge(settled)
        return verdict

    def tick(self, now: float) -> None:
        """From the daemon's timer, with the spool's tick: sync the journal as the spool's ``fsync_ms`` says, delete
        the files that became settled."""
        if self.journal is not None:
            self.journal.tick(now)

    def close(self) -> None:
        """At the stop, before the spool closes: sync and close the journal."""
        if self.journal is not None:
            self.journal.close()


def why_at_least_once(config: ProducerConfig) -> str:
    """Why the producer cannot be idempotent by its settings ("" when it may be: the brokers then decide)."""
    if config.idempotence_wanted:
        return ""
    if config.enable_idempotence is False:
        return "enable_idempotence is off"
    if config.acks != -1:
        return f"acks={config.acks}: idempotence needs -1"
    if config.protocol == "v0":
        return "the Kafka 0.8 protocol (--kafka_protocol v0) has no idempotent produce"
    return (
        f"max_in_flight_requests_per_connection={config.max_in_flight_requests_per_connection} (idempotence: 5 at most)"
    )


def _rebuild(held: list[SpoolRecord], empty_as_null: bool) -> bytes | None:
    """The batch to resend: the batch's messages still in the spool, uncompressed (None: none is)."""
    if not held:
        return None
    if empty_as_null:
        return build_record_batch([(r.key or None, r.value or None, r.timestamp, ()) for r in held])
    return build_record_batch([(r.key, r.value, r.timestamp, ()) for r in held])
