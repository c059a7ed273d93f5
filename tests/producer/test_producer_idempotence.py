"""The idempotence state (bruce.producer.idempotence.sequence_state): the producer id state machine over every (state,
input) pair, sequence assignment and wrapping, every error code's answer at the head of a partition and behind another
batch, draining, leader changes, epoch bumps and new producer ids; then a property test that drives the state against a
model of Kafka's broker-side checks (tests/fakebroker/sequences.py) with lost acknowledgements, cut connections and
error answers, and reads back every record exactly once, in order."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fakebroker.sequences import SequenceTable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bruce.producer.acks import Action, Failure, classify
from bruce.producer.idempotence.sequence_state import MAX_EPOCH, BatchState, Idempotence, PidState, next_sequence
from bruce.wire import errorcodes
from bruce.wire.errors import UsageError
from bruce.wire.protocol.init_producer_id import InitProducerIdRequest, InitProducerIdResponse

TP = ("t", 0)
OTHER = ("t", 1)
PID = 0x444


def granted(pid: int = PID, epoch: int = 0) -> InitProducerIdResponse:
    return InitProducerIdResponse(error_code=0, producer_id=pid, producer_epoch=epoch)


def assigned(**kwargs) -> Idempotence:
    """Producer id 0x444, epoch 0; TP and OTHER as if a first batch had been acknowledged there (so batches may be
    pipelined: see test_the_first_batch_of_an_epoch_goes_alone)."""
    idem = Idempotence(**kwargs)
    assert idem.init_request() == InitProducerIdRequest()
    assert idem.on_init_response(granted()) == []
    for tp in (TP, OTHER):
        idem.partition(tp).acknowledged = True
    return idem


def answer(idem: Idempotence, batch, code: int):
    return idem.on_answer(batch, classify(code, legacy=False, idempotent=True))


# ---------------------------------------------------------------- the producer id state machine


def _in_state(state: PidState) -> Idempotence:
    idem = Idempotence()
    if state is PidState.NONE:
        return idem
    idem.init_request()
    if state is PidState.ASSIGNED:
        idem.on_init_response(granted())
    elif state is PidState.FATAL:
        idem.on_init_response(InitProducerIdResponse(error_code=31))
    return idem


INPUTS: dict[str, Callable[[Idempotence], object]] = {
    "request": lambda idem: idem.init_request(),
    "granted": lambda idem: idem.on_init_response(granted(0x555, 3)),
    "retriable error": lambda idem: idem.on_init_response(InitProducerIdResponse(error_code=15)),
    "fatal error": lambda idem: idem.on_init_response(InitProducerIdResponse(error_code=31)),
    "transport failure": lambda idem: idem.on_init_failure(),
}
# (state, input) -> next state; every pair is listed
TRANSITIONS = {
    (PidState.NONE, "request"): PidState.REQUESTING,
    (PidState.NONE, "granted"): PidState.NONE,  # an answer nobody waits for is ignored
    (PidState.NONE, "retriable error"): PidState.NONE,
    (PidState.NONE, "fatal error"): PidState.NONE,
    (PidState.NONE, "transport failure"): PidState.NONE,
    (PidState.REQUESTING, "request"): PidState.REQUESTING,  # one request at a time
    (PidState.REQUESTING, "granted"): PidState.ASSIGNED,
    (PidState.REQUESTING, "retriable error"): PidState.NONE,
    (PidState.REQUESTING, "fatal error"): PidState.FATAL,
    (PidState.REQUESTING, "transport failure"): PidState.NONE,
    (PidState.ASSIGNED, "request"): PidState.ASSIGNED,
    (PidState.ASSIGNED, "granted"): PidState.ASSIGNED,
    (PidState.ASSIGNED, "retriable error"): PidState.ASSIGNED,
    (PidState.ASSIGNED, "fatal error"): PidState.ASSIGNED,
    (PidState.ASSIGNED, "transport failure"): PidState.ASSIGNED,
    (PidState.FATAL, "request"): PidState.FATAL,
    (PidState.FATAL, "granted"): PidState.FATAL,
    (PidState.FATAL, "retriable error"): PidState.FATAL,
    (PidState.FATAL, "fatal error"): PidState.FATAL,
    (PidState.FATAL, "transport failure"): PidState.FATAL,
}


def test_every_state_and_input_is_in_the_table() -> None:
    assert set(TRANSITIONS) == {(s, i) for s in PidState for i in INPUTS}


@pytest.mark.parametrize(("state", "event"), list(TRANSITIONS), ids=[f"{s.value}-{i}" for s, i in TRANSITIONS])
def test_producer_id_transitions(state: PidState, event: str) -> None:
    idem = _in_state(state)
    before = (idem.producer_id, idem.producer_epoch)
    result = INPUTS[event](idem)
    after = TRANSITIONS[(state, event)]
    assert idem.state is after
    if event == "request":
        assert (result == InitProducerIdRequest()) == (state is PidState.NONE)
    if after is PidState.ASSIGNED and state is PidState.REQUESTING:
        assert (idem.producer_id, idem.producer_epoch) == (0x555, 3)
    elif state is not PidState.NONE or event != "request":
        assert (idem.producer_id, idem.producer_epoch) == before
    if after is PidState.FATAL:
        assert idem.fatal_reason == "InitProducerId answered CLUSTER_AUTHORIZATION_FAILED(31)"
    assert idem.may_send(TP) == (after is PidState.ASSIGNED)


# ---------------------------------------------------------------- sequences


def test_batches_take_consecutive_sequences_per_partition() -> None:
    idem = assigned()
    a, b = idem.assign(TP, 3, records="a"), idem.assign(TP, 2)
    c = idem.assign(OTHER, 7)
    assert [(x.producer_id, x.producer_epoch, x.base_sequence, x.last_sequence) for x in (a, b, c)] == [
        (PID, 0, 0, 2),
        (PID, 0, 3, 4),
        (PID, 0, 0, 6),
    ]
    assert a.records == "a" and idem.in_flight == 3 and list(idem.batches()) == [a, b, c]


def test_sequences_wrap_after_int32_max_like_the_broker() -> None:
    assert next_sequence(2**31 - 1, 1) == 0
    assert next_sequence(2**31 - 3, 5) == 2
    idem = assigned()
    idem.partition(TP).next_sequence = 2**31 - 2
    batch = idem.assign(TP, 4)
    assert (batch.base_sequence, batch.last_sequence, idem.partition(TP).next_sequence) == (2**31 - 2, 1, 2)


def test_the_first_batch_of_an_epoch_goes_alone() -> None:
    """A broker without state for the producer accepts any sequence: a second batch could be stored ahead of a
    first one that failed, so nothing is pipelined to a partition before its first acknowledgement of the epoch."""
    idem = Idempotence()
    idem.init_request()
    idem.on_init_response(granted())
    first = idem.assign(TP, 1)
    assert not idem.may_send(TP)
    answer(idem, first, 0)
    idem.assign(TP, 1)
    assert idem.may_send(TP)  # pipelined from now on
    idem.bump_needed = True  # as a gap elsewhere would
    answer(idem, idem.partition(TP).pending[0], 0)
    idem.bump()
    idem.assign(TP, 1)
    assert not idem.may_send(TP)  # a new epoch: alone again


def test_at_most_max_in_flight_batches_per_partition() -> None:
    idem = assigned(max_in_flight=2)
    idem.assign(TP, 1)
    idem.assign(TP, 1)
    assert not idem.may_send(TP) and idem.may_send(OTHER)
    with pytest.raises(UsageError, match="no new batch"):
        idem.assign(TP, 1)
    for bad in (0, 6):
        with pytest.raises(UsageError, match="1 to 5"):
            Idempotence(max_in_flight=bad)
    with pytest.raises(UsageError, match="at least one record"):
        idem.assign(OTHER, 0)


# ---------------------------------------------------------------- every code, at the head and behind another batch

CODES = [0, *sorted(c for c in errorcodes.BY_CODE if c), 13_000]


def _expected(code: int, head: bool) -> tuple[Action, bool, bool, bool, BatchState]:
    """(action, counts an attempt, bump due, new producer id due, the batch's state) from the rules in plain words."""
    known = errorcodes.BY_CODE.get(code)
    if code in (0, 46):  # success; DUPLICATE_SEQUENCE_NUMBER: an earlier send was stored
        return Action.OK, False, False, False, BatchState.DONE
    if code in (45, 59, 47, 90):
        if not head:  # caused by the failure of an earlier batch: resend, no attempt lost
            return Action.RESEND, False, False, False, BatchState.WAITING
        # 59 at sequence 0 (the head batch here starts at 0) refuses the producer id itself: a new one is due
        return Action.RESEND, True, True, code in (47, 90, 59), BatchState.WAITING
    if known is not None and known.invalid_metadata:
        return Action.PAUSE, True, False, False, BatchState.WAITING
    if known is not None and known.retriable:
        return Action.RESEND, True, False, False, BatchState.WAITING
    return Action.DISCARD, False, True, False, BatchState.DONE  # given up: a gap in the sequence


@pytest.mark.parametrize("head", [True, False], ids=["head", "behind"])
@pytest.mark.parametrize("code", CODES)
def test_every_answer(code: int, head: bool) -> None:
    idem = assigned()
    first = idem.assign(TP, 2)
    batch = idem.assign(TP, 3) if not head else first
    if not head:
        assert answer(idem, first, 7).action is Action.RESEND  # the earlier batch failed first
    decision = answer(idem, batch, code)
    action, counts, bump, new_id, state = _expected(code, head)
    assert (decision.action, decision.counts_attempt, idem.bump_needed, idem.new_id_needed) == (
        action,
        counts,
        bump,
        new_id,
    )
    assert batch.state is state and decision.idempotent == (code != 0)
    assert not decision.possible_duplicate
    if state is BatchState.WAITING:
        assert (batch.base_sequence, batch.producer_epoch) == (0 if head else 2, 0)  # identity kept for the resend
    assert idem.state is (PidState.FATAL if code == 31 else PidState.ASSIGNED)


def test_unknown_producer_after_sequence_0_bumps_the_epoch_and_at_sequence_0_asks_a_new_producer_id() -> None:
    idem = assigned()
    first = idem.assign(TP, 2)
    assert answer(idem, first, 0).action is Action.OK
    later = idem.assign(TP, 1)  # sequence 2: a broker that lost the producer's state (Kafka 1.0-2.4)
    assert answer(idem, later, 59).action is Action.RESEND
    assert idem.bump_needed and not idem.new_id_needed
    idem.bump()
    assert (later.producer_epoch, later.base_sequence) == (1, 0)
    idem.resend(idem.to_resend(TP))
    assert answer(idem, later, 59).action is Action.RESEND  # at sequence 0 too: the producer id itself is refused
    assert idem.new_id_needed
    idem.bump()
    assert idem.state is PidState.NONE


@pytest.mark.parametrize("failure", list(Failure))
def test_transport_failures_keep_the_batch_for_a_resend_without_possible_duplicates(failure: Failure) -> None:
    decision = classify(failure, legacy=False, idempotent=True)
    assert decision.action is Action.PAUSE and not decision.possible_duplicate
    assert classify(failure, legacy=False).possible_duplicate  # without idempotence they are
    assert classify(failure, legacy=True, idempotent=True).possible_duplicate  # the 0.8 protocol cannot be idempotent
    idem = assigned()
    batch = idem.assign(TP, 2)
    idem.on_unknown_outcome(batch)
    assert batch.state is BatchState.WAITING and batch.unknown_outcome and not idem.bump_needed
    assert idem.to_resend(TP) is batch


# ---------------------------------------------------------------- draining, resends, leader changes


def test_a_failure_drains_the_partition_then_resends_in_order_with_the_same_sequences() -> None:
    idem = assigned()
    b1, b2, b3 = idem.assign(TP, 1), idem.assign(TP, 2), idem.assign(TP, 3)
    assert answer(idem, b1, 19).action is Action.RESEND  # NOT_ENOUGH_REPLICAS
    assert not idem.may_send(TP) and idem.may_send(OTHER)  # draining: b2 and b3 are still out
    assert answer(idem, b2, 45).counts_attempt is False  # out of order because b1 is missing
    assert not idem.may_send(TP)
    assert answer(idem, b3, 45).action is Action.RESEND
    assert idem.may_send(TP) and idem.to_resend(TP) is b1
    with pytest.raises(UsageError, match="no new batch"):
        idem.assign(TP, 1)  # new batches wait for the resends
    with pytest.raises(UsageError, match="may not be resent"):
        idem.resend(b2)  # lowest sequence first
    idem.resend(b1)
    assert idem.to_resend(TP) is b2  # pipelined again
    idem.resend(b2)
    idem.resend(b3)
    assert [(b.base_sequence, b.sends) for b in (b1, b2, b3)] == [(0, 2), (1, 2), (3, 2)]
    for b in (b1, b2, b3):
        assert answer(idem, b, 0).action is Action.OK
    assert idem.assign(TP, 1).base_sequence == 6 and not idem.bump_needed


def test_a_lost_acknowledgement_is_resent_with_the_same_identity_and_counts_no_duplicate() -> None:
    idem = assigned()
    batch = idem.assign(TP, 4)
    identity = (batch.producer_id, batch.producer_epoch, batch.base_sequence)
    idem.on_unknown_outcome(batch)
    idem.resend(batch)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == identity
    assert answer(idem, batch, 0).action is Action.OK  # the broker's answer for the copy it already holds
    assert not idem.bump_needed and idem.bumps == 0


def test_a_leader_change_waits_for_the_old_leaders_answers() -> None:
    idem = assigned()
    batch = idem.assign(TP, 1)
    idem.leader_changed(TP)
    idem.leader_changed(OTHER)  # nothing in flight there: nothing to wait for
    assert not idem.may_send(TP) and idem.may_send(OTHER)
    answer(idem, batch, 0)
    assert idem.may_send(TP) and idem.assign(TP, 1).base_sequence == 1  # same sequences on the new leader


def test_misuse_is_refused() -> None:
    idem = assigned()
    batch = idem.assign(TP, 1)
    with pytest.raises(UsageError, match="still in flight"):
        idem.give_up(batch)
    answer(idem, batch, 0)
    with pytest.raises(UsageError, match="not in flight"):
        answer(idem, batch, 0)
    idem.give_up(batch)  # already done: nothing happens
    assert not idem.bump_needed
    with pytest.raises(UsageError, match="no epoch bump"):
        idem.bump()


# ---------------------------------------------------------------- epoch bumps and new producer ids


def _gap(idem: Idempotence, settle_code: int = 45) -> tuple:
    """b1 discarded (a gap), b2 lost in transport (outcome unknown), b3 out of order, another partition's b4 waits;
    b2 is settled by a resend answered ``settle_code``. Returns the batches still pending."""
    b1, b2, b3 = idem.assign(TP, 1), idem.assign(TP, 2), idem.assign(TP, 3)
    b4 = idem.assign(OTHER, 5)
    assert answer(idem, b1, 10).action is Action.DISCARD  # MESSAGE_TOO_LARGE: given up
    assert idem.bump_needed and not idem.may_send(OTHER)  # no new batch anywhere
    idem.on_unknown_outcome(b2)
    answer(idem, b3, 45)
    answer(idem, b4, 7)  # REQUEST_TIMED_OUT: retriable
    assert not idem.bump_ready  # b2 may be stored: settle it under the current epoch first
    assert idem.may_send(TP) and idem.to_resend(TP) is b2 and idem.to_resend(OTHER) is None
    with pytest.raises(UsageError, match="no new batch"):
        idem.assign(OTHER, 1)
    idem.resend(b2)
    assert (b2.producer_epoch, b2.base_sequence) == (idem.producer_epoch, 1)
    answer(idem, b2, settle_code)  # 0: it was stored (a duplicate's answer); 45: it was not
    assert idem.bump_ready
    return (b2, b3, b4) if settle_code else (b3, b4)


@pytest.mark.parametrize("stored", [True, False], ids=["lost-send-was-stored", "lost-send-was-not"])
def test_an_epoch_bump_settles_unknown_outcomes_then_restarts_every_partition_at_zero(stored: bool) -> None:
    idem = assigned()
    pending = _gap(idem, settle_code=0 if stored else 45)
    assert idem.bump() == []  # nothing renumbered may be stored already: no possible duplicate
    assert (idem.state, idem.producer_epoch, idem.bumps, idem.bump_needed) == (PidState.ASSIGNED, 1, 1, False)
    assert [(b.producer_id, b.producer_epoch, b.base_sequence) for b in pending] == (
        [(PID, 1, 0), (PID, 1, 0)] if stored else [(PID, 1, 0), (PID, 1, 2), (PID, 1, 0)]
    )
    assert idem.partition(TP).next_sequence == (3 if stored else 5)
    assert idem.to_resend(TP) is pending[0] and idem.to_resend(OTHER) is pending[-1]
    idem.resend(pending[0])
    assert not idem.may_send(TP)  # the first batch of the new epoch goes alone


@pytest.mark.parametrize("why", ["no KIP-360 broker", "epoch exhausted"])
def test_a_new_producer_id_when_the_epoch_cannot_be_bumped(why: str) -> None:
    idem = assigned(epoch_bump=why != "no KIP-360 broker")
    if why == "epoch exhausted":
        idem.producer_epoch = MAX_EPOCH
    b2, b3, _ = _gap(idem)
    assert idem.bump() == []
    assert idem.state is PidState.NONE and not idem.may_send(TP)
    assert idem.init_request() == InitProducerIdRequest()
    assert idem.on_init_response(granted(0x999, 0)) == []
    assert [(b.producer_id, b.producer_epoch, b.base_sequence) for b in (b2, b3)] == [(0x999, 0, 0), (0x999, 0, 2)]
    assert (idem.ids_assigned, idem.bumps, idem.new_id_needed) == (2, 0, False)


def test_a_fenced_epoch_settles_nothing_and_reports_possible_duplicates() -> None:
    idem = assigned()
    lost = idem.assign(OTHER, 2)
    idem.on_unknown_outcome(lost)
    batch = idem.assign(TP, 2)
    assert answer(idem, batch, 47).counts_attempt  # INVALID_PRODUCER_EPOCH at the head: this epoch is dead
    assert idem.new_id_needed and idem.bump_ready and idem.to_resend(OTHER) is None
    assert idem.bump() == [] and idem.state is PidState.NONE
    idem.init_request()
    assert idem.on_init_response(granted(0x999, 0)) == [lost]  # may be stored under the old epoch
    assert (lost.producer_id, lost.base_sequence, lost.unknown_outcome) == (0x999, 0, False)
    assert (batch.producer_id, batch.base_sequence) == (0x999, 0)


def test_unknown_producer_id_at_the_head_bumps_and_clears_the_unknown_outcome() -> None:
    idem = assigned()
    assert answer(idem, idem.assign(TP, 1), 0).action is Action.OK
    batch = idem.assign(TP, 2)
    idem.on_unknown_outcome(batch)
    idem.resend(batch)
    assert answer(idem, batch, 59).counts_attempt  # the broker lost the producer's state (Kafka 1.0-2.4)
    assert not batch.unknown_outcome  # it checked for a duplicate first: it does not hold the batch
    assert idem.bump() == [] and batch.producer_epoch == 1


def test_fatal_on_produce_and_abandoning_every_batch() -> None:
    idem = assigned()
    b1, b2 = idem.assign(TP, 1), idem.assign(OTHER, 1)
    answer(idem, b1, 31)  # CLUSTER_AUTHORIZATION_FAILED: no idempotent writes for this client
    assert idem.state is PidState.FATAL and "CLUSTER_AUTHORIZATION_FAILED" in idem.fatal_reason
    with pytest.raises(UsageError, match="in flight"):
        idem.abandon_all()
    idem.on_unknown_outcome(b2)
    assert idem.abandon_all() == [b2] and b2.state is BatchState.DONE and not idem.partitions


# ---------------------------------------------------------------- against a model of the broker

FAULTS = ["ok", "lost ack", "cut before", "cut after", "retriable", "leader moved", "forget", "give up"]
RECORDS = {TP: range(0, 40), OTHER: range(100, 130)}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), max_in_flight=st.integers(1, 5), epoch_bump=st.booleans(), faults=st.integers(0, 40))
def test_exactly_once_in_order_against_the_broker_model(
    data: st.DataObject, max_in_flight: int, epoch_bump: bool, faults: int
) -> None:
    """Records go out in batches of 1-3 to two partitions over one connection; up to ``faults`` requests meet a fault
    drawn by hypothesis: the acknowledgement lost (stored, connection cut), the connection cut before the request
    arrives or after its answer was lost, a retriable error, a leader move, the broker forgetting the producer
    (retention, while nothing of the partition is pending), a batch given up after an error answer (a
    gap: epoch bump or new producer id). Every record not given up is read back exactly once and in order, and no
    batch is reported as a possible duplicate: batches of unknown outcome are settled before any bump."""
    broker = SequenceTable()
    logs: dict[tuple[str, int], list[int]] = {TP: [], OTHER: []}
    idem = Idempotence(max_in_flight=max_in_flight, epoch_bump=epoch_bump)
    queues = {tp: list(records) for tp, records in RECORDS.items()}
    given_up: set[int] = set()
    duplicates: set[int] = set()
    wire: list = []  # one connection: requests answered in order
    pids = iter(range(0x1000, 0x2000))
    for _ in range(3000):
        if idem.state is PidState.NONE:
            idem.init_request()
            duplicates.update(r for b in idem.on_init_response(granted(next(pids))) for r in b.records)
        if idem.bump_ready:
            duplicates.update(r for b in idem.bump() for r in b.records)
            continue
        for tp in (TP, OTHER):
            if idem.may_send(tp):
                batch = idem.to_resend(tp)
                if batch is not None:
                    idem.resend(batch)
                elif queues[tp]:
                    n = data.draw(st.integers(1, 3))
                    records, queues[tp] = queues[tp][:n], queues[tp][n:]
                    batch = idem.assign(tp, len(records), records)
                if batch is not None:
                    wire.append(batch)
        if not wire:
            if not any(queues.values()) and next(idem.batches(), None) is None:
                break
            continue
        batch = wire.pop(0)
        fault = "ok"
        if faults:
            fault = data.draw(st.sampled_from(FAULTS))
            faults -= fault != "ok"
        if fault in ("cut before", "cut after", "lost ack"):
            if fault == "lost ack":
                _store(broker, logs, batch)
            for b in [batch, *wire]:  # the connection is gone: everything on it has an unknown outcome
                idem.on_unknown_outcome(b)
            wire.clear()
            continue
        if fault == "forget" and not idem.partition(batch.tp).pending:
            broker.forget(*batch.tp)  # retention removed the producer's records: only while nothing of it is pending
        code = {"retriable": 19, "leader moved": 6, "give up": 19}.get(fault)  # NOT_ENOUGH_REPLICAS: not stored
        decision = answer(idem, batch, _store(broker, logs, batch) if code is None else code)
        assert decision.action is not Action.SEQUENCE and not decision.possible_duplicate
        if fault == "give up" and not batch.unknown_outcome:  # as a delivery attempt limit would
            idem.give_up(batch)
            given_up.update(batch.records)
    else:
        raise AssertionError("the exchange did not end")
    for tp, records in RECORDS.items():
        assert logs[tp] == [r for r in records if r not in given_up]
    assert not duplicates


