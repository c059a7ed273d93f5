"""The bulk path's pieces without sockets: cutting values into batches, a queued chunk's cost to the garbage collector,
its messages made only when taken, fates kept compactly once settled (the messages let go), expiry and the
accounting."""

from __future__ import annotations

import gc

import pytest

from bruce.producer.bulk import Bulk, Chunk, split
from bruce.producer.message import Message, resolve_delivered
from bruce.producer.reasons import DiscardReason

from .test_producer_dispatcher import check, make, response, send_request


@pytest.mark.parametrize(
    ("sizes", "max_count", "max_bytes", "ranges"),
    [
        ([1] * 10, 4, 100, [(0, 4), (4, 8), (8, 10)]),
        ([1] * 3, 4, 100, [(0, 3)]),
        ([5, 5, 5, 5, 5], 10, 10, [(0, 2), (2, 4), (4, 5)]),
        ([3, 50, 3, 3], 10, 10, [(0, 1), (1, 2), (2, 4)]),  # a value over the byte limit goes alone
        ([], 4, 10, [(0, 0)]),
    ],
)
def test_split_cuts_by_count_and_by_bytes(sizes: list[int], max_count: int, max_bytes: int, ranges: list) -> None:
    assert split([b"x" * n for n in sizes], sizes, max_count, max_bytes) == ranges


def test_a_queued_chunk_costs_the_collector_one_object_whatever_its_length() -> None:
    d, _sink, _, _ = make({"t": [1]})
    values = [b"v%d" % i for i in range(5000)]
    pq = d.queue("t", 0)  # the queue exists from here on
    gc.collect()
    before = len(gc.get_objects())
    chunk = Chunk(values[:], sum(map(len, values)), 0)
    d.accepted += len(chunk)
    d.held_messages += len(chunk)
    pq.add_ready(chunk, chunk.size)  # type: ignore[arg-type]
    gc.collect()
    assert len(gc.get_objects()) - before <= 3  # the chunk, its values list and the ready entry: no object per value
    check(d)


def test_messages_are_made_when_taken_and_let_go_once_settled() -> None:
    d, _sink, _, _ = make({"t": [1]})
    chunk = Chunk([b"a", b"bb", b"ccc"], 6, 1_700_000_000_000)
    bulk = Bulk([chunk], 3)
    d.accepted = d.held_messages = 3
    d.held_bytes = 6
    pq = d.queue("t", 0)
    pq.add_ready(chunk, 6)  # type: ignore[arg-type]
    d.mark_ready(pq)
    assert chunk.messages is None and not bulk.done
    parts = send_request(d, 1)
    messages = chunk.messages
    assert messages is not None and [(m.key, m.value, m.timestamp, m.size) for m in messages] == [
        (None, b"a", 1_700_000_000_000, 1),
        (None, b"bb", 1_700_000_000_000, 2),
        (None, b"ccc", 1_700_000_000_000, 3),
    ]
    plain = Message(None, b"a", 1_700_000_000_000)  # a chunk's message is a Message like any other
    assert {s: getattr(messages[0], s) for s in Message.__slots__ if s != "_fate"} == {
        s: getattr(plain, s) for s in Message.__slots__ if s != "_fate"
    }
    d.on_response(1, parts, response(parts, 0, base=40), legacy=False)
    check(d)
    assert d.held_messages == 0 and d.delivered == 3
    assert bulk.done and bulk.results() == [(0, 40), (0, 41), (0, 42)] and bulk.failures() == []
    assert chunk.messages is None  # settled: fates in arrays, the messages let go
    assert [m.result() for m in messages] == [(0, 40), (0, 41), (0, 42)]  # the messages themselves agree


def test_a_chunk_that_expires_fails_every_value_in_order() -> None:
    d, _sink, _, _ = make({"t": [1]})
    chunks = [Chunk([b"a", b"b"], 2, 0), Chunk([b"c"], 1, 0)]
    bulk = Bulk(chunks, 3)
    pq = d.queue("t", 0)
    for chunk in chunks:
        d.accepted += len(chunk)
        d.held_messages += len(chunk)
        d.held_bytes += chunk.size
        pq.add_ready(chunk, chunk.size, since=1.0)  # type: ignore[arg-type]
    d.expire(1.0, "too old")
    check(d)
    assert d.held_messages == 0 and d.held_bytes == 0 and d.discarded == 3
    assert [(i, e.reason, e.detail) for i, e in bulk.failures()] == [
        (i, DiscardReason.MESSAGE_TIMEOUT, "too old") for i in range(3)
    ]
    assert bulk.delivered == 0


def test_settling_in_parts_counts_down_to_the_compact_fates() -> None:
    chunk = Chunk([b"a", b"b", b"c"], 3, 0)
    messages = chunk.unpack()
    assert chunk.unpack() is messages  # made once
    resolve_delivered(messages[:2], 4, 10)
    assert not chunk.done and chunk.messages is messages
    resolve_delivered(messages[2:], 5, 7)  # rerouted to another partition meanwhile
    assert chunk.done and list(chunk.partitions) == [4, 4, 5] and list(chunk.offsets) == [10, 11, 7]
