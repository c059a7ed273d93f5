"""Partition queues (take, split, requeue order) and request assembly/encoding (Bruce's rules,
docs/bruce-compatibility.md#produce-requests)."""

from __future__ import annotations

import random

import pytest

from bruce.producer.message import Message
from bruce.producer.queues.partition_queue import PartitionQueue
from bruce.producer.queues.request import (
    NO_COMPRESSION,
    Compression,
    Part,
    assemble,
    build_request,
    encode_part,
    encode_records,
)
from bruce.wire.compression import Codec
from bruce.wire.messageset import decode_message_set
from bruce.wire.recordbatch import build_record_batch, decode_record_batch, decode_record_batches


def msgs(*sizes: int, tag: str = "") -> list[Message]:
    return [Message(None, (tag + str(i)).encode().ljust(n, b"."), 1000 + i) for i, n in enumerate(sizes)]


def queue_with(*batches: list[Message], topic: str = "t", partition: int = 0) -> PartitionQueue:
    pq = PartitionQueue(topic, partition, 1)
    for b in batches:
        pq.add_ready(b, sum(m.size for m in b))
    return pq


def test_take_whole_batches_then_splits_at_the_budget() -> None:
    a, b = msgs(4, 4), msgs(4, 4, 4)
    pq = queue_with(a, b)
    taken, size, _ = pq.take(14, True)
    assert taken == a + b[:1] and size == 12
    assert pq.ready_count == 2 and next(iter(pq.ready)) == (b[1:], 8, 0.0)


def test_first_message_is_always_taken_and_a_zero_limit_takes_one() -> None:
    big = msgs(50, 1)
    pq = queue_with(big)
    assert pq.take(0, True) == ([big[0]], 50, 0.0)
    assert pq.take(0, False) == ([], 0, 0.0)
    assert pq.take(0, True) == ([big[1]], 1, 0.0)
    assert pq.ready_count == 0 and not pq.ready


def test_push_front_and_drain_keep_order() -> None:
    old, new, fresh = msgs(1, 1, tag="o"), msgs(1, tag="n"), msgs(1, tag="f")
    pq = queue_with(new)
    pq.open = list(fresh)
    pq.push_front(old)
    assert pq.queued == 4
    assert pq.drain() == old + new + fresh
    assert pq.queued == 0


def test_assemble_respects_the_request_data_limit_across_partitions() -> None:
    q0, q1, q2 = queue_with(msgs(4, 4)), queue_with(msgs(4), partition=1), queue_with(msgs(4), partition=2)
    none = lambda t, m: NO_COMPRESSION  # noqa: E731
    parts, _ = assemble([q0, q1, q2], data_limit=10, message_max_bytes=10**6, policy=none, magic=2)
    assert [(p.queue.partition, len(p.messages)) for p in parts] == [(0, 2)]
    parts, _ = assemble([q1, q2], data_limit=8, message_max_bytes=10**6, policy=none, magic=2)
    assert [(p.queue.partition, len(p.messages)) for p in parts] == [(1, 1), (2, 1)]


@pytest.mark.parametrize("magic", [0, 1])
def test_a_compressed_message_set_over_message_max_bytes_closes_the_request(magic: int) -> None:
    q0, q1 = queue_with(msgs(20, 20, 20)), queue_with(msgs(1), partition=1)
    gzip = Compression(Codec.GZIP)
    parts, chosen = assemble([q0, q1], data_limit=10**6, message_max_bytes=100, policy=lambda t, m: gzip, magic=magic)
    assert [(p.queue.partition, len(p.messages)) for p in parts] == [(0, 2)]  # 2 * (20 + 26) <= 100 < 3 * 46
    assert chosen[q0] is gzip and q0.ready_count == 1 and q1.ready_count == 1


