"""The ACK decision function: every Kafka error code on both paths, every transport failure."""

from __future__ import annotations

import pytest

from bruce.producer.acks import Action, Failure, classify
from bruce.producer.reasons import DiscardReason
from bruce.wire import errorcodes

ALL_CODES = [*sorted(errorcodes.BY_CODE), 13_000, -7]  # the table plus codes nobody documented


@pytest.mark.parametrize("code", ALL_CODES)
def test_legacy_path_is_exactly_bruces_table(code: int) -> None:
    decision = classify(code, legacy=True)
    if code == 0:
        assert decision.action is Action.OK
    elif code == 2:
        assert decision.action is Action.RESEND and decision.counts_attempt
    elif code in (3, 5, 6, 7):
        assert decision.action is Action.PAUSE and decision.counts_attempt and not decision.possible_duplicate
    else:
        assert decision.action is Action.DISCARD
        assert decision.reason == DiscardReason.KAFKA_ERROR_ACK
        assert not decision.counts_attempt


@pytest.mark.parametrize("code", ALL_CODES)
def test_modern_path_follows_each_codes_meaning(code: int) -> None:
    decision = classify(code, legacy=False)
    known = errorcodes.BY_CODE.get(code)
    if code == 0:
        assert decision.action is Action.OK
    elif known is not None and known.invalid_metadata:
        assert decision.action is Action.PAUSE and decision.counts_attempt
    elif known is not None and known.retriable:
        assert decision.action is Action.RESEND and decision.counts_attempt
    else:
        assert decision.action is Action.DISCARD and decision.reason == DiscardReason.KAFKA_ERROR_ACK
    expected_name = known.name if known is not None else f"UNDOCUMENTED_{code}"
    assert decision.name == ("NONE" if code == 0 else expected_name)


@pytest.mark.parametrize("failure", list(Failure))
@pytest.mark.parametrize("legacy", [True, False])
def test_transport_failures_pause_without_counting_an_attempt(failure: Failure, legacy: bool) -> None:
    decision = classify(failure, legacy=legacy)
    assert decision.action is Action.PAUSE
    assert not decision.counts_attempt and decision.possible_duplicate
    assert decision.name == failure.value


def test_the_two_paths_differ_where_the_meanings_differ() -> None:
    assert classify(7, legacy=True).action is Action.PAUSE  # Bruce pauses on REQUEST_TIMED_OUT
    assert classify(7, legacy=False).action is Action.RESEND  # retriable, metadata is fine
    assert classify(9, legacy=True).action is Action.DISCARD  # Bruce: REPLICA_NOT_AVAILABLE on produce → discard
    assert classify(9, legacy=False).action is Action.PAUSE
    assert classify(19, legacy=True).action is Action.DISCARD
    assert classify(19, legacy=False).action is Action.RESEND


@pytest.mark.parametrize("code", ALL_CODES)
def test_idempotent_path_is_the_modern_table_plus_the_sequence_codes(code: int) -> None:
    decision = classify(code, legacy=False, idempotent=True)
    modern = classify(code, legacy=False)
    if code == 46:  # DUPLICATE_SEQUENCE_NUMBER: an earlier send of the batch was stored
        assert decision.action is Action.OK and decision.name == "DUPLICATE_SEQUENCE_NUMBER"
    elif code in (45, 47, 59, 90):  # the partition's sequence state decides (bruce.producer.idempotence.sequence_state)
        assert decision.action is Action.SEQUENCE and decision.name == modern.name
    else:
        assert (decision.action, decision.counts_attempt, decision.reason, decision.name) == (
            modern.action,
            modern.counts_attempt,
            modern.reason,
            modern.name,
        )
    assert not decision.possible_duplicate
    assert classify(code, legacy=True, idempotent=True) == classify(code, legacy=True)  # 0.8: never idempotent
