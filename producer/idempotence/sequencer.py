"""The idempotent producer in the data path (KIP-98): the glue between the pure state
(:class:`bruce.producer.idempotence.sequence_state.Idempotence`), the partition queues, the dispatcher and the senders.

Rules:
- Whether the producer is idempotent is settled at its first produce connection: wanted
  (:attr:`ProducerConfig.idempotence_wanted`) and that broker takes idempotent batches
  (``ProtocolChoice.idempotence``) ⇒ on; else off, with one log line, and the at-least-once path (Bruce's) from then
  on. While on, a connection a broker closed on ApiVersions (a Kafka 0.8 answer, or a modern broker starting up) is
  not used: the sender connects again after its backoff. A broker whose ApiVersions shows it cannot take idempotent
  batches, or the cluster refusing idempotence (a FATAL state), ends it: one error line, ``IdempotenceFatal{reason}``,
  and once nothing is in flight the pending batches' messages go back to the front of their queues, in order
  (:meth:`Sequencer.settle`).
- The producer id: a sender with work asks for it (InitProducerId on its connection) when the state is NONE; nothing
  is sent before it is ASSIGNED. A retriable error or a transport failure asks again after ``retry_backoff_ms``; more
  retriable errors in a row than ``max_failed_delivery_attempts`` end idempotence, as a non-retriable one does.
- A partition's sequenced batches (pending in the state: in flight, or waiting for a resend; their messages counted
  in :attr:`PartitionQueue.waiting` while they wait) come before its queue's ready messages. A resend sends the same
  :class:`Part` again (its messages and encoded bytes, never merged or split), its producer id, epoch and sequence
  stamped anew only after an epoch bump renumbered it. A new batch is cut as on the at-least-once path
  (:func:`bruce.producer.queues.request.assemble`, ``encode_part``), then sequenced (``assign``) and stamped.
- Answers: :func:`bruce.producer.acks.classify` on the idempotent path, then ``Idempotence.on_answer``; the result is
  carried out here (deliver, discard, wait for a resend, pause). DUPLICATE_SEQUENCE_NUMBER (``AckDuplicateSequence``)
  is not trusted: a broker has answered it for a batch it never stored (tansu after a restart). The batch is done for
  the sequence state, and its messages wait (held) while the partition's log is read for its identity from the offset
  known when it was first sent (``on_duplicate``, :func:`bruce.producer.idempotence.recovery.find_batch`): found,
  delivered at that offset; not found, they go back to the front of their queue and are sent again as a new batch. A
  transport failure leaves the batch waiting with its sequence: its messages are no possible duplicates. A batch over
  ``max_failed_delivery_attempts``, expired, or whose partition lost its leader is given up whole (``give_up``: an
  epoch bump follows); only batches given up, or renumbered by a bump after a fenced
  epoch, while their outcome is unknown are counted as possible duplicates.
- Up to ``max_in_flight_requests_per_connection`` (≤ 5) requests per broker and batches per partition are in flight
  (one per partition until its first acknowledgement of the epoch); the broker keeps each partition's order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

from bruce.wire import INIT_PRODUCER_ID, ProtocolChoice, errorcodes, with_producer_identity

from ..acks import DUPLICATE_SEQUENCE_NUMBER, Action, classify
from ..config import ProducerConfig
from ..message import Message
from ..queues import Compression, CompressionPolicy, Ledger, Part, PartitionQueue, assemble
from ..reasons import DiscardReason
from .journal import CHECKING, PartJournal
from .sequence_state import Batch, BatchState, Idempotence, PidState

log = logging.getLogger("bruce.producer")
Encode = Callable[[Part, Compression], bytes]
OnDuplicate = Callable[[PartitionQueue, Batch, list[Message], int, float], None]
"""A DUPLICATE_SEQUENCE_NUMBER answer to verify in the log: (queue, batch, messages, size, since)."""


class Owner(Protocol):
    """What the sequencer asks of the dispatcher that owns it (:class:`~bruce.producer.dispatch.dispatcher.Dispatcher`
    is one): its settings, clock and queues, and its switch to at-least-once (``seq = None``)."""

    config: ProducerConfig
    clock: Callable[[], float]
    seq: Sequencer | None

    def route(
        self, topic: str, messages: list[Message], *, hold_unknown: bool = True, since: float | None = None
    ) -> None: ...

    def mark_ready(self, pq: PartitionQueue) -> None: ...

    def all_queues(self) -> list[PartitionQueue]: ...


class Transaction(Protocol):
    """What the sequencer tells a transactional producer's transaction (served by its
    :class:`~bruce.producer.transactions.manager.TransactionManager`, through the producer's hooks)."""

    def admit(self, pq: PartitionQueue) -> bool: ...

    def produce_failed(self, name: str, given_up: bool) -> None: ...

    def idempotence_ended(self, name: str, why: str) -> None: ...