def test_a_single_oversized_compressed_message_still_goes_alone() -> None:
    q0 = queue_with(msgs(500, 1))
    gzip = lambda t, m: Compression(Codec.GZIP)  # noqa: E731
    parts, _ = assemble([q0], data_limit=10**6, message_max_bytes=100, policy=gzip, magic=1)
    assert len(parts[0].messages) == 1


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.GZIP])
def test_record_batches_are_cut_at_their_estimated_size_and_the_request_goes_on(codec: Codec) -> None:
    q0, q1 = queue_with(msgs(*[88] * 30)), queue_with(msgs(1), partition=1)
    policy = lambda t, m: Compression(codec)  # noqa: E731
    parts, _ = assemble([q0, q1], data_limit=10**6, message_max_bytes=1061, policy=policy, magic=2)
    # 61 header bytes + 10 x (88 + 12): ten fit; the other partition still joins the request
    assert [(p.queue.partition, len(p.messages), p.size) for p in parts] == [(0, 10, 880), (1, 1, 1)]
    assert q0.ready_count == 20 and q0.drain()[0].value.startswith(b"10")


@pytest.mark.parametrize("codec", list(Codec))
def test_encoding_cuts_a_record_batch_larger_than_message_max_bytes(codec: Codec) -> None:
    rng = random.Random(codec)
    messages = [Message(None, rng.randbytes(300), 1000 + i) for i in range(10)]  # incompressible
    pq = queue_with(messages[:5], messages[5:])
    part = Part(pq, *pq.take(10**6, True))
    limit = len(build_record_batch([(None, m.value, m.timestamp, None) for m in messages[:3]]))  # 3 fit, plain
    data, note = encode_part(part, Compression(codec), magic=2, zstd=True, max_bytes=limit, empty_as_null=False)
    assert note == "" and part.codec == codec and len(data) <= limit
    kept = decode_record_batch(data).records
    assert 1 <= len(kept) <= 3 and [r.value for r in kept] == [m.value for m in messages[: len(kept)]]
    assert part.messages == messages[: len(kept)] and part.size == 300 * len(kept)
    assert pq.drain() == messages[len(kept) :]  # the rest is next, in order


@pytest.mark.parametrize("magic", [0, 1])
def test_message_sets_are_not_cut_at_encoding(magic: int) -> None:
    messages = msgs(*[300] * 10)
    pq = queue_with(messages)
    part = Part(pq, *pq.take(10**6, True))
    encode_part(part, NO_COMPRESSION, magic=magic, zstd=False, max_bytes=500, empty_as_null=False)
    assert part.messages == messages and pq.ready_count == 0  # Bruce: each plain message is checked alone


def test_a_message_larger_than_message_max_bytes_goes_alone() -> None:
    messages = msgs(5000, 10, 10)
    pq = queue_with(messages)
    part = Part(pq, *pq.take(10**6, True))
    data, _ = encode_part(part, NO_COMPRESSION, magic=2, zstd=True, max_bytes=1000, empty_as_null=False)
    assert len(data) > 1000 and part.messages == messages[:1] and pq.ready_count == 2


def test_a_batch_under_the_limit_is_encoded_once_and_kept_whole() -> None:
    messages = msgs(*[50] * 20)
    pq = queue_with(messages)
    part = Part(pq, *pq.take(10**6, True))
    data, _ = encode_part(part, NO_COMPRESSION, magic=2, zstd=True, max_bytes=10**6, empty_as_null=False)
    assert part.messages == messages and pq.ready_count == 0 and len(decode_record_batch(data).records) == 20


@pytest.mark.parametrize("magic", [0, 1, 2])
@pytest.mark.parametrize("empty_as_null", [False, True])
def test_empty_as_null_in_every_format(magic: int, empty_as_null: bool) -> None:
    messages = [Message(b"", b"", 1), Message(b"k", b"", 2), Message(b"", b"v", 3), Message(None, None, 4)]
    data, _, _ = encode_records(messages, NO_COMPRESSION, magic=magic, zstd=True, empty_as_null=empty_as_null)
    records = decode_record_batch(data).records if magic == 2 else decode_message_set(data)
    null = None if empty_as_null else b""
    assert [(r.key, r.value) for r in records] == [(null, null), (b"k", null), (null, b"v"), (None, None)]


