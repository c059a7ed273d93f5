"""The reassembly buffer: order, duplicates, expiry, checksums, inconsistent fragments, its memory bound, and the
report of every message it drops (begun = delivered + dropped + pending)."""

from __future__ import annotations

import gc
import random
import struct
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bruce.proxy.plog.defrag import (
    ENTRY_OVERHEAD,
    FRAGMENT_OVERHEAD,
    INCOMPLETE,
    INVALID_CHECKSUM,
    INVALID_FRAGMENT,
    TOO_LARGE,
    Defragmenter,
    Reassembled,
)
from bruce.proxy.plog.stats import PlogStats
from bruce.wire.plog import Fragment, build_fragment, build_fragments, murmur3_32, parse_packet

A = ("127.0.0.1", 40001)
B = ("127.0.0.1", 40002)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Drops(list):
    """What ``on_drop`` reported: ``(what, sample)`` pairs."""

    def __call__(self, what: str, sample: bytes) -> None:
        self.append((what, bytes(sample)))

    def kinds(self) -> list[str]:
        return [what for what, _ in self]


def make(capacity: int = 1 << 20, expiry: float = 10.0) -> tuple[Defragmenter, PlogStats, Clock]:
    stats, clock = PlogStats("test"), Clock()
    d = Defragmenter(stats, capacity=capacity, expiry=expiry, clock=clock, on_drop=Drops())
    return d, stats, clock


def drops(d: Defragmenter) -> Drops:
    return d._on_drop  # type: ignore[return-value]


def pieces(message: bytes, size: int, message_id: int = 0x444, **tags) -> list[Fragment]:
    return [parse_packet(p) for p in build_fragments(message, message_id=message_id, fragment_size=size, **tags)]


MESSAGE = bytes(range(256)) * 4 + b"end"  # 1027 bytes: 11 fragments of 100


def test_in_order() -> None:
    d, stats, _ = make()
    parts = pieces(MESSAGE, 100, topic="clicks", partition_key="u7")
    results = [d.add(A, f) for f in parts]
    assert results[:-1] == [None] * 10
    assert results[-1] == Reassembled(MESSAGE, ("kt:clicks", "pk:u7"), 11)
    assert (stats.defrag_misses, stats.defrag_hits, stats.v0_multipart_messages) == (1, 10, 1)
    assert (len(d), d.used) == (0, 0)


def test_out_of_order_and_duplicated() -> None:
    d, stats, _ = make()
    parts = pieces(MESSAGE, 100, topic="clicks")
    order = parts[:]
    random.Random(7).shuffle(order)
    closer = order.pop()
    sequence = order[:4] + order[:3] + order[4:] + [closer]  # three repeats before the message completes
    results = [d.add(A, f) for f in sequence]
    assert results[:-1] == [None] * (len(sequence) - 1)
    assert results[-1] == Reassembled(MESSAGE, ("kt:clicks",), 11)
    assert (stats.defrag_duplicates, stats.v0_multipart_messages, len(d)) == (3, 1, 0)


def test_duplicates_before_completion_are_counted_and_ignored() -> None:
    d, stats, _ = make()
    first, second, third = pieces(b"abcdefghi", 3)
    assert d.add(A, first) is None
    assert d.add(A, first) is None
    assert d.add(A, second) is None
    assert d.add(A, third).message == b"abcdefghi"
    assert stats.defrag_duplicates == 1


def test_single_fragment_messages_bypass_the_buffer() -> None:
    d, stats, _ = make()
    (only,) = pieces(b"short", 100, topic="t")
    assert d.add(A, only) == Reassembled(b"short", ("kt:t",), 1)
    assert (stats.defrag_misses, stats.defrag_hits, len(d)) == (0, 0, 0)


def test_messages_are_keyed_by_sender_and_id() -> None:
    d, _, _ = make()
    one, two = pieces(b"aaaabbbb", 4, message_id=1), pieces(b"ccccdddd", 4, message_id=1)
    assert d.add(A, one[0]) is None
    assert d.add(B, two[0]) is None
    assert d.add(B, two[1]).message == b"ccccdddd"
    assert d.add(A, one[1]).message == b"aaaabbbb"