def _store(broker: SequenceTable, logs: dict, batch) -> int:
    """The model broker's answer to ``batch``; stored unless refused or a duplicate."""
    topic, partition = batch.tp
    first, last = batch.base_sequence, batch.last_sequence
    code, original = broker.check(topic, partition, batch.producer_id, batch.producer_epoch, first, last)
    if code == 0 and original == -1:
        broker.stored(topic, partition, batch.producer_id, batch.producer_epoch, first, last, len(logs[batch.tp]))
        logs[batch.tp].extend(batch.records)
    return code


def test_a_broker_that_fences_our_own_bumps_gets_new_producer_ids_from_then_on() -> None:
    """tansu advertises InitProducerId v5 yet answers PRODUCER_FENCED to an epoch the client raised itself."""
    idem = assigned()
    _gap(idem)
    idem.bump()
    batch = idem.to_resend(TP)
    idem.resend(batch)
    decision = answer(idem, batch, 90)
    assert decision.action is Action.RESEND and not decision.counts_attempt  # our mistake, not the message's
    assert not idem.epoch_bump and idem.new_id_needed
    idem.bump()
    idem.init_request()
    idem.on_init_response(granted(0x999, 0))
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (0x999, 0, 0)
    idem.give_up(idem.to_resend(OTHER))  # another gap
    assert idem.bump() == [] and idem.state is PidState.NONE  # no more bumps of our own
