"""Completion tracking: a segment becomes removable exactly when it is sealed and all of its messages are done."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bruce.proxy.spool.tracker import Tracker


def _three() -> tuple[Tracker, list]:
    t = Tracker()
    a = t.add("a", 100, 1)
    t.append_run(a, 100, 10)
    b = t.add("b", 110, 2)
    t.append_run(b, 110, 5)
    c = t.add("c", 200, 3)  # a gap: the segments between were deleted
    t.append_run(c, 200, 3)
    return t, [a, b, c]


def test_segments_go_only_when_sealed_and_done() -> None:
    t, (a, b, _) = _three()
    assert t.done_run(100, 10) == []  # all done, but a is not sealed yet
    assert t.seal(a) == [a]
    assert t.seal(b) == []
    assert t.done_many([110, 111, 112, 113]) == []
    assert t.oldest_pending() is b
    assert t.done_many([114, 200]) == [b]
    assert [s.name for s in t] == ["c"]
    assert t.pending() == 2


def test_double_done_and_unknown_sequences_change_nothing() -> None:
    t, (a, _, _) = _three()
    t.seal(a)
    assert t.done_many([100, 100, 99, 150, 203, 5000]) == []
    assert a.pending == 9
    assert t.unknown == 5
    assert t.done_run(101, 9) == [a]
    assert t.done_many([105]) == []  # a is gone: its sequences are unknown now
    assert t.unknown == 6


def test_extend_marks_gaps_done() -> None:
    t = Tracker()
    s = t.add("s", 10, 0)
    t.extend(s, [10, 11, 14, 15])  # 12 and 13 were corrupt
    assert (s.size, s.pending) == (6, 4)
    t.seal(s)
    assert t.done_many([12, 13]) == []
    assert t.unknown == 2
    assert t.done_many([10, 11, 14, 15]) == [s]


def test_ranges_must_not_overlap_or_go_back() -> None:
    t = Tracker()
    s = t.add("s", 10, 0)
    t.append_run(s, 10, 5)
    with pytest.raises(ValueError):
        t.add("overlap", 12, 0)
    with pytest.raises(ValueError):
        t.append_run(s, 16, 1)
    with pytest.raises(ValueError):
        t.extend(s, [14])


@settings(max_examples=100, deadline=None)
@given(sizes=st.lists(st.integers(1, 40), min_size=1, max_size=6), data=st.data())
def test_any_order_of_fates_removes_each_segment_once_when_its_last_message_is_done(sizes: list[int], data) -> None:
    t = Tracker()
    segments = []
    base = 0
    for i, n in enumerate(sizes):
        s = t.add(str(i), base, 0)
        t.append_run(s, base, n)
        segments.append((s, set(range(base, base + n))))
        base += n + 3
    for s, _ in segments:
        t.seal(s)
    order = data.draw(st.permutations([seq for _, seqs in segments for seq in seqs]))
    removed = []
    left = {s.name: set(seqs) for s, seqs in segments}
    for seq in order:
        gone = t.done_many([seq])
        for s, seqs in segments:
            if seq in seqs:
                left[s.name].discard(seq)
                assert gone == ([s] if not left[s.name] else [])
        removed += gone
    assert sorted(s.name for s in removed) == sorted(left)
    assert len(t) == 0 and t.unknown == 0


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.tuples(st.integers(0, 20), st.integers(1, 70)), min_size=1, max_size=4),
    runs=st.lists(st.tuples(st.integers(0, 300), st.integers(0, 90)), max_size=8),  # runs of whole bitmap bytes too
    sealed=st.booleans(),
)
def test_done_run_equals_done_many_over_the_run(sizes: list[tuple[int, int]], runs: list, sealed: bool) -> None:
    def build() -> Tracker:
        t = Tracker()
        base = 0
        for i, (gap, n) in enumerate(sizes):
            base += gap
            s = t.add(str(i), base, 0)
            t.append_run(s, base, n)
            base += n
            if sealed:
                t.seal(s)
        return t

    by_run, by_one = build(), build()
    for first, count in runs:
        a = [s.name for s in by_run.done_run(first, count)]
        b = [s.name for s in by_one.done_many(range(first, first + count))]
        assert a == b
        assert by_run.unknown == by_one.unknown
        state = [[(s.name, s.pending, bytes(s.done)) for s in t] for t in (by_run, by_one)]
        assert state[0] == state[1]
