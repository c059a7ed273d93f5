"""A request's life once a sender has written it: :class:`RequestOutcomes`, the dispatcher's senders' side.

Rules:
- It holds no state of its own: it reads and updates the dispatcher's queues and sequencer, and ends every outcome in
  the :class:`~bruce.producer.queues.ledger.Ledger` (deliver, discard) or back in the queues (``give_back``);
  synchronous, in the event loop's thread, never awaits.
- ``started``: a written request rotates its broker's queues (fairness), marks its partitions busy (or, sequenced,
  adds to their in-flight count) and tells the sink's ``sent`` hook.
- Outcomes are applied per request part through :func:`bruce.producer.acks.classify` (the only decision point);
  sequenced parts are the sequencer's (:mod:`bruce.producer.idempotence.sequencer`). Resend and pause count a failed
  attempt per message; beyond ``max_failed_delivery_attempts`` a message is discarded with DELIVERY_ATTEMPT_LIMIT.
- A failed connection gives its messages back to the front of their queues, as possible duplicates when their request
  had been written; then a pause (requested from the dispatcher, carried out by :mod:`bruce.producer.dispatch.pause`).
- A response that answers for partitions it was not sent, or leaves some out, is a protocol error: counted, the
  missing parts fail as a transport failure would, and the broker's answers for the others stand.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..acks import Action, Failure, classify
from ..message import Message, sent_hook
from ..queues import Part, PartitionQueue
from ..reasons import DiscardReason
from .dispatcher import Dispatcher


class RequestOutcomes:
    """A request's start and outcome, for the senders of one :class:`~bruce.producer.dispatch.dispatcher.Dispatcher`
    (see the module's rules)."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.d = dispatcher
        self.ledger = ledger = dispatcher.ledger
        self.config = dispatcher.config
        self.counters = dispatcher.counters
        self.on_sent = sent_hook(ledger.sink)  # the sink's optional ``sent``, looked up once

    def started(self, broker: int, parts: Sequence[Part], expect_ack: bool) -> None:
        """A request with ``parts`` was written. Rotate the broker's queues (fairness), mark partitions busy and tell
        the sink's ``sent`` hook."""
        ready = self.d.ready_by_broker.get(broker, {})
        on_sent = self.on_sent
        for part in parts:
            pq = part.queue
            if pq in ready:
                del ready[pq]
                if pq.ready_count or pq.waiting:
                    ready[pq] = None
            if part.batch is not None:
                pq.in_flight += len(part.messages)
            elif expect_ack:
                pq.busy = True
                pq.in_flight = len(part.messages)
            self.counters.inc("MsgSent", len(part.messages), _labels(broker, pq))
            if on_sent is not None:
                on_sent(pq.topic, pq.partition, part.messages)

    def on_written_no_ack(self, broker: int, parts: Sequence[Part]) -> None:
        """acks=0: a message is done once written (Bruce's AckNotRequired)."""
        for part in parts:
            self.counters.inc("AckNotRequired", len(part.messages), _labels(broker, part.queue))
            self.ledger.deliver(part.queue, part.messages, -1, part.size)

    def on_response(self, broker: int, parts: Sequence[Part], response: object, legacy: bool) -> None:
        """Apply a Produce response to the request's parts."""
        answers = {}
        for topic in response.responses:  # type: ignore[attr-defined]  # a ProduceResponse
            for p in topic.partition_responses:
                answers[(topic.name, p.index)] = p
        missing: list[Part] = []
        pause_cause = ""
        now = self.d.clock()
        seq = self.d.seq
        for part in parts:
            pq = part.queue
            answer = answers.pop((pq.topic, pq.partition), None)
            if answer is None:
                missing.append(part)
                continue
            if part.batch is not None:
                assert seq is not None  # idempotence ends only once nothing is in flight
                pause_cause = seq.answered(broker, part, answer.error_code, answer.base_offset) or pause_cause
                continue
            pq.busy = False
            pq.in_flight = 0
            decision = classify(answer.error_code, legacy)
            labels = _labels(broker, pq)
            if decision.action is Action.OK:
                self.counters.inc("AckOk", len(part.messages), labels)
                self.ledger.deliver(pq, part.messages, answer.base_offset, part.size)
                continue
            self.counters.inc("AckError", len(part.messages), (("code", decision.name), *labels))
            if decision.action is Action.DISCARD:
                self.ledger.discard(pq.topic, part.messages, decision.reason, decision.name)  # type: ignore[arg-type]  # set for DISCARD
                continue
            retry = self._count_attempt(pq.topic, part.messages, decision.name)
            if decision.action is Action.RESEND:
                self.counters.inc("MsgResend", len(retry), labels)
                if retry:
                    if not legacy:
                        pq.not_before = now + self.config.retry_backoff_ms / 1000
                    self.d.give_back(pq, retry, part.since)
            else:
                self.counters.inc("GotPauseAck", 1, (("broker", str(broker)),))
                self.d.give_back(pq, retry, part.since)
                pause_cause = f"{decision.name} from broker {broker} for {pq.topic}/{pq.partition}"
        if seq is not None:
            seq.settle()
        self.d.hooks.progress(True)
        if answers:
            self.counters.inc("ProduceResponseUnexpectedPartition", len(answers), (("broker", str(broker)),))
            pause_cause = pause_cause or f"broker {broker} answered for partitions it was not sent"
        if missing:
            self.counters.inc("ProduceResponseShort", 1, (("broker", str(broker)),))
            self.on_failure(broker, missing, Failure.PROTOCOL_ERROR, written=True)
            return
        if pause_cause:
            self.d.request_pause(pause_cause, answered=True)
        else:
            self.d.hooks.wake_broker(broker)

    def on_failure(self, broker: int, parts: Sequence[Part], failure: Failure, *, written: bool) -> None:
        """A request failed in transport: its messages go back to the front of their queues, as possible duplicates
        if it had been written; then a pause (Bruce's other pause triggers, docs/bruce-compatibility.md#error-acks)."""
        seq = self.d.seq
        for part in parts:
            pq = part.queue
            if part.batch is not None:
                assert seq is not None
                seq.lost(part)  # not a possible duplicate: the resend carries the same sequence
                continue
            pq.busy = False
            pq.in_flight = 0
            if written:
                self.ledger.possible_duplicates(pq.topic, part.messages)
            self.d.give_back(pq, part.messages, part.since)
        if seq is not None:
            seq.settle()
        self.d.hooks.progress(False)
        self.d.request_pause(f"{failure.value} on broker {broker}", answered=failure is Failure.PROTOCOL_ERROR)

    def _count_attempt(self, topic: str, messages: list[Message], name: str) -> list[Message]:
        limit = self.config.max_failed_delivery_attempts
        retry: list[Message] = []
        over: list[Message] = []
        for m in messages:
            m.attempts += 1
            (over if m.attempts > limit else retry).append(m)
        if over:
            self.ledger.discard(topic, over, DiscardReason.DELIVERY_ATTEMPT_LIMIT, f"last error {name}")
        return retry


def _labels(broker: int, pq: PartitionQueue) -> tuple[tuple[str, str], ...]:
    return (("broker", str(broker)), ("topic", pq.topic), ("partition", str(pq.partition)))
