"""bruce.producer against a real broker (tansu): everything sent is read back by confluent-kafka with CRC checks, each
partition in the order it was sent, with every codec; acks=0 (tansu answers anyway: tolerated); handles report the
offsets the consumer sees."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from bruce.producer import Producer, ProducerConfig
from bruce.proxy.embedded import EmbeddedBroker

pytestmark = pytest.mark.e2e


def _produce(address: str, topic: str, count: int, **settings: object) -> list[tuple[int, int, bytes]]:
    """Send ``count`` messages whose values carry their sequence number; return (partition, offset, value) per send."""

    async def main() -> list[tuple[int, int, bytes]]:
        config = ProducerConfig(bootstrap_servers=(address,), queue_buffering_max_messages=count + 1, **settings)
        async with Producer(config) as producer:
            await producer.ready(10)
            handles = []
            values = []
            for i in range(count):
                value = b"%08d-" % i + b"v" * (i % 50)
                key = b"key-%d" % (i % 13) if i % 3 == 0 else None
                headers = [("seq", b"%d" % i)] if i % 5 == 0 else None
                handles.append(producer.send(topic, value, key=key, headers=headers))
                values.append(value)
            assert await producer.flush(60) == 0
            assert producer.accepted == producer.delivered == count and producer.discarded == 0
            return [(*h.result(), v) for h, v in zip(handles, values, strict=True)]

    return asyncio.run(main())


def _check_read_back(
    consume: Callable[..., tuple[list, list[str]]],
    topic: str,
    sent: list[tuple[int, int, bytes]],
    *,
    acks0: bool = False,
) -> None:
    by_partition: dict[int, list[tuple[int, bytes]]] = {}
    for partition, offset, value in sent:
        by_partition.setdefault(partition, []).append((offset, value))
    assert len(by_partition) == 4, "keyless batches should reach every partition"
    total = 0
    for partition, expected in by_partition.items():
        messages, errors = consume(topic, partition, len(expected), timeout=60)
        assert errors == []
        assert len(messages) == len(expected)
        values = [m.value for m in messages]
        assert values == [v for _, v in expected], f"partition {partition}: order or content differs"
        if not acks0:
            assert [m.offset for m in messages] == [o for o, _ in expected]
        total += len(messages)
    assert total == len(sent)


def test_100k_messages_to_4_partitions_read_back_in_order(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], confluent_consume: Callable[..., tuple[list, list[str]]]
) -> None:
    topic = new_topic(partitions=4)
    sent = _produce(tansu.address, topic, 100_000, linger_ms=5)
    _check_read_back(confluent_consume, topic, sent)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_every_codec_reads_back(
    codec: str,
    tansu: EmbeddedBroker,
    new_topic: Callable[..., str],
    confluent_consume: Callable[..., tuple[list, list[str]]],
) -> None:
    topic = new_topic(partitions=4)
    sent = _produce(tansu.address, topic, 10_000, compression_codec=codec, batch_num_messages=1000)
    _check_read_back(confluent_consume, topic, sent)


def test_acks_zero_tolerates_tansus_answers(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], confluent_consume: Callable[..., tuple[list, list[str]]]
) -> None:
    topic = new_topic(partitions=4)
    sent = _produce(tansu.address, topic, 4_000, acks=0, batch_num_messages=100)
    assert {offset for _, offset, _ in sent} == {-1}
    _check_read_back(confluent_consume, topic, sent, acks0=True)
