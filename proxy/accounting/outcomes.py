"""Settling every message's fate: the one place the daemon's accounting happens.

Rules:
- :class:`Outcomes` is where every discard goes, from wherever it arises — the inputs' (``on_discard``,
  ``on_unparsed``: the intake's :class:`~bruce.proxy.intake.IntakeDiscards`), the router's and the batcher's
  (``discard_routed``) — and the producer's :class:`~bruce.producer.OutcomeSink`. Every datagram read ends here
  exactly once: as a discard at intake (no budget held), as a discard by the router or the producer, or as a
  delivery. The messages themselves go from the inputs to the router, never through here.
- A message's budget charge is released exactly once, when its fate is known (delivered or discarded); discards are
  counted, reported and logged only through the :class:`~bruce.proxy.accounting.discards.DiscardTracker`
  (``Discard{reason}``), possible duplicates through ``record_possible_duplicate``. When message debugging is on,
  messages written in a produce request go to the ``msg_send`` debug file (the producer's ``sent`` hook) and
  acknowledged ones to ``msg_got_ack``.
- The accounting invariant (docs/architecture.md#p5-one-fate-per-message) — ``received = delivered + discarded + in
  flight`` — holds whenever the event loop is between callbacks: ``received`` is what the inputs read
  (:meth:`Outcomes.add_input`), ``in flight`` is what holds a budget reservation plus what the inputs hold on disk only
  (the spool's cursor: ``SpoolHeldOnDisk``). :meth:`Outcomes.snapshot` reads the four numbers together;
  :class:`AccountingCounters` shows the totals on ``/metrics`` and the front page (``MsgReceived``, ``MsgDelivered``,
  ``MsgDiscarded``, and ``TopicMsgDelivered{topic}`` per topic, counted per batch); in flight is Bruce's
  ``MsgCreate - MsgDestroy`` (plus ``SpoolHeldOnDisk``) beside them (and the ``MsgInFlight`` gauge).
- With the durable spool (the :class:`~bruce.proxy.spool.SpoolSlot` given at construction, once the daemon opened
  it), every fate marks the message done there (its ``spool_seq``), so the spool
  can delete the segment — except SERVER_SHUTDOWN: a spooled message the stop leaves undelivered is not discarded
  but *kept* (``kept``, ``MsgKeptInSpool``): it stays in the spool and the next start delivers it. The invariant
  is then ``received = delivered + discarded + kept + in flight``. A message held in memory only (no sequence) is
  discarded SERVER_SHUTDOWN as without the spool.
- Synchronous, for the event loop's thread; never raises for a well-formed call (the tracker and the debug log
  contain their own failures).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from bruce.producer import DiscardReason, Labels

from ..messages import HeldMessage, MessageBudget
from ..spool import Spool, SpoolSlot
from .discards import DiscardTracker
from .msg_debug import MessageDebugLog

_SHUTDOWN = DiscardReason.SERVER_SHUTDOWN


@dataclass(frozen=True, slots=True)
class Accounting:
    """One consistent reading of the daemon's accounting."""

    received: int  # datagrams and messages read by every input
    delivered: int  # acknowledged by a broker (or written, with acks=0)
    discarded: int  # discarded with a reason, at any stage
    in_flight: int  # holding a budget reservation (routing, batching, sending, awaiting an ACK) or held on disk only
    kept: int = 0  # left in the durable spool by a stop (SERVER_SHUTDOWN, not discarded): the next start delivers them

    @property
    def balanced(self) -> bool:
        """``received == delivered + discarded + kept + in_flight``."""
        return self.received == self.delivered + self.discarded + self.kept + self.in_flight


