"""Bruce's batching (docs/bruce-compatibility.md#batching): messages and a clock in, complete batches out to the
producer. Pure.

Rules:
- Each topic is batched one of three ways, as ``Config.batching_for`` resolves it: **per topic** (the topic's own
  batch, with its named config's limits), **combined** (one batch shared by every combined topic, with the
  ``combined_topics`` limits; when it completes, each topic's part goes to the producer separately, in the order the
  topics first appear in it), or **disabled** (each message goes to the producer alone, at once).
- A message counts max(1, key + value) bytes. A batch completes when it holds ``messages`` messages or ``bytes``
  bytes, or when now ≥ its oldest message's receive time + ``time``; a disabled limit (``None``) never completes one.
- A message that would take the batch *over* the byte limit ships the batch first and starts the next one (or ships
  alone when it would complete a batch by itself at once: ``messages`` = 1, or already past its time). A message of
  the byte limit or more ships alone, after the current batch. This is Bruce's batcher core, decision for decision.
- Age is measured from the daemon's receive time (``HeldMessage.received``, monotonic seconds), never from the client's
  timestamp: a stale or future client clock changes nothing. (Bruce used the client timestamp.)
- Complete batches go to ``submit(topic, messages)`` (the producer's ``submit``) at once. Batches whose time is up
  ship in deadline order (ties: the order they started). :meth:`Batcher.add` first handles its own topic's batch, then
  ships every batch whose time is up, so a late timer never holds one back. The daemon's timer calls
  :meth:`Batcher.expire` at :meth:`Batcher.next_deadline`, and sleeps no longer than the shortest batch time, so a
  batch opened while it sleeps ships on time too. :meth:`Batcher.flush_all` ships everything, limits ignored
  (shutdown).
- Bruce batches AnyPartition messages per topic before choosing a broker and PartitionKey messages per topic and
  broker after; here both kinds share the topic's batch (the producer then routes each message by its own key).
- Bounded: the messages (the memory budget bounds them), one batch per topic seen (the router passes only topics in
  the cluster's metadata; beyond ``max_topics`` the idle ones are forgotten), and a deadline heap that is rebuilt
  whenever stale entries outnumber live ones.
"""

from __future__ import annotations

import heapq
import itertools
import sys
from collections.abc import Callable

from ..config import BatchingPolicy, BatchLimits, TopicAction
from ..messages import HeldMessage

Submit = Callable[[str, list[HeldMessage]], None]
BatchingLookup = Callable[[str], BatchingPolicy]

DEFAULT_MAX_TOPICS = 100_000
_NEVER = float("inf")
_UNLIMITED = sys.maxsize


class _Batch:
    """One open batch: a topic's own (``topic`` set) or the combined one (``topic`` None)."""

    __slots__ = ("bytes", "max_bytes", "max_messages", "messages", "oldest", "seq", "time", "topic")

    def __init__(self, topic: str | None, limits: BatchLimits) -> None:
        self.topic = topic
        self.messages: list[HeldMessage] = []
        self.bytes = 0
        self.oldest = _NEVER  # the oldest receive time in the batch
        self.seq = 0  # the live heap entry's sequence number; 0: none
        self.max_messages = limits.messages or _UNLIMITED
        self.max_bytes = limits.bytes or _UNLIMITED
        self.time = _NEVER if limits.time_ms is None else limits.time_ms / 1000


