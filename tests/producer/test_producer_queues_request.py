"""Partition queues (take, split, requeue order) and request assembly/encoding (Bruce's §7 rules)."""

from __future__ import annotations

import pytest

from bruce.producer.message import Message
from bruce.producer.queues import PartitionQueue
from bruce.producer.request import (
    NO_COMPRESSION,
    Compression,
    assemble,
    build_request,
    encode_records,
)
from bruce.wire.compression import Codec
from bruce.wire.messageset import decode_message_set
from bruce.wire.recordbatch import decode_record_batches


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
    taken, size = pq.take(14, True)
    assert taken == a + b[:1] and size == 12
    assert pq.ready_count == 2 and next(iter(pq.ready)) == (b[1:], 8)


def test_first_message_is_always_taken_and_a_zero_limit_takes_one() -> None:
    big = msgs(50, 1)
    pq = queue_with(big)
    assert pq.take(0, True) == ([big[0]], 50)
    assert pq.take(0, False) == ([], 0)
    assert pq.take(0, True) == ([big[1]], 1)
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
    parts, _ = assemble([q0, q1, q2], data_limit=10, message_max_bytes=10**6, policy=lambda t, m: NO_COMPRESSION)
    assert [(p.queue.partition, len(p.messages)) for p in parts] == [(0, 2)]
    parts, _ = assemble([q1, q2], data_limit=8, message_max_bytes=10**6, policy=lambda t, m: NO_COMPRESSION)
    assert [(p.queue.partition, len(p.messages)) for p in parts] == [(1, 1), (2, 1)]


def test_a_compressed_set_over_message_max_bytes_closes_the_request() -> None:
    q0, q1 = queue_with(msgs(20, 20, 20)), queue_with(msgs(1), partition=1)
    gzip = Compression(Codec.GZIP)
    parts, chosen = assemble([q0, q1], data_limit=10**6, message_max_bytes=100, policy=lambda t, m: gzip)
    assert [(p.queue.partition, len(p.messages)) for p in parts] == [(0, 2)]  # 2 * (20 + 26) <= 100 < 3 * 46
    assert chosen[q0] is gzip and q0.ready_count == 1 and q1.ready_count == 1


def test_a_single_oversized_compressed_message_still_goes_alone() -> None:
    q0 = queue_with(msgs(500, 1))
    parts, _ = assemble([q0], data_limit=10**6, message_max_bytes=100, policy=lambda t, m: Compression(Codec.GZIP))
    assert len(parts[0].messages) == 1


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
    from bruce.producer.request import Part

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
