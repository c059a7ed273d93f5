"""The producer's ledger: the messages it holds until each has a fate, and the one place where a fate is given.

Rules:
- ``accepted = delivered + discarded + held_messages`` at every moment; ``held_bytes`` is the held messages' key and
  value bytes. Only this object changes these counts.
- A message is admitted once (:meth:`Ledger.admit`; :meth:`Ledger.admit_one` on ``send``'s path) and gets one fate:
  :meth:`Ledger.deliver` (acknowledged, or written with acks=0) or :meth:`Ledger.discard` (with a
  :class:`DiscardReason`, counted as ``MsgDiscard``). Both resolve the messages' handles and tell the sink; once
  nothing is held, ``on_drained`` runs (what ``flush`` waits for).
- A message that may reach Kafka twice (:meth:`Ledger.possible_duplicates`) is flagged, counted and reported here
  too; it stays held.
- Synchronous, in the event loop's thread; it never awaits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter

from ..counters import Counters
from ..message import Message, OutcomeSink, resolve_delivered, resolve_failed
from ..reasons import DiscardReason
from .partition_queue import PartitionQueue

_size = attrgetter("size")


class Ledger:
    """Held, accepted, delivered and discarded messages of one producer (see the module's rules)."""

    def __init__(
        self, counters: Counters, sink: OutcomeSink | None, on_drained: Callable[[], None] = lambda: None
    ) -> None:
        self.counters = counters
        self.sink = sink
        self.on_drained = on_drained  # nothing is held any more
        self.accepted = 0
        self.delivered = 0
        self.discarded = 0
        self.held_messages = 0
        self.held_bytes = 0

    def admit(self, messages: Sequence[Message]) -> None:
        """Count ``messages`` as accepted and held; every one must later reach a fate."""
        n = len(messages)
        self.accepted += n
        self.held_messages += n
        self.held_bytes += messages[0].size if n == 1 else sum(map(_size, messages))

    def admit_one(self, size: int) -> None:
        """:meth:`admit` for one message of ``size`` bytes (``send``'s path: no list)."""
        self.accepted += 1
        self.held_messages += 1
        self.held_bytes += size

    def admit_many(self, count: int, size: int) -> None:
        """:meth:`admit` for ``count`` messages of ``size`` bytes in all (``send_many``'s path: not made yet)."""
        self.accepted += count
        self.held_messages += count
        self.held_bytes += size

    def deliver(self, pq: PartitionQueue, messages: list[Message], base_offset: int, size: int) -> None:
        """``messages`` (``size`` bytes) are in ``pq``'s partition from ``base_offset`` on (-1: acks=0)."""
        resolve_delivered(messages, pq.partition, base_offset)
        self.held_messages -= len(messages)
        self.held_bytes -= size
        self.delivered += len(messages)
        if self.sink is not None:
            self.sink.delivered(pq.topic, pq.partition, base_offset, messages)
        if not self.held_messages:
            self.on_drained()

    def discard(self, topic: str, messages: Sequence[Message], reason: DiscardReason, detail: str = "") -> None:
        """Give up on ``messages`` with ``reason`` (counted, resolved, reported)."""
        if not messages:
            return
        resolve_failed(messages, reason, topic, detail)
        self.held_messages -= len(messages)
        self.held_bytes -= sum(map(_size, messages))
        self.discarded += len(messages)
        self.counters.inc("MsgDiscard", len(messages), (("reason", str(reason)), ("topic", topic)))
        if self.sink is not None:
            self.sink.discarded(topic, messages, reason)
        if not self.held_messages:
            self.on_drained()

    def possible_duplicates(self, topic: str, messages: Sequence[Message]) -> None:
        """``messages`` may reach the log twice (their outcome is unknown and they are sent again, or given up)."""
        for m in messages:
            m.possible_duplicate = True
        self.counters.inc("PossibleDuplicateMsg", len(messages), (("topic", topic),))
        if self.sink is not None:
            self.sink.possible_duplicates(topic, messages)
