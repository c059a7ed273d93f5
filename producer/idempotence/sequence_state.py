"""The idempotent producer's state (KIP-98), pure and sans-I/O: the producer id and epoch, and per partition the
sequence numbers of the batches sent and not yet acknowledged. :mod:`bruce.producer.idempotence.sequencer` wires it into
the data path (docs/producer.md, "Idempotence").

Rules:
- Producer id: NONE → REQUESTING (an InitProducerId request is out, :meth:`Idempotence.init_request`) → ASSIGNED.
  A retriable InitProducerId error or a transport failure goes back to NONE (the caller asks again after its
  backoff); any other error, or CLUSTER_AUTHORIZATION_FAILED on a produce, is FATAL: the cluster refuses idempotence
  for good, ``fatal_reason`` says why, and the caller stops using this state (see :meth:`Idempotence.abandon_all`).
- A batch gets its sequence once, when first sent (:meth:`Idempotence.assign`): the partition's next sequence, which
  then advances by the batch's record count (an int32 that wraps to 0 after 2**31 - 1, as Kafka's does). The batch
  keeps its records, its producer id, epoch and sequence for every resend: the broker drops a resend of one of the
  last 5 batches it stored for the producer and partition, and answers it with the original offset.
- At most ``max_in_flight`` (1-5; the broker remembers 5 batches) batches of one partition are in flight, and only
  one until a batch of the current epoch was acknowledged there: a broker without state for the producer accepts any
  sequence (Kafka 2.5+), so a second batch could be stored ahead of a first one that failed. The answers of one
  partition arrive in the order of its sends (one connection: after a leader change, :meth:`leader_changed` holds
  the partition until its old leader answered everything).
- Any failure of a partition's batch (an error answer or a transport failure) *drains* the partition: nothing more is
  sent to it until none of its batches is in flight. Then the batches waiting for a resend go first, lowest sequence
  first, unchanged; a new batch waits until none is waiting.
- A gap in a partition's sequence (a batch given up: discarded, timed out, rerouted elsewhere), a sequence error at
  the head of a partition, or a fenced epoch needs a new epoch. New batches stop everywhere. First the batches whose
  outcome is unknown (a send lost in transport) are settled under the old epoch: each is resent, unchanged, until
  the broker said whether it holds it (success: delivered; a sequence error: it does not, as the broker checks for a
  duplicate first). Then, nothing in flight, :meth:`bump` raises the epoch itself (KIP-360: brokers with
  InitProducerId v3+, below epoch 32767) or asks for a new producer id, and every partition starts again at sequence
  0 with its waiting batches renumbered in order. UNKNOWN_PRODUCER_ID for a batch at sequence 0 refuses the producer
  id itself (a broker that lost its state: tansu after a restart), so it is handled as a fenced epoch: a new producer
  id. A broker that fences an epoch we bumped ourselves (tansu does)
  gets new producer ids from then on, and that first refusal counts no attempt. A fenced epoch settles nothing: its
  batches of unknown outcome are renumbered at once and reported as possible duplicates. Those, and a batch given up
  while its outcome is unknown (it may be stored, yet it is counted as not delivered), are the only duplicates left.
- :meth:`Idempotence.on_answer` is the decision for one batch's answer: it takes :func:`bruce.producer.acks.classify`'s
  decision on the idempotent path and returns the action to carry out (never :attr:`Action.SEQUENCE`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from bruce.wire import InitProducerIdRequest, InitProducerIdResponse, UsageError, errorcodes

from ..acks import Action, Decision
from ..config import MAX_IN_FLIGHT

MAX_EPOCH = 2**15 - 1
SEQUENCE_MODULUS = 2**31
_REFUSED = errorcodes.BY_CODE[31].name  # CLUSTER_AUTHORIZATION_FAILED on produce: no idempotent writes for us
_FENCED = frozenset({errorcodes.BY_CODE[47].name, errorcodes.BY_CODE[90].name})  # INVALID_PRODUCER_EPOCH,
# PRODUCER_FENCED: checked before the sequence. OUT_OF_ORDER_SEQUENCE_NUMBER and UNKNOWN_PRODUCER_ID come after the
# broker's duplicate check: the broker does not hold the batch.
_UNKNOWN_PRODUCER = errorcodes.BY_CODE[59].name  # at sequence 0: the producer id itself is refused (a broker that lost
# its state, or tansu, which checks the ids it allocated): a new producer id is due

TopicPartition = tuple[str, int]


def next_sequence(sequence: int, count: int) -> int:
    """``sequence`` advanced by ``count`` records, wrapping after 2**31 - 1 as the broker does."""
    return (sequence + count) % SEQUENCE_MODULUS


class PidState(Enum):
    NONE = "none"
    REQUESTING = "requesting"
    ASSIGNED = "assigned"
    FATAL = "fatal"


class BatchState(Enum):
    IN_FLIGHT = "in_flight"
    WAITING = "waiting"  # to be resent, sequence unchanged (unless an epoch bump renumbers it)
    DONE = "done"  # acknowledged or given up


@dataclass(eq=False, slots=True)
class Batch:
    """One partition's batch with its identity for every send. ``records`` is the caller's (e.g. its messages)."""

    tp: TopicPartition
    count: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    state: BatchState = BatchState.IN_FLIGHT
    unknown_outcome: bool = False  # a send of it failed in transport: the broker may hold it
    sends: int = 1
    records: Any = None
    offset: int = -1  # its acknowledgement's base offset (-1: none; -3: a duplicate's answer, being checked)
    known: int = -1  # the partition's highest offset known as acknowledged when it was first sent (-1: none)

    @property
    def last_sequence(self) -> int:
        return next_sequence(self.base_sequence, self.count - 1)


@dataclass(slots=True)
class PartitionSequences:
    """One partition's bookkeeping: the next sequence and its batches not yet acknowledged, in sequence order."""

    next_sequence: int = 0
    pending: list[Batch] = field(default_factory=list)
    in_flight: int = 0
    draining: bool = False  # a failure happened: send nothing until in_flight is 0
    acknowledged: bool = False  # a batch of the current epoch was acknowledged: the broker knows the producer here

    def waiting(self, unknown_only: bool = False) -> Batch | None:
        """The first batch waiting for a resend (of unknown outcome only: to settle before a bump)."""
        for b in self.pending:
            if b.state is BatchState.WAITING and (b.unknown_outcome or not unknown_only):
                return b
        return None