@pytest.mark.parametrize("headers", [None, [], [("h", b"v")]])
@pytest.mark.parametrize("empty_as_null", [False, True])
@pytest.mark.parametrize("codec", [Codec.NONE, Codec.LZ4])
def test_record_batches_are_the_tuple_builders_bytes(headers: list | None, empty_as_null: bool, codec: Codec) -> None:
    """Batches without headers are encoded from columns (C records when built), with headers record by record: both
    the bytes build_record_batch makes of the messages, empty keys and values written as null or not."""
    messages = [Message(b"", b"", 1), Message(b"k", b"v" * 70, 2), Message(None, b"", 9), Message(b"kk", None, 3)]
    messages[1].headers = headers
    data, used, _ = encode_records(messages, Compression(codec), magic=2, zstd=True, empty_as_null=empty_as_null)

    def field(x: bytes | None) -> bytes | None:
        return (x or None) if empty_as_null else x

    records = [(field(m.key), field(m.value), m.timestamp, m.headers) for m in messages]
    assert used == codec and data == build_record_batch(records, codec=codec)


@pytest.mark.parametrize("magic", [0, 1, 2])
@pytest.mark.parametrize("codec", list(Codec))
def test_encode_records_round_trips_or_falls_back(magic: int, codec: Codec) -> None:
    messages = msgs(30, 40, 50)
    data, used, note = encode_records(messages, Compression(codec), magic=magic, zstd=True)
    if codec == Codec.ZSTD and magic < 2:
        assert (used, note) == (Codec.NONE, "Unsupported")
    else:
        assert (used, note) == (codec, "")
    if magic == 2:
        (batch,) = decode_record_batches(data)
        values = [r.value for r in batch.records]
    else:
        values = [r.value for r in decode_message_set(data)]
    assert values == [m.value for m in messages]


def test_zstd_needs_produce_v7() -> None:
    _, used, note = encode_records(msgs(10), Compression(Codec.ZSTD), magic=2, zstd=False)
    assert (used, note) == (Codec.NONE, "Unsupported")


def test_threshold_sends_plain_when_compression_does_not_pay() -> None:
    random_like = [Message(None, bytes(range(256)) * 2, 1)]
    _data, used, note = encode_records(random_like, Compression(Codec.GZIP, threshold_percent=50), magic=2, zstd=True)
    assert (used, note) == (Codec.NONE, "NotCompressible")
    _, used, _ = encode_records(msgs(500, 500), Compression(Codec.GZIP, threshold_percent=50), magic=2, zstd=True)
    assert used == Codec.GZIP


def test_codec_failure_falls_back_to_plain() -> None:
    bad = Compression(Codec.GZIP, level=99)  # zlib rejects level 99
    data, used, note = encode_records(msgs(10), bad, magic=2, zstd=True)
    assert (used, note) == (Codec.NONE, "Error")
    assert [r.value for r in decode_record_batches(data)[0].records] == [msgs(10)[0].value]


def test_build_request_groups_by_topic() -> None:
    parts = [
        Part(PartitionQueue("a", 0, 1), [], 0),
        Part(PartitionQueue("b", 3, 1), [], 0),
        Part(PartitionQueue("a", 1, 1), [], 0),
    ]
    request = build_request(parts, [b"0", b"1", b"2"], acks=1, timeout_ms=500)
    assert [(t.name, [(p.index, p.records) for p in t.partition_data]) for t in request.topic_data] == [
        ("a", [(0, b"0"), (1, b"2")]),
        ("b", [(3, b"1")]),
    ]
    assert (request.acks, request.timeout_ms) == (1, 500)
