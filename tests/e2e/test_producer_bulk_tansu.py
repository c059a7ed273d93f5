"""``send_many`` against a real broker (tansu): every value read back by confluent-kafka (CRC checks on) at the
partition and offset its :class:`Bulk` reported, in the order given per partition; keyed values too."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from readback import read_back

from bruce.producer import Producer, ProducerConfig
from bruce.proxy.daemon.embedded import EmbeddedBroker

pytestmark = pytest.mark.e2e


def test_send_many_values_read_back_where_the_bulk_says(tansu: EmbeddedBroker, new_topic: Callable[..., str]) -> None:
    topic = new_topic(partitions=3)
    values = [b"%06d-" % i + b"v" * (i % 40) for i in range(30_000)]
    keys = [b"key-%d" % (i % 11) for i in range(500)]

    async def main() -> list:
        config = ProducerConfig(bootstrap_servers=(tansu.address,), queue_buffering_max_messages=40_000)
        async with Producer(config) as producer:
            await producer.ready(10)
            bulk = producer.send_many(topic, values)
            keyed = producer.send_many(topic, [b"keyed-%d" % i for i in range(500)], keys)
            await bulk
            await keyed
            assert bulk.failures() == [] and keyed.failures() == []
            assert producer.accepted == producer.delivered == 30_500 and producer.held == 0
            return list(
                zip(bulk.results() + keyed.results(), values + [b"keyed-%d" % i for i in range(500)], strict=True)
            )

    sent = asyncio.run(main())
    got = read_back(tansu.address, topic, 3, len(sent), timeout=60)
    assert len(got) == len(sent)
    at = {(m.partition(), m.offset()): m for m in got}
    for (partition, offset), value in sent:
        assert at[(partition, offset)].value() == value
    assert len({p for (p, _), _ in sent}) == 3  # keyless batches reach every partition
    for partition in range(3):  # the order given, per partition
        offsets = [o for (p, o), _ in sent[: len(values)] if p == partition]
        assert offsets == sorted(offsets)
    by_key: dict[bytes, set[int]] = {}
    for m in got:
        if m.key() is not None:
            by_key.setdefault(m.key(), set()).add(m.partition())
    assert len(by_key) == 11 and all(len(ps) == 1 for ps in by_key.values())  # one partition per key


def test_sent_messages_whose_handles_are_dropped_read_back_in_order(
    tansu: EmbeddedBroker, new_topic: Callable[..., str]
) -> None:
    """``send`` without keeping handles: sealed batches become chunks (values, column-encoded); all read back."""
    topic = new_topic(partitions=2)
    count = 40_000

    async def main() -> None:
        config = ProducerConfig(bootstrap_servers=(tansu.address,), queue_buffering_max_messages=count + 1)
        async with Producer(config) as producer:
            await producer.ready(10)
            for i in range(count):
                producer.send(topic, b"%06d" % i)
            assert await producer.flush(60) == 0
            assert producer.delivered == count and producer.discarded == 0

    asyncio.run(main())
    got = read_back(tansu.address, topic, 2, count, timeout=60)
    assert sorted(m.value() for m in got) == [b"%06d" % i for i in range(count)]
    for partition in range(2):
        values = [m.value() for m in got if m.partition() == partition]
        assert values == sorted(values)  # the order sent, per partition