class Batcher:
    """``Batcher(config.batching_for, producer.submit)``; then ``add(msg, now)`` per routed message."""

    __slots__ = (
        "_by_topic",
        "_combined",
        "_heap",
        "_live",
        "_lookup",
        "_max_topics",
        "_seq",
        "_submit",
    )

    def __init__(
        self,
        batching_for: BatchingLookup,
        submit: Submit,
        *,
        max_topics: int = DEFAULT_MAX_TOPICS,
    ) -> None:
        self._lookup = batching_for
        self._submit = submit
        self._max_topics = max_topics
        self._by_topic: dict[str, _Batch] = {}  # topic → its batch, the combined batch, or _DIRECT
        self._combined: _Batch | None = None
        self._heap: list[tuple[float, int, _Batch]] = []  # (deadline, seq, batch); stale when batch.seq != seq
        self._live = 0  # heap entries that are not stale
        self._seq = itertools.count(1)

    # ---------------------------------------------------------------- the hot path

    def add(self, msg: HeldMessage, now: float) -> None:
        """Batch one routed message at monotonic time ``now``; ships whatever completes (this topic's batch first,
        then every batch whose time is up)."""
        topic = msg.topic
        batch = self._by_topic.get(topic)
        if batch is None:
            batch = self._batch_for(topic)
        if batch is _DIRECT:
            self._submit(topic, [msg])
        else:
            total = batch.bytes + (msg.size or 1)
            if total >= batch.max_bytes:
                self._add_at_byte_limit(batch, msg, total, now)
            else:
                messages = batch.messages
                messages.append(msg)
                batch.bytes = total
                received = msg.received
                if received < batch.oldest:
                    self._set_oldest(batch, received)
                if len(messages) >= batch.max_messages or now >= batch.oldest + batch.time:
                    self._ship(batch)
        heap = self._heap
        if heap and heap[0][0] <= now:
            self.expire(now)

    def try_add_many(self, messages: list[HeldMessage], nbytes: int, now: float) -> bool:
        """Put ``messages`` (one topic, all received at ``now``; ``nbytes``: the sum of their ``size or 1``) in their
        batch in one step when none of them completes it, and return ``True``: the caller then calls
        :meth:`expire` ``(now)``, and the batches are those :meth:`add` of each gives, shipped in the same order (the
        router's bursts; tests/proxy/routing/test_routing_batcher.py). Otherwise ``False``, with nothing added: the
        caller adds them one by one."""
        topic = messages[0].topic
        batch = self._by_topic.get(topic)
        if batch is None:
            batch = self._batch_for(topic)
        held = batch.messages
        if (
            batch is _DIRECT
            or batch.bytes + nbytes >= batch.max_bytes
            or len(held) + len(messages) >= batch.max_messages
            or now >= min(batch.oldest, now) + batch.time
        ):
            return False
        held += messages
        batch.bytes += nbytes
        if now < batch.oldest:
            self._set_oldest(batch, now)
        return True

    def _add_at_byte_limit(self, batch: _Batch, msg: HeldMessage, total: int, now: float) -> None:
        size = msg.size or 1
        if size >= batch.max_bytes:  # too big for any batch: after the current batch, alone
            if batch.messages:
                self._ship(batch)
            self._submit(msg.topic, [msg])
            return
        if total > batch.max_bytes:  # would exceed: the batch ships and the message starts the next one
            self._ship(batch)
            received = msg.received
            if batch.max_messages <= 1 or now >= received + batch.time:
                self._submit(msg.topic, [msg])
                return
            batch.messages.append(msg)
            batch.bytes = size
            self._set_oldest(batch, received)
            return
        batch.messages.append(msg)  # exactly at the limit: complete
        self._ship(batch)

    def _set_oldest(self, batch: _Batch, received: float) -> None:
        batch.oldest = received
        if batch.time == _NEVER:
            return
        if not batch.seq:
            self._live += 1
        batch.seq = seq = next(self._seq)
        heapq.heappush(self._heap, (received + batch.time, seq, batch))

    def _ship(self, batch: _Batch) -> None:
        messages = batch.messages
        batch.messages = []
        batch.bytes = 0
        batch.oldest = _NEVER
        if batch.seq:
            batch.seq = 0
            self._live -= 1
            if len(self._heap) > 2 * self._live + 64:
                self._rebuild_heap()
        if batch.topic is not None:
            self._submit(batch.topic, messages)
            return
        parts: dict[str, list[HeldMessage]] = {}
        for m in messages:
            part = parts.get(m.topic)
            if part is None:
                parts[m.topic] = [m]
            else:
                part.append(m)
        for topic, part in parts.items():
            self._submit(topic, part)

    # ---------------------------------------------------------------- time

    def next_deadline(self) -> float | None:
        """When the next batch's time is up (monotonic seconds), or None when no batch has a time limit pending."""
        heap = self._heap
        while heap and heap[0][2].seq != heap[0][1]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def expire(self, now: float) -> None:
        """Ship every batch whose time is up at ``now``, in deadline order."""
        heap = self._heap
        while heap and heap[0][0] <= now:
            _, seq, batch = heapq.heappop(heap)
            if batch.seq == seq:
                self._ship(batch)

    def flush_all(self) -> None:
        """Ship every open batch whatever its limits (shutdown), oldest first."""
        for batch in sorted(self._open_batches(), key=lambda b: b.oldest):
            self._ship(batch)
        self._heap.clear()
        self._live = 0

    # ---------------------------------------------------------------- inspection

    def batching_counts(self) -> dict[str, int]:
        """Messages waiting in batches, per topic (Bruce's /queues ``batch`` column)."""
        counts: dict[str, int] = {}
        for batch in self._open_batches():
            for m in batch.messages:
                counts[m.topic] = counts.get(m.topic, 0) + 1
        return counts

    @property
    def held(self) -> int:
        """Messages waiting in batches (all topics)."""
        return sum(len(b.messages) for b in self._open_batches())

    # ---------------------------------------------------------------- internals

    def _batch_for(self, topic: str) -> _Batch:
        if len(self._by_topic) >= self._max_topics:
            self._forget_idle()
        policy = self._lookup(topic)
        if policy.action is TopicAction.PER_TOPIC and policy.limits is not None:
            batch = _Batch(topic, policy.limits)
        elif policy.action is TopicAction.COMBINED_TOPICS and policy.limits is not None:
            if self._combined is None:
                self._combined = _Batch(None, policy.limits)
            batch = self._combined
        else:
            batch = _DIRECT
        self._by_topic[topic] = batch
        return batch

    def _open_batches(self) -> list[_Batch]:
        """Every batch holding messages: the topics' own, then the combined one."""
        batches = [b for b in self._by_topic.values() if b.messages and b.topic is not None]
        if self._combined is not None and self._combined.messages:
            batches.append(self._combined)
        return batches

    def _forget_idle(self) -> None:
        """Drop the topics whose batch is empty (their policy is looked up again when they come back)."""
        self._by_topic = {t: b for t, b in self._by_topic.items() if b.messages and b.topic is not None}

    def _rebuild_heap(self) -> None:
        self._heap = [(b.oldest + b.time, b.seq, b) for b in self._open_batches() if b.seq]
        heapq.heapify(self._heap)
        self._live = len(self._heap)


_DIRECT = _Batch("", BatchLimits(time_ms=None, messages=1, bytes=None))  # marks unbatched topics; holds nothing