class Idempotence:
    """The producer-wide idempotence state; see the module's rules."""

    def __init__(
        self,
        *,
        max_in_flight: int = MAX_IN_FLIGHT,
        epoch_bump: bool = True,
        on_done: Callable[[Batch], None] | None = None,
    ) -> None:
        """``on_done`` is told each batch whose fate is known (the batch journal's)."""
        if not 1 <= max_in_flight <= MAX_IN_FLIGHT:
            raise UsageError(f"max_in_flight must be 1 to {MAX_IN_FLIGHT} with idempotence, not {max_in_flight}")
        self.max_in_flight = max_in_flight
        self.epoch_bump = epoch_bump  # every broker takes a client-side bump (ProtocolChoice.epoch_bump)
        self.state = PidState.NONE
        self.producer_id = -1
        self.producer_epoch = -1
        self.fatal_reason = ""
        self.bump_needed = False  # a new epoch (or producer id) is due: no new batch until it is done
        self.new_id_needed = False  # the epoch cannot be bumped by us: a new producer id is due
        self.in_flight = 0  # batches in flight, every partition
        self.bumps = 0  # epochs bumped by us
        self._bumped_to = -1  # the epoch we last bumped to ourselves
        self.ids_assigned = 0  # InitProducerId answers accepted
        self.partitions: dict[TopicPartition, PartitionSequences] = {}
        self.on_done = on_done

    # ---------------------------------------------------------------- producer id

    def init_request(self) -> InitProducerIdRequest | None:
        """The InitProducerId request to send now (any broker), or None when none is due."""
        if self.state is not PidState.NONE:
            return None
        self.state = PidState.REQUESTING
        return InitProducerIdRequest()

    def on_init_response(self, response: InitProducerIdResponse) -> list[Batch]:
        """Apply InitProducerId's answer. Returns the renumbered batches that are possible duplicates (see
        :meth:`bump`)."""
        if self.state is not PidState.REQUESTING:
            return []
        code = response.error_code
        if code:
            known = errorcodes.lookup(code)
            if known.retriable:
                self.state = PidState.NONE
            else:
                self._fatal(f"InitProducerId answered {known}")
            return []
        self.state = PidState.ASSIGNED
        self.ids_assigned += 1
        self.new_id_needed = False
        return self._restart(response.producer_id, response.producer_epoch)

    def on_init_failure(self) -> None:
        """The InitProducerId request failed in transport: ask again later."""
        if self.state is PidState.REQUESTING:
            self.state = PidState.NONE

    def _fatal(self, reason: str) -> None:
        self.state = PidState.FATAL
        self.fatal_reason = reason

    # ---------------------------------------------------------------- sending

    def partition(self, tp: TopicPartition) -> PartitionSequences:
        ps = self.partitions.get(tp)
        if ps is None:
            ps = self.partitions[tp] = PartitionSequences()
        return ps

    def may_send(self, tp: TopicPartition) -> bool:
        """A batch may be sent to ``tp`` now: :meth:`to_resend`'s, or else (no bump due) a new one."""
        if self.state is not PidState.ASSIGNED:
            return False
        ps = self.partitions.get(tp)
        if ps is None:
            return not self.bump_needed
        if self.bump_needed and self.to_resend(tp) is None:
            return False
        return not ps.draining and ps.in_flight < (self.max_in_flight if ps.acknowledged else 1)

    def to_resend(self, tp: TopicPartition) -> Batch | None:
        """The batch that must go before anything new to ``tp``, if any (lowest sequence first; while a bump is due,
        only batches of unknown outcome, to settle them)."""
        ps = self.partitions.get(tp)
        if ps is None:
            return None
        if self.bump_needed:
            return ps.waiting(unknown_only=True) if not self.new_id_needed else None
        return ps.waiting()

    def _settling(self, ps: PartitionSequences) -> bool:
        """A bump is due and the partition holds a batch of unknown outcome, to settle under the current epoch."""
        return not self.new_id_needed and any(b.unknown_outcome for b in ps.pending)

    def assign(self, tp: TopicPartition, count: int, records: Any = None) -> Batch:
        """Sequence a new batch of ``count`` records for ``tp``, about to be sent (counted in flight)."""
        if count < 1:
            raise UsageError(f"a batch needs at least one record, not {count}")
        if self.bump_needed or not self.may_send(tp) or self.to_resend(tp) is not None:
            raise UsageError(f"no new batch may be sent to {tp} now")
        ps = self.partition(tp)
        batch = Batch(tp, count, self.producer_id, self.producer_epoch, ps.next_sequence, records=records)
        ps.next_sequence = next_sequence(ps.next_sequence, count)
        ps.pending.append(batch)
        self._sent(ps)
        return batch

    def resend(self, batch: Batch) -> None:
        """``batch`` (from :meth:`to_resend`) is about to be sent again, identity unchanged."""
        if not self.may_send(batch.tp) or self.to_resend(batch.tp) is not batch:
            raise UsageError(f"{batch.tp} sequence {batch.base_sequence} may not be resent now")
        batch.state = BatchState.IN_FLIGHT
        batch.sends += 1
        self._sent(self.partitions[batch.tp])

    def _sent(self, ps: PartitionSequences) -> None:
        ps.in_flight += 1
        self.in_flight += 1

    def leader_changed(self, tp: TopicPartition) -> None:
        """``tp`` moved to another broker: send nothing to the new one until the old one answered everything."""
        ps = self.partitions.get(tp)
        if ps is not None and ps.in_flight:
            ps.draining = True

    # ---------------------------------------------------------------- outcomes

    def on_answer(self, batch: Batch, decision: Decision) -> Decision:
        """The action for ``batch``'s answer, from ``classify(code, legacy=False, idempotent=True)``'s decision.

        OK: delivered. RESEND / PAUSE: kept for a resend with its sequence (the partition drains first). DISCARD: the
        batch is given up (a gap: an epoch bump is due). SEQUENCE becomes: for a batch behind another unacknowledged
        one, a resend that counts no attempt (the earlier batch's failure caused it); at the head of the partition, a
        resend after an epoch bump (OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID: the broker lost or never had
        what precedes it) or after a new producer id (INVALID_PRODUCER_EPOCH, PRODUCER_FENCED), counting an attempt.
        """
        head = self._answered(batch)
        action = decision.action
        if action is Action.OK:
            self._done(batch)
            self.partitions[batch.tp].acknowledged = True
            return decision
        if action is Action.DISCARD:
            self._done(batch)
            self.bump_needed = True  # its sequences leave a gap
            if decision.name == _REFUSED:
                self._fatal(f"produce answered {_REFUSED}: the cluster does not allow this client idempotent writes")
            return decision
        self._wait(batch)
        if action is not Action.SEQUENCE:
            return decision
        fenced = decision.name in _FENCED
        if not fenced:
            batch.unknown_outcome = False  # the broker checked for a duplicate first: it does not hold this batch
        if not head:
            return Decision(Action.RESEND, name=decision.name, idempotent=True)
        self.bump_needed = True
        refused = decision.name == _UNKNOWN_PRODUCER and batch.base_sequence == 0
        self.new_id_needed = self.new_id_needed or fenced or refused
        if fenced and self.epoch_bump and batch.producer_epoch == self._bumped_to:
            self.epoch_bump = False  # this broker refuses epochs we bump ourselves (tansu): our fault, no attempt
            return Decision(Action.RESEND, name=decision.name, idempotent=True)
        return Decision(Action.RESEND, counts_attempt=True, name=decision.name, idempotent=True)

    def on_unknown_outcome(self, batch: Batch) -> None:
        """``batch``'s send failed in transport (connection lost, timeout): kept for a resend with its sequence,
        which the broker deduplicates if the lost send was stored."""
        self._answered(batch)
        batch.unknown_outcome = True
        self._wait(batch)

    def give_up(self, batch: Batch) -> None:
        """``batch`` will not be sent again (discarded, expired, or its records rerouted to another partition): its
        sequences leave a gap, so an epoch bump is due. Call it for an in-flight batch only after its answer."""
        if batch.state is BatchState.DONE:
            return
        if batch.state is BatchState.IN_FLIGHT:
            raise UsageError(f"{batch.tp} sequence {batch.base_sequence} is still in flight")
        self._done(batch)
        self.bump_needed = True

    def _answered(self, batch: Batch) -> bool:
        """Account for an answer to an in-flight batch; True if it is the head of its partition."""
        if batch.state is not BatchState.IN_FLIGHT:
            raise UsageError(f"{batch.tp} sequence {batch.base_sequence} was not in flight")
        ps = self.partitions[batch.tp]
        ps.in_flight -= 1
        self.in_flight -= 1
        if not ps.in_flight:
            ps.draining = False
        return ps.pending[0] is batch

    def _wait(self, batch: Batch) -> None:
        batch.state = BatchState.WAITING
        ps = self.partitions[batch.tp]
        ps.draining = ps.in_flight > 0

    def _done(self, batch: Batch) -> None:
        batch.state = BatchState.DONE
        self.partitions[batch.tp].pending.remove(batch)
        if self.on_done is not None:
            self.on_done(batch)

    # ---------------------------------------------------------------- epoch bump

    @property
    def bump_ready(self) -> bool:
        """A bump is due, nothing is in flight and nothing left to settle: call :meth:`bump` now."""
        if not self.bump_needed or self.in_flight or self.state is not PidState.ASSIGNED:
            return False
        return not any(self._settling(ps) for ps in self.partitions.values())

    def bump(self) -> list[Batch]:
        """Raise the epoch ourselves, or (no KIP-360 broker, epoch exhausted, fenced) go back to NONE to ask for a new
        producer id (whose answer renumbers). Returns the renumbered batches that are possible duplicates."""
        if not self.bump_ready:
            raise UsageError("no epoch bump is ready")
        if self.new_id_needed or not self.epoch_bump or self.producer_epoch >= MAX_EPOCH:
            self.state = PidState.NONE
            return []
        self.bumps += 1
        self._bumped_to = self.producer_epoch + 1
        return self._restart(self.producer_id, self._bumped_to)

    def _restart(self, producer_id: int, epoch: int) -> list[Batch]:
        """A new producer id or epoch: every partition starts at sequence 0, its waiting batches renumbered in order."""
        if self.in_flight:
            raise UsageError(f"a new epoch with {self.in_flight} batches in flight")
        self.producer_id, self.producer_epoch = producer_id, epoch
        self.bump_needed = False
        duplicates: list[Batch] = []
        for ps in self.partitions.values():
            sequence = 0
            for batch in ps.pending:  # nothing is in flight: every pending batch is waiting
                batch.producer_id, batch.producer_epoch, batch.base_sequence = producer_id, epoch, sequence
                sequence = next_sequence(sequence, batch.count)
                if batch.unknown_outcome:
                    duplicates.append(batch)
                    batch.unknown_outcome = False
            ps.next_sequence = sequence
            ps.draining = ps.acknowledged = False
        return duplicates

    # ---------------------------------------------------------------- leaving

    def abandon_all(self) -> list[Batch]:
        """Give every pending batch back (FATAL: the producer goes on without idempotence). Batches whose outcome is
        unknown may already be stored."""
        if self.in_flight:
            raise UsageError(f"{self.in_flight} batches are still in flight")
        batches = [b for ps in self.partitions.values() for b in ps.pending]
        for batch in batches:
            batch.state = BatchState.DONE
            if self.on_done is not None:
                self.on_done(batch)
        self.partitions.clear()
        return batches

    def batches(self) -> Iterator[Batch]:
        """Every pending batch (in flight or waiting), partition by partition in sequence order."""
        for ps in self.partitions.values():
            yield from ps.pending
