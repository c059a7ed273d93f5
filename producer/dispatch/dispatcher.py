"""The producer's partition queues: routing messages onto them, which broker has what ready, rerouting on a new
cluster view, message timeouts.

Rules:
- Every message the producer accepts is *held* until it has a fate; the counts and the fates are the
  :class:`~bruce.producer.queues.ledger.Ledger`'s (``ledger``), which every outcome ends in.
- What the dispatcher asks of the producer around it (wake a broker's sender, pause, fetch metadata, auto-create a
  topic, drained, progress) is one :class:`DispatchHooks` object, given at construction (:class:`NoHooks` by
  default); so are its sequencer's transaction and duplicate check.
- A request's start and outcomes (ACKs, error ACKs, a failed connection's messages back to the front of their queues)
  are :class:`bruce.producer.dispatch.responses.RequestOutcomes`'s; they end in the ledger or in
  :meth:`Dispatcher.give_back`.
- A pause is requested here and carried out by :mod:`bruce.producer.dispatch.pause`; while ``paused`` no request starts.
- Rerouting after a new view: a partition whose leader changed keeps its messages (they follow the new leader); the
  messages of a partition that became unavailable are routed again (AnyPartition: the next partition of the cycle,
  PartitionKey: the next available partition, explicit partition: discarded NO_AVAILABLE_PARTITIONS); a topic that
  disappeared discards its messages as BAD_TOPIC, and its queues are dropped once nothing of it is in flight (so
  topics that come and go leave nothing behind).
- A topic not in the view is held until a metadata fetch *begun after* it was first wanted answers (fetches are
  numbered as they begin, so equal clock readings cannot confuse the order): present ⇒ routed, absent ⇒ BAD_TOPIC (or
  auto-creation). The answer of a fetch begun earlier asks for another fetch. A name Kafka refuses is not held: its
  messages are discarded at once as BAD_TOPIC_NAME (:mod:`~bruce.wire.topic_name`).
- Message timeout (``message_timeout_ms``, 0 = none): :meth:`Dispatcher.expire`, called from the producer's
  periodic tick, discards as MESSAGE_TIMEOUT the queued and unknown-topic messages queued at or before a cutoff
  (as AUTHENTICATION_FAILED, with the refusal, those whose leader refused authentication: :attr:`Dispatcher.refused`),
  oldest first (whole batches from the front of each queue: no timer per message). Messages in a request are the
  request's until it is answered or fails (bounded by ``request_timeout_ms``), then expire like the others. Queue
  times come from :attr:`Dispatcher.stamp` (the tick's clock reading: no clock read per message).
- With a ``pack`` function (the daemon's), a batch that must wait for a broker (queued while paused, for a
  partition without a leader, or for a leader whose last connect failed: :attr:`Dispatcher.unreachable`, kept by the
  senders) is stored packed at once (:meth:`PartitionQueue.compact`); :meth:`compact` packs the rest on demand (the
  daemon's budget, when full). Batches that flow are never packed: packing costs CPU.
- Idempotence (on by default where every broker takes it, :mod:`bruce.producer.idempotence.sequencer`, ``seq``): a
  request's parts carry sequenced batches; their outcomes are the sequencer's, and a partition takes up to 5 batches in
  flight.
- Synchronous and single-threaded (the event loop's thread); it never awaits. Wake-ups go through callbacks.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Protocol

from bruce.wire import topic_name_problem

from ..config import ProducerConfig
from ..counters import Counters
from ..idempotence import OnDuplicate, Sequencer, Transaction
from ..message import TIMESTAMP_MAX, TIMESTAMP_MIN, Message, OutcomeSink
from ..metadata import AnyPartitionCycle, ClusterView, Topic, explicit_partition, partition_for_key
from ..queues import Ledger, Pack, PartitionQueue
from ..reasons import DiscardReason


class DispatchHooks(Protocol):
    """What the dispatcher asks of the producer around it, given at construction."""

    def wake_broker(self, broker: int) -> None:
        """The broker has ready partitions: its sender runs."""

    def pause(self, cause: str, answered: bool) -> None:
        """Pause (``answered``: the broker said so)."""

    def unknown_topic(self, topic: str) -> None:
        """A metadata fetch is wanted: ``topic`` is not in the view."""

    def autocreate(self, topic: str) -> None:
        """``topic_autocreate``: ask the brokers to create ``topic``."""

    def drained(self) -> None:
        """Nothing is held any more."""

    def progress(self, answered: bool) -> None:
        """A request was answered (True) or failed."""

    def fetches_begun(self) -> int:
        """Metadata fetches begun so far (the last one's number)."""


class NoHooks:
    """:class:`DispatchHooks` that do nothing: a dispatcher on its own (tests)."""

    def wake_broker(self, broker: int) -> None:
        pass

    def pause(self, cause: str, answered: bool) -> None:
        pass

    def unknown_topic(self, topic: str) -> None:
        pass

    def autocreate(self, topic: str) -> None:
        pass

    def drained(self) -> None:
        pass

    def progress(self, answered: bool) -> None:
        pass

    def fetches_begun(self) -> int:
        return 0


class Dispatcher:
    """Partition queues and the routing of messages onto them, for the senders (see the module's rules)."""

    def __init__(
        self,
        config: ProducerConfig,
        counters: Counters,
        sink: OutcomeSink | None,
        *,
        hooks: DispatchHooks | None = None,
        cycle: AnyPartitionCycle | None = None,
        clock: Callable[[], float] = lambda: 0.0,
        pack: Pack | None = None,
        txn: Transaction | None = None,
        on_duplicate: OnDuplicate | None = None,
    ) -> None:
        """``txn`` and ``on_duplicate`` are the sequencer's (idempotence wanted): a transactional producer's
        transaction, and where DUPLICATE_SEQUENCE_NUMBER answers are checked."""
        self.config = config
        self.counters = counters
        self.hooks = hooks = hooks or NoHooks()
        self.ledger = Ledger(counters, sink, hooks.drained)
        self.cycle = cycle or AnyPartitionCycle()
        self.clock = clock  # loop time in seconds
        self.view: ClusterView | None = None
        self.queues: dict[str, dict[int, PartitionQueue]] = {}
        self.sticky: dict[str, PartitionQueue] = {}  # keyless library messages: the partition being filled
        self.ready_by_broker: dict[int, dict[PartitionQueue, None]] = {}
        self.compactable: set[PartitionQueue] = set()  # queues given ready batches since the last compact()
        self.unreachable: set[int] = set()  # brokers whose last connect failed (their senders keep it)
        self.refused: dict[int, str] = {}  # brokers whose last connect was refused authentication → why (senders')
        self.pack = pack  # the daemon's compact form for batches that must wait (see route)
        self.seq: Sequencer | None = None  # None: at-least-once
        if config.idempotence_wanted:
            self.seq = Sequencer(self, self.ledger, txn=txn, on_duplicate=on_duplicate)
        # topic → (messages, fetches begun when the topic became wanted: only a later fetch can answer for it, and
        # [since, count] runs of the messages' queue times, oldest first)
        self.unknown: dict[str, tuple[list[Message], int, list[list[float | int]]]] = {}
        self.stamp = 0.0  # queue time given to messages (loop time of the last expiry tick; 0.0 without a timeout)
        self.paused = False

    # ---------------------------------------------------------------- intake

    def discard_bad_timestamps(self, topic: str, messages: list[Message]) -> list[Message]:
        """Discard the admitted messages whose timestamp is out of range (MALFORMED); return the others."""
        good: list[Message] = []
        bad: list[Message] = []
        for m in messages:
            (good if TIMESTAMP_MIN <= m.timestamp <= TIMESTAMP_MAX else bad).append(m)
        self.ledger.discard(topic, bad, DiscardReason.MALFORMED, "timestamp outside ±2**62 ms")
        return good

    def queue(self, topic: str, partition: int) -> PartitionQueue:
        queues = self.queues.get(topic)
        if queues is None:
            queues = self.queues[topic] = {}
        pq = queues.get(partition)
        if pq is None:
            assert self.view is not None
            pq = queues[partition] = PartitionQueue(topic, partition, self.view.leader(topic, partition))
        return pq

    def keyed_queue(self, topic: str, m: Message) -> PartitionQueue | None:
        """The queue a keyed or pinned message of ``send`` accumulates in. None when it is not queued: held until the
        topic is known, or discarded (NO_AVAILABLE_PARTITIONS)."""
        info = self.view.topics.get(topic) if self.view is not None else None
        if info is None:
            self._hold_unknown(topic, [m], self.stamp)
            return None
        p = _keyed_partition(m, info)
        if p is None:
            self.ledger.discard(topic, [m], DiscardReason.NO_AVAILABLE_PARTITIONS, _no_partition_detail(info, m))
            return None
        return self.queue(topic, p)

    def next_sticky(self, topic: str) -> PartitionQueue | None:
        """The partition that keyless library messages of ``topic`` fill next (None: topic unknown or unavailable)."""
        info = self.view.topic(topic) if self.view is not None else None
        if info is None:
            return None
        partition = self.cycle.next(info)
        if partition is None:
            return None
        pq = self.sticky[topic] = self.queue(topic, partition)
        return pq

    def route(
        self, topic: str, messages: list[Message], *, hold_unknown: bool = True, since: float | None = None
    ) -> None:
        """Put ready messages on their partitions' queues (a batch from the daemon, or messages being rerouted),
        queued at ``since`` (default: now, :attr:`stamp`)."""
        if since is None:
            since = self.stamp
        view = self.view
        info = view.topics.get(topic) if view is not None else None
        if info is None:
            if hold_unknown:
                self._hold_unknown(topic, messages, since)
            else:
                self.ledger.discard(topic, messages, DiscardReason.BAD_TOPIC, "topic no longer in metadata")
            return
        if len(messages) == 1:
            self._route_one(topic, info, messages[0], since)
            return
        by_partition: dict[int, list[Message]] = {}
        keyless: list[Message] = []
        lost: list[Message] = []
        for m in messages:
            if m.partition_key is None:
                keyless.append(m)
                continue
            p = _keyed_partition(m, info)
            if p is None:
                lost.append(m)
            else:
                by_partition.setdefault(p, []).append(m)
        if keyless:
            p = self.cycle.next(info)
            if p is None:
                lost += keyless
            else:
                by_partition.setdefault(p, []).extend(keyless)
        for p, ms in by_partition.items():
            pq = self.queue(topic, p)
            pq.add_ready(ms, sum(map(_size, ms)), since)
            if self.pack is not None and (self.paused or pq.leader is None or pq.leader in self.unreachable):
                pq.compact(self.pack)  # it waits for a broker: held compactly meanwhile
            self.compactable.add(pq)
            self.mark_ready(pq)
        if lost:
            self.ledger.discard(topic, lost, DiscardReason.NO_AVAILABLE_PARTITIONS, _no_partition_detail(info))

    def _route_one(self, topic: str, info: Topic, m: Message, since: float) -> None:
        """:meth:`route` for a lone message (a topic not batched by the daemon): the same choice, nothing allocated,
        no wake-up when its partition is already marked ready (its broker's sender will look at it anyway)."""
        p = self.cycle.next(info) if m.partition_key is None else _keyed_partition(m, info)
        if p is None:
            self.ledger.discard(topic, [m], DiscardReason.NO_AVAILABLE_PARTITIONS, _no_partition_detail(info, m))
            return
        queues = self.queues.get(topic)
        pq = queues.get(p) if queues is not None else None
        if pq is None:
            pq = self.queue(topic, p)
        if pq.append_ready(m, since) and self.pack is not None:
            self.compactable.add(pq)
        ready = self.ready_by_broker.get(pq.leader)  # type: ignore[arg-type]  # None: no entry, as wanted
        if ready is None or pq not in ready:
            self.mark_ready(pq)

    def _hold_unknown(self, topic: str, messages: list[Message], since: float) -> None:
        held = self.unknown.get(topic)
        if held is None:
            if (problem := topic_name_problem(topic)) is not None:  # no broker could have it: say so at once
                why = f"not a valid Kafka topic name: {problem}"
                self.ledger.discard(topic, messages, DiscardReason.BAD_TOPIC_NAME, why)
                return
            self.unknown[topic] = (list(messages), self.hooks.fetches_begun(), [[since, len(messages)]])
            self.hooks.unknown_topic(topic)
        else:
            held[0].extend(messages)
            ages = held[2]
            if ages and ages[-1][0] >= since:
                ages[-1][1] += len(messages)
            else:
                ages.append([since, len(messages)])

    def seal(self, pq: PartitionQueue) -> None:
        if pq.seal():
            if self.sticky.get(pq.topic) is pq:
                del self.sticky[pq.topic]
            self.mark_ready(pq)

    def mark_ready(self, pq: PartitionQueue) -> None:
        leader = pq.leader
        if leader is None:
            return
        ready = self.ready_by_broker.get(leader)
        if ready is None:
            ready = self.ready_by_broker[leader] = {}
        if pq not in ready:
            ready[pq] = None
        self.hooks.wake_broker(leader)

    # ---------------------------------------------------------------- request assembly support

    def candidates(self, broker: int, now: float) -> tuple[list[PartitionQueue], float | None]:
        """Queues this broker can send from now (round-robin order), and the earliest backoff end among the others."""
        ready = self.ready_by_broker.get(broker)
        if not ready:
            return [], None
        out: list[PartitionQueue] = []
        later: float | None = None
        seq = self.seq
        for pq in list(ready):
            if not (pq.ready_count or pq.waiting) or pq.leader != broker:
                del ready[pq]
            elif pq.busy or pq.staged or (seq is not None and not seq.sendable(pq)):
                continue
            elif pq.not_before > now:
                later = pq.not_before if later is None else min(later, pq.not_before)
            else:
                out.append(pq)
        return out, later

    # ---------------------------------------------------------------- views

    def apply_view(self, view: ClusterView, fetch: int) -> None:
        """Install a new cluster view, the answer to metadata fetch number ``fetch`` (see :attr:`fetches_begun`), and
        reroute. A topic held as unknown is settled (routed, created or BAD_TOPIC) only by a fetch begun after it
        became wanted; an earlier fetch's answer asks for another fetch instead."""
        self.view = view
        self.sticky.clear()
        for topic, queues in list(self.queues.items()):
            info = view.topic(topic)
            for pq in list(queues.values()):  # rerouting may add queues
                leader = info.leaders.get(pq.partition) if info is not None else None
                if leader == pq.leader:
                    continue
                pq.leader = leader
                seq = self.seq
                if seq is not None and seq.idem is not None:
                    seq.idem.leader_changed((pq.topic, pq.partition))  # its sequences follow it to the new leader
                if leader is None:
                    since = pq.newest()
                    lost = seq.give_up_waiting(pq) if seq is not None else []
                    self.route(topic, lost + pq.drain(), hold_unknown=False, since=since)
                elif pq.ready_count or pq.waiting:
                    self.mark_ready(pq)
            if info is None and not any(pq.in_flight or pq.staged for pq in queues.values()):
                del self.queues[topic]  # gone from the cluster, nothing of it in flight: its queues go too
        if self.seq is not None:
            self.seq.settle()  # batches given up (a partition without a leader) need an epoch bump
        for topic, (messages, wanted_after, ages) in list(self.unknown.items()):
            if view.topic(topic) is not None:
                del self.unknown[topic]
                self.route(topic, messages, since=max(since for since, _ in ages))
            elif fetch <= wanted_after:  # begun before the topic was wanted: it cannot tell
                self.hooks.unknown_topic(topic)
            elif self.config.topic_autocreate:
                self.hooks.autocreate(topic)
            else:
                del self.unknown[topic]
                self.ledger.discard(topic, messages, DiscardReason.BAD_TOPIC, "topic not in metadata")

    def fail_unknown(self, topic: str, reason: DiscardReason, detail: str) -> None:
        held = self.unknown.pop(topic, None)
        if held is not None:
            self.ledger.discard(topic, held[0], reason, detail)

    def request_pause(self, cause: str, *, answered: bool = False) -> None:
        """Stop dispatching and have the pause run. ``answered``: the broker answered (an error ACK, a response that
        makes no sense): Bruce's pause backoff applies; else (no answer: lost connection, timeout)
        the broker is probed (see :mod:`bruce.producer.dispatch.pause`)."""
        if not self.paused:
            self.paused = True
            self.counters.inc("PauseRequested")
        self.hooks.pause(cause, answered)

    def resume(self) -> None:
        """End of a pause: dispatch again from every queue that has ready messages."""
        self.paused = False
        for pq in self.all_queues():
            if pq.ready_count or pq.waiting:
                self.mark_ready(pq)

    def give_back(self, pq: PartitionQueue, messages: list[Message], since: float) -> None:
        """Messages back from a request (queued at ``since``): to the front of their queue, or routed again if the
        partition is gone."""
        if not messages:
            return
        pq.push_front(messages, since)
        if pq.leader is None:
            since = pq.newest()
            self.route(pq.topic, pq.drain(), hold_unknown=False, since=since)
        else:
            self.mark_ready(pq)

    def expire(self, cutoff: float, detail: str) -> None:
        """Discard as MESSAGE_TIMEOUT every queued or unknown-topic message queued at or before ``cutoff``; as
        AUTHENTICATION_FAILED (with the refusal) when the partition's leader refused authentication."""
        if self.seq is not None:
            self.seq.expire(cutoff, detail)
        refused = self.refused
        for queues in list(self.queues.values()):
            for pq in list(queues.values()):
                if pq.ready or pq.open:
                    why = refused.get(pq.leader) if refused and pq.leader is not None else None
                    reason = DiscardReason.AUTHENTICATION_FAILED if why else DiscardReason.MESSAGE_TIMEOUT
                    self.ledger.discard(pq.topic, pq.pop_expired(cutoff), reason, why or detail)
        for topic, (messages, _, ages) in list(self.unknown.items()):
            n = 0
            while ages and ages[0][0] <= cutoff:
                n += ages.pop(0)[1]  # type: ignore[assignment]  # [since, count]: the count
            if not n:
                continue
            if not ages:
                del self.unknown[topic]
            expired = messages[:n]
            del messages[:n]
            self.ledger.discard(topic, expired, DiscardReason.MESSAGE_TIMEOUT, detail)

    # ---------------------------------------------------------------- inspection and shutdown

    def topic_info(self, topic: str) -> Topic | None:
        return self.view.topic(topic) if self.view is not None else None

    def all_queues(self) -> list[PartitionQueue]:
        return [pq for queues in self.queues.values() for pq in queues.values()]

    def compact(self) -> int:
        """Pack the loose ready batches queued since the last call that :attr:`pack` accepts (the daemon, when memory
        runs short); returns how many messages were packed. Costs nothing when no batch was queued since."""
        queues, self.compactable = self.compactable, set()
        pack = self.pack
        if pack is None:
            return 0
        packed = 0
        for pq in queues:
            packed += pq.compact(pack)
            if pq.ready and type(pq.ready[-1][0]) is list:
                self.compactable.add(pq)  # too few to pack yet (a batch that grows): look again next time
        return packed

    def seal_all(self) -> None:
        for pq in self.all_queues():
            self.seal(pq)

    def discard_everything(self, reason: DiscardReason, detail: str) -> None:
        """Shutdown: every queued and unknown-topic message is discarded with ``reason`` (in-flight ones are the
        senders' to give back first)."""
        if self.seq is not None:
            self.seq.discard_waiting(reason, detail)
        for pq in self.all_queues():
            self.ledger.discard(pq.topic, pq.drain(), reason, detail)
        for topic in list(self.unknown):
            self.fail_unknown(topic, reason, detail)


_size = attrgetter("size")


def _keyed_partition(m: Message, info: Topic) -> int | None:
    """A keyed message's partition: its pinned partition if available, else PartitionKey's choice."""
    key = m.partition_key
    if m.pinned:
        return explicit_partition(key, info)  # type: ignore[arg-type]  # keyed: not None
    return partition_for_key(key, info)  # type: ignore[arg-type]  # keyed: not None


def _no_partition_detail(info: Topic, m: Message | None = None) -> str:
    if m is not None and m.pinned:
        return f"partition {m.partition_key} unavailable"
    return f"{len(info.available)} of {info.partition_count} partitions available"