def test_missing_fragment_expires_and_is_counted() -> None:
    d, stats, clock = make(expiry=10.0)
    parts = pieces(MESSAGE, 100)
    for f in parts[:5] + parts[6:]:
        d.add(A, f)
    clock.now += 9.9
    assert d.expire() == 0
    d.add(A, parts[7])  # a duplicate touches the message: expiry counts from the last fragment, as in plog
    clock.now += 9.9
    assert d.expire() == 0
    clock.now += 0.2
    assert d.expire() == 1
    assert (len(d), d.used, stats.defrag_expired, stats.defrag_evictions) == (0, 0, 1, 1)
    row = stats.dropped_fragments[(11 - 1).bit_length()]
    assert row == [0, 0, 0, 1, 0]  # fragment 5 is in bucket 3 (indices 4-7)
    assert drops(d) == [(INCOMPLETE, parts[0].payload)]  # reported once, with its first bytes
    assert d.add(A, parts[5]) is None  # the late fragment starts over
    assert (d.begun, len(d)) == (2, 1)


def test_bad_checksum_is_not_delivered() -> None:
    d, stats, _ = make()
    parts = pieces(MESSAGE, 100)
    parts[4] = Fragment(*[getattr(parts[4], f) for f in ("fragment_count", "fragment_index", "fragment_size")],
                        parts[4].message_id, parts[4].total_length, parts[4].checksum, (), b"X" * 100)  # fmt: skip
    assert [d.add(A, f) for f in parts] == [None] * 11
    assert stats.v0_invalid_checksum[(11 - 1).bit_length()] == 1
    assert (stats.v0_multipart_messages, len(d)) == (0, 0)
    (single,) = pieces(b"solo", 10)
    bad = Fragment(1, 0, 10, 1, 4, single.checksum ^ 1, (), b"solo")
    assert d.add(A, bad) is None
    assert stats.v0_invalid_checksum[0] == 1
    corrupted = MESSAGE[:400] + b"X" * 100 + MESSAGE[500:]
    assert drops(d) == [(INVALID_CHECKSUM, corrupted), (INVALID_CHECKSUM, b"solo")]
    assert d.begun == 2


def test_inconsistent_fragments_are_counted_and_ignored() -> None:
    d, stats, _ = make()
    parts = pieces(MESSAGE, 100)
    assert d.add(A, parts[0]) is None
    f = parts[1]
    for wrong in (
        Fragment(12, 1, 100, f.message_id, 1100, f.checksum, (), f.payload),  # another count
        Fragment(11, 1, 100, f.message_id, f.total_length, f.checksum ^ 1, (), f.payload),  # another checksum
        Fragment(11, 1, 100, f.message_id, 1030, f.checksum, (), f.payload),  # another total length
        Fragment(11, 1, 100, f.message_id, f.total_length, f.checksum, (), f.payload[:99]),  # short payload
        Fragment(11, 10, 100, f.message_id, f.total_length, f.checksum, (), b"x" * 100),  # last one too long
    ):
        assert d.add(A, wrong) is None
    assert sum(map(sum, stats.v0_invalid_fragments)) == 5
    assert stats.v0_invalid_fragments[4][1] == 4  # counts 11 and 12: row bucket(count - 1) = 4; index 1: column 1
    assert stats.v0_invalid_fragments[4][4] == 1
    assert [d.add(A, p) for p in parts[1:]][-1].message == MESSAGE  # the real ones still complete it
    wrong_single = Fragment(1, 0, 10, 9, 5, murmur3_32(b"abcd"), (), b"abcd")
    assert d.add(A, wrong_single) is None  # a lone fragment must carry the whole total length
    assert stats.v0_invalid_fragments[0][0] == 1
    assert drops(d).kinds() == [INVALID_FRAGMENT] * 6  # each bad packet once; the message itself was delivered
    assert d.begun == 1


# ---------------------------------------------------------------- senders written for plog


