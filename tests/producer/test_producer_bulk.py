"""The bulk path's pieces without sockets: cutting values into batches, a queued chunk's cost to the garbage collector,
its messages made only when taken, fates kept compactly once settled (the messages let go), expiry and the
accounting."""

from __future__ import annotations

import gc

import pytest

from bruce.producer.bulk import Bulk, Chunk, split
from bruce.producer.dispatch.responses import RequestOutcomes
from bruce.producer.message import Message, resolve_delivered
from bruce.producer.queues.request import NO_COMPRESSION, encode_part
from bruce.producer.reasons import DiscardReason
from bruce.wire.recordbatch import build_record_batch

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
    assert split(sizes, max_count, max_bytes) == ranges


def test_split_counts_each_values_overhead() -> None:
    assert split([10] * 6, 100, 45, overhead=5) == [(0, 3), (3, 6)]


def test_a_queued_chunk_costs_the_collector_one_object_whatever_its_length() -> None:
    d, _sink, _, _ = make({"t": [1]})
    values = [b"v%d" % i for i in range(5000)]
    pq = d.queue("t", 0)  # the queue exists from here on
    gc.collect()
    before = len(gc.get_objects())
    chunk = Chunk(values[:], sum(map(len, values)), 0)
    d.ledger.accepted += len(chunk)
    d.ledger.held_messages += len(chunk)
    pq.add_ready(chunk, chunk.size)  # type: ignore[arg-type]
    gc.collect()
    assert len(gc.get_objects()) - before <= 3  # the chunk, its values list and the ready entry: no object per value
    check(d)


def queued(d, *chunks: Chunk, since: float = 0.0):
    pq = d.queue("t", 0)
    for chunk in chunks:
        d.ledger.accepted += len(chunk)
        d.ledger.held_messages += len(chunk)
        d.ledger.held_bytes += chunk.size
        pq.add_ready(chunk, chunk.size, since)  # type: ignore[arg-type]
    d.mark_ready(pq)
    return pq


def test_a_chunk_travels_whole_encoded_column_by_column_and_settles_in_one_step() -> None:
    d, _sink, _, _ = make({"t": [1]})
    chunk = Chunk([b"a", b"bb", b"ccc"], 6, 1_700_000_000_000)
    bulk = Bulk([chunk], 3)
    queued(d, chunk)
    parts = send_request(d, 1)
    assert parts[0].messages is chunk and not chunk.made  # no message made
    data, _ = encode_part(parts[0], NO_COMPRESSION, magic=2, zstd=True, max_bytes=10**6, empty_as_null=False)
    records = [(None, v, 1_700_000_000_000, None) for v in (b"a", b"bb", b"ccc")]
    assert data == build_record_batch(records)
    RequestOutcomes(d).on_response(1, parts, response(parts, 0, base=40), legacy=False)
    check(d)
    assert d.ledger.held_messages == 0 and d.ledger.delivered == 3 and not chunk.made
    assert bulk.done and bulk.results() == [(0, 40), (0, 41), (0, 42)] and bulk.failures() == []
    assert [m.result() for m in chunk] == [(0, 40), (0, 41), (0, 42)]  # read as messages: made with their fates


def test_a_resent_chunk_becomes_messages_that_report_to_it() -> None:
    d, _sink, _, _ = make({"t": [1]})
    chunk = Chunk([b"a", b"bb"], 3, 5)
    bulk = Bulk([chunk], 2)
    queued(d, chunk)
    parts = send_request(d, 1)
    # REQUEST_TIMED_OUT: resent, an attempt counted
    RequestOutcomes(d).on_response(1, parts, response(parts, 7), legacy=False)
    check(d)
    assert chunk.made and [m.attempts for m in chunk] == [1, 1] and not bulk.done
    plain = Message(None, b"a", 5)  # a chunk's message is a Message like any other
    assert {s: getattr(chunk[0], s) for s in Message.__slots__ if s not in ("_fate", "attempts")} == {
        s: getattr(plain, s) for s in Message.__slots__ if s not in ("_fate", "attempts")
    }
    d.queue("t", 0).not_before = 0.0
    parts = send_request(d, 1)
    assert type(parts[0].messages) is list and len(parts[0].messages) == 2
    RequestOutcomes(d).on_response(1, parts, response(parts, 0, base=9), legacy=False)
    check(d)
    assert bulk.results() == [(0, 9), (0, 10)] and not chunk.made  # settled: the messages let go


def test_a_full_chunk_travels_alone_even_with_more_ready_after_it() -> None:
    d, _sink, _, _ = make({"t": [1]})
    full, rest = Chunk([b"a", b"b"], 2, 5, full=True), Chunk([b"c"], 1, 6)
    queued(d, full, rest)
    parts = send_request(d, 1)
    assert parts[0].messages is full and not full.made
    RequestOutcomes(d).on_response(1, parts, response(parts, 0, base=0), legacy=False)
    parts = send_request(d, 1)
    assert parts[0].messages is rest  # the last one: nothing after it to join
    RequestOutcomes(d).on_response(1, parts, response(parts, 0, base=2), legacy=False)
    check(d)
    assert Bulk([full, rest], 3).results() == [(0, 0), (0, 1), (0, 2)]


def test_a_small_chunk_joins_the_batches_after_it_in_one_request() -> None:
    d, _sink, _, _ = make({"t": [1]})
    first, second = Chunk([b"a"], 1, 5), Chunk([b"b", b"c"], 2, 6)
    queued(d, first, second)
    parts = send_request(d, 1)
    assert [m.value for m in parts[0].messages] == [b"a", b"b", b"c"]  # one record batch, made of messages
    RequestOutcomes(d).on_response(1, parts, response(parts, 0, base=0), legacy=False)
    assert Bulk([first, second], 3).results() == [(0, 0), (0, 1), (0, 2)]


def test_a_chunk_that_expires_fails_every_value_in_order() -> None:
    d, _sink, _, _ = make({"t": [1]})
    chunks = [Chunk([b"a", b"b"], 2, 0), Chunk([b"c"], 1, 0)]
    bulk = Bulk(chunks, 3)
    queued(d, *chunks, since=1.0)
    d.expire(1.0, "too old")
    check(d)
    assert d.ledger.held_messages == 0 and d.ledger.held_bytes == 0 and d.ledger.discarded == 3
    assert [(i, e.reason, e.detail) for i, e in bulk.failures()] == [
        (i, DiscardReason.MESSAGE_TIMEOUT, "too old") for i in range(3)
    ]
    assert bulk.delivered == 0


def test_settling_in_parts_counts_down_to_the_compact_fates() -> None:
    chunk = Chunk([b"a", b"b", b"c"], 3, 0)
    messages = chunk.unpack()
    assert chunk.unpack() is messages  # made once
    resolve_delivered(messages[:2], 4, 10)
    assert not chunk.done and chunk.made
    resolve_delivered(messages[2:], 5, 7)  # rerouted to another partition meanwhile
    assert chunk.done and list(chunk.partitions) == [4, 4, 5] and list(chunk.offsets) == [10, 11, 7]