class Outcomes:
    """Every message's fate: release its budget, count it, report it. See the module rules."""

    def __init__(
        self,
        budget: MessageBudget,
        tracker: DiscardTracker,
        debug: MessageDebugLog | None = None,
        *,
        spool: SpoolSlot | None = None,
    ) -> None:
        self.budget = budget
        self.tracker = tracker
        self.debug = debug
        self.delivered_total = 0
        self.discarded_total = 0
        self.kept_total = 0  # SERVER_SHUTDOWN with the spool: left in it for the next start
        self.delivered_by_topic: dict[str, int] = {}  # topics a broker accepted: bounded by the cluster's topics
        self._inputs: list[Callable[[], int]] = []
        self._spool = spool or SpoolSlot()  # the durable spool, once opened

    @property
    def spool(self) -> Spool | None:
        """The durable spool, when it is on and open."""
        return self._spool.spool

    def add_input(self, received: Callable[[], int]) -> None:
        """Register an input by a callable giving how many datagrams or messages it has read so far."""
        self._inputs.append(received)

    # -- the inputs' discards (IntakeDiscards) -------------------------------------------------------------------------

    def on_discard(self, reason: DiscardReason, topic: str, key: bytes | None, value: bytes, client_ts: int) -> None:
        """A parsed datagram discarded at intake (NO_MEM): it never held a reservation."""
        self.discarded_total += 1
        self.tracker.record(reason, topic, key, value, client_ts)

    def on_unparsed(self, reason: DiscardReason, datagram: bytes, *, detail: int | None = None) -> None:
        """A datagram that did not parse (MALFORMED, API_KEY, VERSION, LONG_MSG)."""
        self.discarded_total += 1
        self.tracker.record_unparsed(reason, datagram, detail=detail)

    # -- the router's and the batcher's discards -----------------------------------------------------------------------

    def discard_routed(self, msg: HeldMessage, reason: DiscardReason) -> None:
        """A held message discarded before it reached the producer (router checks, shutdown)."""
        self.budget.release(msg.charge)
        if reason is _SHUTDOWN and self.spool is not None and msg.spool_seq >= 0:
            self.kept_total += 1  # it stays in the spool: not discarded
            return
        self.discarded_total += 1
        self.tracker.record(reason, msg.topic, msg.key, msg.value, msg.timestamp)
        if self.spool is not None and reason is not _SHUTDOWN and msg.spool_seq >= 0:
            self.spool.done_run(msg.spool_seq, 1)

    # -- the producer's sink (OutcomeSink) -----------------------------------------------------------------------------

    def sent(self, topic: str, partition: int, messages: Sequence[HeldMessage]) -> None:
        """Written in a produce request: the ``msg_send`` debug file, when message debugging is on."""
        debug = self.debug
        if debug is not None and debug.active:
            for m in messages:
                debug.on_send(topic, m.key, m.value, m.timestamp)

    def delivered(self, topic: str, partition: int, base_offset: int, messages: Sequence[HeldMessage]) -> None:
        charge = 0
        for m in messages:
            charge += m.charge
        self.budget.release(charge, len(messages))
        self.delivered_total += len(messages)
        by_topic = self.delivered_by_topic
        by_topic[topic] = by_topic.get(topic, 0) + len(messages)
        if self.spool is not None:
            self._done(messages)
        debug = self.debug
        if debug is not None and debug.active:
            for m in messages:
                debug.on_ack(topic, m.key, m.value, m.timestamp)

    def discarded(self, topic: str, messages: Sequence[HeldMessage], reason: DiscardReason) -> None:
        if reason is _SHUTDOWN and self.spool is not None:
            kept = [m for m in messages if m.spool_seq >= 0]
            if kept:
                self.budget.release(sum(m.charge for m in kept), len(kept))
                self.kept_total += len(kept)
                messages = [m for m in messages if m.spool_seq < 0]
            if not messages:
                return
        record = self.tracker.record
        charge = 0
        for m in messages:
            charge += m.charge
            record(reason, topic, m.key, m.value, m.timestamp)
        self.budget.release(charge, len(messages))
        self.discarded_total += len(messages)
        if self.spool is not None and reason is not _SHUTDOWN:
            self._done(messages)

    def kept(self, count: int) -> None:
        """``count`` spooled messages that held no reservation (held on disk only) stay in the spool at a stop."""
        self.kept_total += count

    def _done(self, messages: Sequence[HeldMessage]) -> None:
        """Mark the spooled ones among ``messages`` done in the spool: a batch of consecutive sequences (one topic's
        bursts) as one run, whole bitmap bytes at once; any other batch one sequence at a time."""
        sequences = [m.spool_seq for m in messages]
        first = sequences[0] if sequences else -1
        if (
            first >= 0
            and sequences[-1] - first == len(sequences) - 1
            and sequences == list(range(first, first + len(sequences)))
        ):
            self.spool.done_run(first, len(sequences))  # type: ignore[union-attr]  # called only with a spool
            return
        sequences = [s for s in sequences if s >= 0]
        if sequences:
            self.spool.done_many(sequences)  # type: ignore[union-attr]  # called only with a spool

    def possible_duplicates(self, topic: str, messages: Sequence[HeldMessage]) -> None:
        record = self.tracker.record_possible_duplicate
        for m in messages:
            record(topic, m.key, m.value, m.timestamp)

    # -- reading -------------------------------------------------------------------------------------------------------

    @property
    def received_total(self) -> int:
        return sum(received() for received in self._inputs)

    @property
    def in_flight(self) -> int:
        """Messages held in memory (a budget reservation each) or, with the spool, on disk only."""
        spool = self.spool
        return self.budget.held + (spool.cursor.held if spool is not None else 0)

    def snapshot(self) -> Accounting:
        """The accounting numbers, read together."""
        return Accounting(
            self.received_total, self.delivered_total, self.discarded_total, self.in_flight, self.kept_total
        )


class AccountingCounters:
    """The accounting totals as a counter set for the status pages (location ``bruce.proxy.accounting``)."""

    __slots__ = ("_outcomes",)

    def __init__(self, outcomes: Outcomes) -> None:
        self._outcomes = outcomes

    def items(self) -> Iterator[tuple[str, Labels, int]]:
        a = self._outcomes.snapshot()
        yield "MsgDelivered", (), a.delivered
        yield "MsgDiscarded", (), a.discarded
        yield "MsgReceived", (), a.received
        if self._outcomes.spool is not None:
            yield "MsgKeptInSpool", (), a.kept
        for topic, n in sorted(self._outcomes.delivered_by_topic.items()):
            yield "TopicMsgDelivered", (("topic", topic),), n