def test_plog_ruby_client_packets() -> None:
    """plog-ruby packs 'CCS>S>S>L>l>L>x4a*' with its chunk size (64000 by default) as the per-fragment length."""
    d, _, _ = make()
    message = b"r" * 150_000
    chunk = 64000
    chunks = [message[i : i + chunk] for i in range(0, len(message), chunk)]
    packets = [
        struct.pack(">BBHHHIiI4x", 0, 1, len(chunks), i, chunk, 0xFFFFFFFF, len(message), murmur3_32(message)) + c
        for i, c in enumerate(chunks)
    ]
    results = [d.add(A, parse_packet(p)) for p in reversed(packets)]
    assert results[-1] == Reassembled(message, (), 3)
    small = struct.pack(">BBHHHIiI4x", 0, 1, 1, 0, chunk, 1, 5, murmur3_32(b"hello")) + b"hello"
    assert d.add(A, parse_packet(small)).message == b"hello"


def test_plog_java_fragmenter_packets() -> None:
    """plog's Java Fragmenter writes tags on the last fragment only and counts them against its room, so the last
    fragment's payload can even be empty."""
    d, _, _ = make()
    room = 100  # maxFragmentSize 124 minus the 24-byte header
    message = b"j" * 200
    tags = b"kt:events\0pk:abc"
    count = -(-(len(message) + len(tags)) // room)  # 3: the tags push the message into a third fragment

    def header(index: int, tags_length: int) -> bytes:
        return struct.pack(">BBHHHIiIH2x", 0, 1, count, index, room, 77, len(message), murmur3_32(message), tags_length)

    packets = [header(0, 0) + message[:100], header(1, 0) + message[100:200], header(2, len(tags)) + tags]
    assert [d.add(A, parse_packet(p)) for p in packets][-1] == Reassembled(message, ("kt:events", "pk:abc"), 3)


# ---------------------------------------------------------------- the memory bound


def test_a_message_that_can_never_fit_is_refused_at_once() -> None:
    d, stats, _ = make(capacity=64 * 1024)
    first = Fragment(1000, 3, 65000, 1, 65000 * 1000, 0, (), b"x" * 65000)
    assert d.add(A, first) is None
    assert (len(d), d.used, stats.defrag_too_large, stats.defrag_evictions) == (0, 0, 1, 1)
    assert stats.dropped_fragments[(999).bit_length()] == [1, 1, 1, 4, 8, 16, 32, 64, 128, 256, 488]
    assert drops(d) == [(TOO_LARGE, b"x" * 65000)]


def test_least_recently_touched_messages_make_room() -> None:
    d, stats, _ = make(capacity=3 * (ENTRY_OVERHEAD + 1000 + FRAGMENT_OVERHEAD) + 100)  # room for 3 first fragments
    messages = [pieces(bytes([i]) * 3000, 1000, message_id=i) for i in range(6)]
    for parts in messages:
        d.add(A, parts[0])
    assert stats.defrag_evictions == 6 - len(d) > 0
    d.add(A, messages[5][1])
    assert d.add(A, messages[5][2]).message == bytes([5]) * 3000  # the newest survived
    assert d.add(A, messages[0][1]) is None and d.add(A, messages[0][2]) is None  # the oldest was dropped
    assert d.used <= d.capacity
    assert set(drops(d).kinds()) == {INCOMPLETE} and len(drops(d)) >= 3


def test_clear_reports_every_pending_message() -> None:
    d, stats, _ = make()
    for i in range(3):
        d.add(A, pieces(bytes([65 + i]) * 30, 10, message_id=i)[1])
    d.clear()
    assert drops(d) == [(INCOMPLETE, b"A" * 10), (INCOMPLETE, b"B" * 10), (INCOMPLETE, b"C" * 10)]
    assert (len(d), d.used, d.begun, stats.defrag_evictions) == (0, 0, 3, 3)


def test_later_bigger_tags_cannot_push_past_capacity() -> None:
    d, stats, _ = make(capacity=8192)
    d.add(A, Fragment(2, 0, 1000, 1, 2000, 0, (), b"a" * 1000))
    d.add(A, Fragment(2, 1, 1000, 1, 2000, 0, ("kt:" + "t" * 60000,), b"b" * 1000))
    assert d.used <= d.capacity
    assert (len(d), stats.defrag_too_large) == (0, 1)
    assert drops(d) == [(TOO_LARGE, b"a" * 1000)]


adversarial = st.lists(
    st.builds(
        Fragment,
        fragment_count=st.integers(2, 3000),
        fragment_index=st.integers(0, 1),
        fragment_size=st.integers(0, 1500),
        message_id=st.integers(0, 50),
        total_length=st.just(-1),  # replaced below so the header is consistent
        checksum=st.integers(0, 3),
        tags=st.lists(st.text(max_size=300).filter(lambda t: t and "\0" not in t), max_size=2).map(tuple),
        payload=st.just(b""),
    ),
    max_size=300,
)


@settings(max_examples=150, deadline=None)
@given(adversarial, st.lists(st.sampled_from([0.0, 0.0, 0.5, 11.0]), min_size=1))
def test_no_sequence_exceeds_the_capacity(fragments: list[Fragment], steps: list[float]) -> None:
    d, _, clock = make(capacity=32 * 1024)
    delivered = 0
    for i, f in enumerate(fragments):
        index = min(f.fragment_index, f.fragment_count - 1)
        total = f.fragment_size * f.fragment_count
        payload = b"p" * (f.fragment_size if index < f.fragment_count - 1 else total - f.fragment_size * index)
        fragment = Fragment(f.fragment_count, index, f.fragment_size, f.message_id, total, f.checksum, f.tags, payload)
        delivered += d.add((A[0], 40000 + i % 3), fragment) is not None
        clock.now += steps[i % len(steps)]
        assert d.used <= d.capacity
        assert d.used == sum(e.charge for e in d._pending.values())
        dropped = sum(1 for what in drops(d).kinds() if what != INVALID_FRAGMENT)
        assert d.begun == delivered + dropped + len(d)  # every message ends exactly once


def _fill(d: Defragmenter, make_fragment, n: int) -> int:
    """Feed ``n`` fragments; return the bytes still allocated afterwards (tracemalloc)."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for i in range(n):
            d.add(("127.0.0.1", 40000 + i % 1000), parse_packet(make_fragment(i)))
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    "shape",
    [
        pytest.param(lambda i: Fragment(2, 0, 1, i, 2, 0, (), b"A"), id="tiny-messages"),
        pytest.param(lambda i: Fragment(5000, i % 5000, 1, i // 4000, 5000, 0, (), b"x"), id="one-byte-fragments"),
        pytest.param(lambda i: Fragment(7000, i % 7000, 0, i // 6000, 0, 0, (), b""), id="empty-fragments"),
        pytest.param(
            lambda i: Fragment(2, 0, 10, i, 20, 0, ("kt:" + "é" * 200, "pk:" + "\U0001f600" * 3), b"0123456789"),
            id="wide-tags",
        ),
        pytest.param(lambda i: Fragment(3, i % 2, 30000, i // 2, 90000, 0, (), b"y" * 30000), id="large-fragments"),
    ],
)
def test_real_memory_stays_within_capacity(shape) -> None:
    stats = PlogStats("test")
    d = Defragmenter(stats, capacity=256 * 1024, clock=Clock(), on_drop=lambda what, sample: None)
    held = _fill(d, lambda i: build_fragment(shape(i)), 5000)
    assert stats.defrag_evictions > 0  # the buffer was full and had to drop
    assert d.used <= d.capacity
    assert held <= d.capacity, f"{held} bytes held for a {d.capacity}-byte buffer ({len(d)} messages)"


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 0xFFFF).flatmap(lambda n: st.tuples(st.just(n), st.sets(st.integers(0, n - 1), max_size=50))))
def test_dropped_fragment_buckets_match_counting_one_by_one(case) -> None:
    count, received = case
    stats = PlogStats("test")
    stats.dropped(count, received)
    expected = [0] * ((count - 1).bit_length() + 1)
    for index in range(count):
        if index not in received:
            expected[index.bit_length()] += 1
    assert stats.dropped_fragments[(count - 1).bit_length()] == expected
    assert sum(map(sum, stats.dropped_fragments)) == count - len(received)
