"""The fake broker's sequence rules (tests/fakebroker/sequences.py), one per rule of Kafka's broker: duplicates of the
last 5 batches, epochs, gaps, wrapping, producers without state, and the older brokers' answers it can play."""

from __future__ import annotations

from fakebroker.sequences import SequenceTable

PID = 0x444


def _table(**kwargs) -> SequenceTable:
    """One producer that stored batches 0-1, 2-4, ..., five batches of sequences 0-11 at offsets 100, 102, ..."""
    table = SequenceTable(**kwargs)
    first = 0
    for i, last in enumerate((1, 4, 6, 9, 11)):
        assert table.check("t", 0, PID, 3, first, last) == (0, -1)
        table.stored("t", 0, PID, 3, first, last, 100 + 2 * i)
        first = last + 1
    return table


def test_the_next_sequence_is_accepted_and_a_gap_or_an_old_resend_is_out_of_order() -> None:
    table = _table()
    assert table.check("t", 0, PID, 3, 12, 12) == (0, -1)
    assert table.check("t", 0, PID, 3, 13, 13) == (45, -1)  # a gap
    table.stored("t", 0, PID, 3, 12, 12, 110)  # now 0-1 leaves the last 5 batches
    assert table.check("t", 0, PID, 3, 0, 1) == (45, -1)  # a resend older than the window
    assert table.check("t", 0, PID, 3, 2, 4) == (0, 102)  # still remembered: the original offset


def test_duplicates_of_the_last_five_batches_answer_the_original_offset() -> None:
    table = _table()
    assert [table.check("t", 0, PID, 3, f, last)[1] for f, last in ((0, 1), (2, 4), (5, 6), (7, 9), (10, 11))] == [
        100,
        102,
        104,
        106,
        108,
    ]
    assert table.check("t", 0, PID, 3, 0, 2) == (45, -1)  # same start, other end: not the stored batch
    assert _table(duplicate_error=True).check("t", 0, PID, 3, 5, 6) == (46, -1)  # Kafka 0.11.0


def test_epochs() -> None:
    table = _table()
    assert table.check("t", 0, PID, 2, 12, 12) == (47, -1)  # an older epoch
    assert table.check("t", 0, PID, 2, 0, 1) == (47, -1)  # not a duplicate either: the epoch differs
    assert table.check("t", 0, PID, 4, 12, 12) == (45, -1)  # a new epoch starts at 0
    assert table.check("t", 0, PID, 4, 0, 3) == (0, -1)
    table.stored("t", 0, PID, 4, 0, 3, 120)
    assert table.check("t", 0, PID, 4, 4, 4) == (0, -1) and table.check("t", 0, PID, 3, 12, 12) == (47, -1)


def test_sequences_wrap_and_state_is_per_producer_and_partition() -> None:
    table = SequenceTable()
    table.stored("t", 0, PID, 0, 2**31 - 2, 2**31 - 1, 0)
    assert table.check("t", 0, PID, 0, 0, 5) == (0, -1)  # after 2**31 - 1 comes 0
    assert table.check("t", 1, PID, 0, 77, 80) == (0, -1)  # no state on that partition: any sequence
    assert table.check("t", 0, PID + 1, 0, 77, 80) == (0, -1)  # nor for that producer
    assert table.check("t", 0, -1, -1, -1, -1) == (0, -1)  # not idempotent: not checked


def test_a_forgotten_producer_may_continue_anywhere_or_is_unknown_on_older_brokers() -> None:
    table = _table()
    table.forget("t", 0)
    assert table.check("t", 0, PID, 3, 40, 41) == (0, -1)  # Kafka 2.5+
    old = _table(unknown_producer_error=True)
    old.forget("t", 0)
    assert old.check("t", 0, PID, 3, 40, 41) == (59, -1)  # Kafka 1.0-2.4: UNKNOWN_PRODUCER_ID
    assert old.check("t", 0, PID, 3, 0, 1) == (0, -1)  # unless it starts at 0