class Sequencer:
    """The idempotent producer's side of one :class:`~bruce.producer.dispatch.dispatcher.Dispatcher` (its ``seq``)."""

    def __init__(
        self,
        dispatcher: Owner,
        ledger: Ledger,
        *,
        txn: Transaction | None = None,
        on_duplicate: OnDuplicate | None = None,
    ) -> None:
        """``txn``: a transactional producer's transaction (it owns the producer id); ``on_duplicate``: where a
        DUPLICATE_SEQUENCE_NUMBER answer is checked (None: delivered at once, offset -1)."""
        self.d = dispatcher
        self.ledger = ledger  # where every outcome ends
        self.idem: Idempotence | None = None  # None until the first produce connection settles it
        self.ending = ""  # why idempotence ends (fatal), while in-flight batches settle
        self.init_not_before = 0.0  # loop time: no InitProducerId before (retry backoff)
        self.init_refusals = 0  # InitProducerId requests in a row that got no producer id (error or no answer)
        self.journal: PartJournal | None = None  # idempotent batches journaled before sending
        self.txn = txn
        self.acked: dict[tuple[str, int], int] = {}  # per partition the highest base offset acknowledged
        self.on_duplicate = on_duplicate

    # ---------------------------------------------------------------- on or off

    def connected(self, broker: int, choice: ProtocolChoice) -> bool:
        """A produce connection to ``broker`` speaks ``choice``: settles idempotence at the first one. False: do not
        use this connection (idempotence is on and the broker closed the connection on ApiVersions, as a modern broker
        that is starting up may: connect again later rather than end idempotence over it)."""
        config = self.d.config
        if self.idem is not None and not self.ending and not choice.negotiated:
            return False
        if self.idem is None:
            if choice.idempotence:
                limit = config.max_in_flight_requests_per_connection
                self.idem = self.new_state(epoch_bump=choice.epoch_bump)
                log.info("idempotent producer on (up to %d requests in flight per partition)", limit)
            else:
                self._off(f"broker {broker} cannot take idempotent batches ({_speaks(choice)})")
        elif not choice.idempotence:
            self.fatal("UNSUPPORTED", f"broker {broker} cannot take idempotent batches ({_speaks(choice)})")
        elif not choice.epoch_bump:
            self.idem.epoch_bump = False  # one broker without KIP-360: new producer ids instead of bumps
        return True

    def _off(self, why: str) -> None:
        explicit = self.d.config.enable_idempotence
        level = logging.ERROR if explicit else logging.INFO
        log.log(level, "idempotent producer off: %s; at-least-once delivery (Bruce's)", why)
        self.d.seq = None
        if self.journal is not None:
            self.journal.off()

    @property
    def max_in_flight(self) -> int:
        return self.d.config.max_in_flight_requests_per_connection

    def new_state(self, *, epoch_bump: bool) -> Idempotence:
        """A fresh idempotence state for this producer: its batches' fates go to the journal."""
        return Idempotence(max_in_flight=self.max_in_flight, epoch_bump=epoch_bump, on_done=self._finished)

    def _finished(self, batch: Batch) -> None:
        """A batch's fate is known: its FINISHED record, if it was journaled (:meth:`PartJournal.finished`)."""
        if self.journal is not None:
            self.journal.finished(batch)

    def fatal(self, name: str, why: str) -> None:
        """End idempotence (the cluster refuses it, or a broker cannot take it): once nothing is in flight, every
        pending batch's messages go back to their queues and the producer goes on at-least-once."""
        if self.ending:
            return
        if self.txn is not None:
            self.txn.idempotence_ended(name, why)
        self.ending = why
        if self.journal is not None:
            self.journal.off()
        self.ledger.counters.inc("IdempotenceFatal", labels=(("reason", name),))
        log.error("idempotent producer ends: %s; going on at-least-once (a resend may store a message twice)", why)
        self.settle()

    # ---------------------------------------------------------------- the producer id

    def may_produce(self) -> bool:
        """Batches may be sent now (the producer id is assigned, idempotence not ending)."""
        idem = self.idem
        return idem is not None and not self.ending and idem.state is PidState.ASSIGNED

    def init_request(self, now: float) -> Any:
        """The InitProducerId request a sender should send now, or None."""
        if self.idem is None or self.ending or now < self.init_not_before or self.txn is not None:
            return None
        return self.idem.init_request()

    def on_init(self, result: Any, failed: bool) -> None:
        """InitProducerId's answer (or ``failed``: a transport failure)."""
        idem = self.idem
        assert idem is not None
        if failed:
            idem.on_init_failure()
            name, what = "TRANSPORT", "failed (no answer)"
        else:
            duplicates = idem.on_init_response(result)
            name = errorcodes.lookup(result.error_code).name
            what = f"answered {name}"
            if idem.state is PidState.ASSIGNED:
                self.init_refusals = 0
                self.ledger.counters.inc("ProducerIdAssigned")
                log.info("producer id %d, epoch %d", idem.producer_id, idem.producer_epoch)
                self._possible_duplicates(duplicates)
                self.wake_all()
                return
            if idem.state is PidState.FATAL:
                self.fatal(name, idem.fatal_reason)
                return
        self.init_refusals += 1
        if self.init_refusals > self.d.config.max_failed_delivery_attempts:  # bounded, as a message's attempts
            self.fatal(name, f"InitProducerId {what} {self.init_refusals} times in a row")
            return
        self.ledger.counters.inc("ProducerIdRetry")
        delay = max(self.d.config.retry_backoff_ms, 10) / 1000
        self.init_not_before = self.d.clock() + delay
        asyncio.get_running_loop().call_later(delay, self.wake_all)

    # ---------------------------------------------------------------- sending

    def sendable(self, pq: PartitionQueue) -> bool:
        """``pq`` may get a batch now (always true before the producer id: the sender then asks for it)."""
        idem = self.idem
        if self.txn is not None and not self.txn.admit(pq):
            return False
        return idem is None or idem.state is not PidState.ASSIGNED or idem.may_send((pq.topic, pq.partition))

    def assemble(
        self, queues: list[PartitionQueue], magic: int, policy: CompressionPolicy, encode: Encode
    ) -> tuple[list[Part], list[bytes]]:
        """One request's parts from ``queues``: per partition, the batch to resend, else a new batch (cut within the
        request's data limit, encoded, sequenced); and their bytes."""
        idem = self.idem
        assert idem is not None
        config = self.d.config
        parts: list[Part] = []
        encoded: list[bytes] = []
        remaining = config.produce_request_data_limit
        for pq in queues:
            if parts and remaining <= 0:
                break
            tp = (pq.topic, pq.partition)
            if not idem.may_send(tp):
                continue
            batch = idem.to_resend(tp)
            fresh = batch is None  # bytes just encoded, held by nothing else: stamped in place
            if batch is not None:
                part = batch.records
                if parts and part.size > remaining:
                    continue  # whole or not at all: it goes first in a later request
                idem.resend(batch)
                pq.waiting -= len(part.messages)
            else:
                new, chosen = assemble(
                    [pq],
                    data_limit=max(remaining, 0),
                    message_max_bytes=config.message_max_bytes,
                    policy=policy,
                    magic=magic,
                    empty=not parts,
                )
                if not new:
                    continue
                part = new[0]
                part.data = encode(part, chosen[pq])
                part.batch = batch = idem.assign(tp, len(part.messages), part)
                batch.known = self.acked.get(tp, -1)
            identity = (batch.producer_id, batch.producer_epoch, batch.base_sequence)
            if part.identity != identity:
                part.data = with_producer_identity(
                    part.data,
                    producer_id=identity[0],
                    producer_epoch=identity[1],
                    base_sequence=identity[2],
                    transactional=self.txn is not None,
                    in_place=fresh,
                )
                part.identity = identity
                journal = self.journal
                if journal is not None:  # durable before it is sent (bruce.producer.idempotence.journal)
                    journal.sent(part, batch)
            parts.append(part)
            encoded.append(part.data)
            remaining -= part.size
        return parts, encoded

    # ---------------------------------------------------------------- outcomes

    def answered(self, broker: int, part: Part, error_code: int, base_offset: int) -> str:
        """Carry out one partition's answer; returns a pause's cause, or ""."""
        d = self.d
        idem = self.idem
        assert idem is not None
        pq, batch, messages = part.queue, part.batch, part.messages
        n = len(messages)
        pq.in_flight -= n
        batch.offset = (base_offset if base_offset >= 0 else -2) if error_code == 0 else -1  # for the journal
        duplicate = error_code == DUPLICATE_SEQUENCE_NUMBER
        if (
            duplicate
        ):  # acknowledged, offset not given; or journaled by the log check (bruce.producer.idempotence.duplicates)
            batch.offset = -2 if self.on_duplicate is None else CHECKING
        elif error_code == 0 and base_offset >= 0:
            tp = (pq.topic, pq.partition)
            self.acked[tp] = max(self.acked.get(tp, -1), base_offset)
        decision = idem.on_answer(batch, classify(error_code, legacy=False, idempotent=True))
        if self.txn is not None and decision.action is not Action.OK:
            self.txn.produce_failed(decision.name, decision.action is Action.DISCARD)
        labels = (("broker", str(broker)), ("topic", pq.topic), ("partition", str(pq.partition)))
        cause = ""
        if decision.action is Action.OK:
            self.ledger.counters.inc("AckOk", n, labels)
            if duplicate:
                self.ledger.counters.inc("AckDuplicateSequence", n, labels)
            if duplicate and self.on_duplicate is not None:
                self.on_duplicate(pq, batch, messages, part.size, part.since)  # held until the log is read
            else:
                self.ledger.deliver(pq, messages, base_offset if error_code == 0 else -1, part.size)
        else:
            self.ledger.counters.inc("AckError", n, (("code", decision.name), *labels))
            if decision.action is Action.DISCARD:
                self.ledger.discard(pq.topic, messages, decision.reason, decision.name)  # type: ignore[arg-type]  # set for DISCARD
                if idem.state is PidState.FATAL:
                    self.fatal(decision.name, idem.fatal_reason)
            elif decision.counts_attempt and _over_limit(messages, d.config.max_failed_delivery_attempts):
                idem.give_up(batch)
                self._give_up(part, DiscardReason.DELIVERY_ATTEMPT_LIMIT, f"last error {decision.name}", waiting=False)
            else:
                pq.waiting += n
                if decision.action is Action.RESEND:
                    self.ledger.counters.inc("MsgResend", n, labels)
                    if decision.counts_attempt:
                        pq.not_before = d.clock() + d.config.retry_backoff_ms / 1000
                else:
                    self.ledger.counters.inc("GotPauseAck", 1, (("broker", str(broker)),))
                    cause = f"{decision.name} from broker {broker} for {pq.topic}/{pq.partition}"
        if batch.state is BatchState.DONE:
            part.batch = None  # the batch holds its part: left linked, every message waits for the collector
        self._after(pq)
        return cause

    def lost(self, part: Part) -> None:
        """``part``'s request failed in transport: its batch waits for a resend with its sequence."""
        assert self.idem is not None
        pq = part.queue
        pq.in_flight -= len(part.messages)
        self.idem.on_unknown_outcome(part.batch)
        pq.waiting += len(part.messages)
        self._after(pq)

    def _after(self, pq: PartitionQueue) -> None:
        if pq.leader is None:
            self.d.route(pq.topic, self.give_up_waiting(pq) + pq.drain(), hold_unknown=False, since=pq.newest())
        elif pq.ready_count or pq.waiting:
            self.d.mark_ready(pq)

    def settle(self) -> None:
        """After answers: end idempotence once nothing is in flight (fatal), or bump the epoch when it is ready."""
        idem = self.idem
        if idem is None or self.d.seq is not self:
            return
        if self.ending:
            if idem.in_flight:
                return
            batches = idem.abandon_all()
            self.d.seq = None
            self._possible_duplicates([b for b in batches if b.unknown_outcome])
            for batch in reversed(batches):  # the last of each partition first: each goes in front of the rest
                part = batch.records
                part.queue.waiting -= len(part.messages)
                part.queue.push_front(part.messages, part.since)
            self.wake_all()
            return
        if idem.bump_ready:
            duplicates = idem.bump()
            if idem.state is PidState.ASSIGNED:
                self.ledger.counters.inc("IdempotenceEpochBump")
                log.info("producer id %d: epoch bumped to %d", idem.producer_id, idem.producer_epoch)
            self._possible_duplicates(duplicates)
            self.wake_all()

    def wake_all(self) -> None:
        """Every partition with something to send is looked at again (a producer id came, an epoch was bumped)."""
        d = self.d
        for pq in d.all_queues():
            if pq.ready_count or pq.waiting:
                d.mark_ready(pq)

    # ---------------------------------------------------------------- giving up

    def give_up_waiting(self, pq: PartitionQueue) -> list[Message]:
        """The partition lost its leader: its waiting batches are given up; returns their messages (oldest first) to
        route again; those of unknown outcome are counted as possible duplicates."""
        idem = self.idem
        if idem is None or not pq.waiting:
            return []
        out: list[Message] = []
        for batch in _waiting(idem, pq):
            idem.give_up(batch)
            part = batch.records
            if batch.unknown_outcome:
                self._possible_duplicates([batch])
            out += part.messages
        pq.waiting = 0
        return out

    def expire(self, cutoff: float, detail: str) -> None:
        """Give up (MESSAGE_TIMEOUT) the waiting batches queued at or before ``cutoff``."""
        idem = self.idem
        if idem is None:
            return
        old = [b for b in idem.batches() if b.state is BatchState.WAITING and b.records.since <= cutoff]
        for batch in old:
            idem.give_up(batch)
            self._give_up(batch.records, DiscardReason.MESSAGE_TIMEOUT, detail)
        if old:
            self.settle()

    def discard_waiting(self, reason: DiscardReason, detail: str) -> None:
        """Shutdown: every waiting batch's messages are discarded with ``reason``."""
        idem = self.idem
        if idem is None:
            return
        for batch in [b for b in idem.batches() if b.state is BatchState.WAITING]:
            idem.give_up(batch)
            self._give_up(batch.records, reason, detail)

    def _give_up(self, part: Part, reason: DiscardReason, detail: str, *, waiting: bool = True) -> None:
        """Discard a batch given up (``waiting``: its messages were counted in its queue's ``waiting``)."""
        if part.batch.unknown_outcome:
            self._possible_duplicates([part.batch])
        if waiting:
            part.queue.waiting -= len(part.messages)
        self.ledger.discard(part.queue.topic, part.messages, reason, detail)

    def _possible_duplicates(self, batches: list[Batch]) -> None:
        for batch in batches:
            self.ledger.possible_duplicates(batch.records.queue.topic, batch.records.messages)


