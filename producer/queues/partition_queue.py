"""Per-partition queues: messages accumulating into a batch, ready batches waiting for a produce request, and what is
in flight.

Rules:
- Order within a partition is the order of ``open`` then ``ready`` (oldest first). Messages that come back from a
  failed request go back to the *front* (they are older than anything queued).
- ``busy``: a request holding this partition's messages is in flight. No second one is sent until it is answered
  (one in-flight batch per partition: per-partition order without idempotence). ``staged``: messages already taken
  for the next request; nothing newer is sent before them. The idempotent producer never sets ``busy``: up to 5 of
  the partition's batches are in flight (``in_flight`` counts their messages), and its sequenced batches waiting for
  a resend (held by :mod:`bruce.producer.idempotence.sequencer`, counted in ``waiting``) go before anything ready here.
- Ready batches are lists of messages with their byte size (Σ key + value); ``take`` splits a batch when a request's
  data limit ends inside it. A ready batch may also be held *packed* (:class:`Packed`, the daemon's compact form,
  made by :meth:`PartitionQueue.compact` when memory runs short): it counts and waits like any batch and is unpacked
  into its messages when it is taken for a request, expires or is drained (only then do its messages exist as
  objects).
- A message queued alone (:meth:`PartitionQueue.append_ready`) joins the last loose ready batch instead of making one
  of its own (batches only speed up ``take``: where they end changes nothing). The queue owns the lists in
  ``ready``: it copies what it is given back (:meth:`PartitionQueue.push_front`).
- Each ready batch carries ``since``: when its messages were queued (loop time; the oldest's, or for messages moved
  together — back from a request, rerouted — the newest's, so a message never looks older than it is).
  :meth:`PartitionQueue.append_ready` joins the last batch only if that batch was queued at or after the ``since``
  it is given (the caller's clock granule), so one batch never hides a much younger message.
  :meth:`PartitionQueue.pop_expired` takes whole batches from the front while their ``since`` is at or before a
  cutoff (the message timeout): oldest first, no timer per message.
- ``open`` is a list of messages, or ``send``'s batch of values being filled (:class:`bruce.producer.bulk.Chunk`,
  which reads as a list of messages), sealed as it is.
- Pure: no clocks (times are passed in), no asyncio.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Protocol

from ..message import M, Message


class Packed(Protocol):
    """A ready batch in compact form: its message count, and its messages back, in order (the ones packed, or equal
    objects of their type)."""

    def __len__(self) -> int: ...

    def unpack(self) -> list[Message]: ...


Pack = Callable[[str, list[M]], Packed | None]  # (topic, a ready batch of the producer's M) → its compact form, or None


class PartitionQueue:
    __slots__ = (
        "busy",
        "in_flight",
        "leader",
        "not_before",
        "open",
        "open_bytes",
        "open_since",
        "partition",
        "ready",
        "ready_count",
        "staged",
        "topic",
        "waiting",
    )

    def __init__(self, topic: str, partition: int, leader: int | None) -> None:
        self.topic = topic
        self.partition = partition
        self.leader = leader  # broker id, None while unavailable
        self.open: list[Message] = []  # accumulating (library path)
        self.open_bytes = 0
        self.open_since = 0.0  # when the first open message arrived (loop time)
        self.ready: deque[tuple[list[Message] | Packed, int, float]] = deque()  # (messages, Σ size, since)
        self.ready_count = 0
        self.busy = False
        self.in_flight = 0  # messages in the outstanding request (idempotent path: requests)
        self.waiting = 0  # idempotent path: messages of sequenced batches waiting for a resend (not in ``ready``)
        self.staged = 0  # messages taken for the broker's next request, encoded while this one is in flight
        self.not_before = 0.0  # no request before this loop time (retry backoff)

    @property
    def queued(self) -> int:
        """Messages held here and not in flight."""
        return len(self.open) + self.ready_count

    def append_open(self, m: Message, size: int) -> int:
        """Add ``m`` (``size`` bytes) to the open batch; returns the batch's bytes."""
        self.open.append(m)
        self.open_bytes = held = self.open_bytes + size
        return held

    def seal(self) -> bool:
        """Move the open batch to the ready queue; True if there was one."""
        batch = self.open
        if not batch:
            return False
        if type(batch) is not list:  # it stops growing
            batch.sealed(self.open_bytes)  # type: ignore[attr-defined]  # send's open batch of values (a bulk.Chunk)
        self.ready.append((batch, self.open_bytes, self.open_since))
        self.ready_count += len(self.open)
        self.open = []
        self.open_bytes = 0
        return True

    def add_ready(self, messages: list[Message], size: int, since: float = 0.0) -> None:
        """Append a batch that is ready as it is (the daemon's batches, rerouted messages), queued at ``since``."""
        self.ready.append((messages, size, since))
        self.ready_count += len(messages)

    def append_ready(self, m: Message, since: float = 0.0) -> bool:
        """Append one ready message queued at ``since``: to the last ready batch when that one is loose and was queued
        at or after ``since`` (no batch per message), else as a batch of its own; True when it started a new batch."""
        ready = self.ready
        self.ready_count += 1
        if ready:
            batch, size, when = ready[-1]
            if type(batch) is list and when >= since:
                batch.append(m)
                ready[-1] = (batch, size + m.size, when)
                return False
        ready.append(([m], m.size, since))
        return True

    def push_front(self, messages: list[Message], since: float = 0.0) -> None:
        """Requeue messages that came back from a request (queued at ``since``), ahead of everything else."""
        self.ready.appendleft((list(messages), sum(m.size for m in messages), since))
        self.ready_count += len(messages)

    def take(self, budget: int, first: bool) -> tuple[list[Message], int, float]:
        """Take ready messages whose Σ size fits ``budget``; with ``first`` at least one message is taken whatever its
        size (Bruce: the first message of a request is always included). Returns (messages, Σ size, since): the
        newest ``since`` of the batches taken from. A packed batch with ``travels_whole`` (``send_many``'s) is returned
        as it is when it is all that is taken (a sequence that makes its messages only if read): when it is full
        (``travels_whole`` true), or when nothing after it could join it. A full one is never joined to what was
        taken before it, nor cut to fit the budget of a request that holds something already: it waits, whole, for
        a later request."""
        taken: list[Message] = []
        total = 0
        newest = 0.0
        ready = self.ready
        while ready:
            batch, size, since = ready[0]
            if type(batch) is not list:
                whole = getattr(batch, "travels_whole", None)  # True: a full batch; False: one that may join others
                if whole and (taken or (size > budget and not first)):
                    break  # a full batch is neither joined nor cut: it goes in a later request, whole
                alone = whole or len(ready) == 1 or size + ready[1][1] > budget
                if not taken and size <= budget and whole is not None and alone:
                    ready.popleft()
                    self.ready_count -= len(batch)
                    return batch, size, since  # type: ignore[return-value]  # Packed, travels whole
                batch = batch.unpack()  # type: ignore[union-attr]  # not a list: Packed
                ready[0] = (batch, size, since)
            if total + size <= budget:
                ready.popleft()
                taken += batch
                total += size
                newest = since if since > newest else newest
                continue
            before = total
            cut = 0
            for m in batch:
                if total + m.size > budget and not (first and not taken and cut == 0):
                    break
                total += m.size
                cut += 1
            if cut:
                newest = since if since > newest else newest
            if cut == len(batch):
                ready.popleft()
                taken += batch
            elif cut:
                taken += batch[:cut]
                ready[0] = (batch[cut:], size - (total - before), since)
            break
        self.ready_count -= len(taken)
        return taken, total, newest

    def pop_expired(self, cutoff: float) -> list[Message]:
        """Remove and return the messages of the front batches queued at or before ``cutoff`` (oldest first), and the
        open batch if it is that old once nothing ready is left before it."""
        out: list[Message] = []
        ready = self.ready
        while ready and ready[0][2] <= cutoff:
            batch = ready.popleft()[0]
            out += batch if type(batch) is list else batch.unpack()  # type: ignore[union-attr]  # not a list: Packed
        self.ready_count -= len(out)
        if not ready and self.open and self.open_since <= cutoff:
            out += self.open
            self.open = []
            self.open_bytes = 0
        return out

    def newest(self) -> float:
        """The newest ``since`` of what is queued (0.0 when empty): the time messages moved elsewhere keep."""
        times = [since for _, _, since in self.ready]
        if self.open:
            times.append(self.open_since)
        return max(times, default=0.0)

    def drain(self) -> list[Message]:
        """Remove and return every queued message (not the in-flight ones), oldest first."""
        out: list[Message] = []
        for batch, _, _ in self.ready:
            out += batch if type(batch) is list else batch.unpack()  # type: ignore[union-attr]  # not a list: Packed
        out += self.open
        self.ready.clear()
        self.ready_count = 0
        self.open = []
        self.open_bytes = 0
        return out

    def compact(self, pack: Pack) -> int:
        """Pack the loose ready batches queued after the last packed one (newest first) that ``pack`` accepts;
        returns how many messages were packed."""
        packed = 0
        ready = self.ready
        for i in range(len(ready) - 1, -1, -1):
            batch, size, since = ready[i]
            if type(batch) is not list:
                break
            compact = pack(self.topic, batch)
            if compact is not None:
                ready[i] = (compact, size, since)
                packed += len(batch)
        return packed