def log_idempotence_off(config: ProducerConfig) -> None:
    """One line saying why idempotence is off by configuration (nothing when it was turned off explicitly)."""
    if config.enable_idempotence is None:
        if config.acks != -1:
            why = f"acks={config.acks} (it needs -1)"
        elif config.protocol == "v0":
            why = "the 0.8 protocol (protocol v0)"
        else:
            why = f"max_in_flight_requests_per_connection={config.max_in_flight_requests_per_connection} (at most 5)"
        log.info("idempotent producer off: %s; at-least-once delivery (Bruce's)", why)


def _speaks(choice: ProtocolChoice) -> str:
    if not choice.negotiated:
        return "the Kafka 0.8 protocol"
    init = (
        f"InitProducerId v{choice.version(INIT_PRODUCER_ID)}"
        if choice.supports(INIT_PRODUCER_ID)
        else "no InitProducerId"
    )
    return f"message format v{choice.magic}, {init}"


def _waiting(idem: Idempotence, pq: PartitionQueue) -> list[Batch]:
    ps = idem.partitions.get((pq.topic, pq.partition))
    return [] if ps is None else [b for b in ps.pending if b.state is BatchState.WAITING]


def _over_limit(messages: list[Message], limit: int) -> bool:
    """Count a failed attempt for each message; True when one of them is over ``limit`` (the batch goes whole)."""
    over = False
    for m in messages:
        m.attempts += 1
        over = over or m.attempts > limit
    return over
