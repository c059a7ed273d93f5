"""bruce.producer against a real broker (tansu): everything sent is read back by confluent-kafka with CRC checks, each
partition in the order it was sent, with every codec; acks=0 (tansu answers anyway: tolerated); handles report the
offsets the consumer sees. Also: empty keys and values (empty or null, ``empty_as_null``), record batches cut at
message.max.bytes (tansu itself does not enforce it), and topic creation."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable

import pytest
from kafkaclient import KafkaClient

from bruce.producer import Producer, ProducerConfig
from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.wire.records import entry_spans

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


@pytest.mark.parametrize("empty_as_null", [False, True])
def test_empty_key_and_value_read_back_as_empty_or_null(
    empty_as_null: bool,
    tansu: EmbeddedBroker,
    new_topic: Callable[..., str],
    confluent_consume: Callable[..., tuple[list, list[str]]],
) -> None:
    topic = new_topic(partitions=1)
    combos = [(b"", b""), (b"k", b""), (b"", b"v"), (None, None), (None, b"v"), (b"k", None)]

    async def main() -> None:
        config = ProducerConfig(bootstrap_servers=(tansu.address,), empty_as_null=empty_as_null)
        async with Producer(config) as producer:
            await producer.ready(10)
            for key, value in combos:
                producer.send(topic, value, key=key)
            assert await producer.flush(30) == 0 and producer.delivered == len(combos)

    asyncio.run(main())
    messages, errors = confluent_consume(topic, 0, len(combos))
    assert errors == []
    got = [(m.key, m.value) for m in messages]
    if empty_as_null:  # Bruce's rule: empty means absent
        assert got == [(None, None), (b"k", None), (None, b"v"), (None, None), (None, b"v"), (b"k", None)]
    else:  # a library user's b"" stays empty, None stays null
        assert got == combos


def test_record_batches_are_cut_at_message_max_bytes_and_read_back_in_order(
    tansu: EmbeddedBroker,
    new_topic: Callable[..., str],
    confluent_consume: Callable[..., tuple[list, list[str]]],
    client: KafkaClient,
) -> None:
    """tansu 0.6 does not enforce message.max.bytes (see the next test), so this checks what it stored: batches no
    larger than the limit, and every message once, in order."""
    topic = new_topic(partitions=1)
    limit = 20_000
    count = 2_000

    async def main() -> None:
        config = ProducerConfig(
            bootstrap_servers=(tansu.address,),
            message_max_bytes=limit,
            linger_ms=10_000,  # one batch of everything, sent by flush
            queue_buffering_max_messages=count + 1,
        )
        async with Producer(config) as producer:
            await producer.ready(10)
            for i in range(count):
                producer.send(topic, b"%06d-" % i + b"v" * 93, partition=0)
            assert await producer.flush(30) == 0 and producer.delivered == count

    asyncio.run(main())
    messages, errors = confluent_consume(topic, 0, count)
    assert errors == []
    assert [m.value[:6] for m in messages] == [b"%06d" % i for i in range(count)]
    stored = client.fetch(topic, 0, 0, max_bytes=10 << 20).records or b""
    sizes = [end - start for start, end, _ in entry_spans(stored)]
    assert len(sizes) >= 11 and max(sizes) <= limit  # 2000 records of ~112 bytes need at least 11 batches


def test_tansu_does_not_enforce_message_max_bytes(tansu: EmbeddedBroker) -> None:
    """A documented quirk: tansu accepts a record batch far above Kafka's default message.max.bytes (1048588), even
    on a topic created with max.message.bytes=1000. Enforcement is therefore tested against the fake broker."""
    topic = f"limited-{time.monotonic_ns()}"
    command = [str(tansu.binary), "topic", "create", topic, "--partitions", "1", "--broker", tansu.url]
    created = subprocess.run(
        [*command, "--config", "max.message.bytes=1000"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert created.returncode == 0, created.stderr

    async def main() -> tuple[int, int]:
        config = ProducerConfig(bootstrap_servers=(tansu.address,), message_max_bytes=10 << 20)
        async with Producer(config) as producer:
            await producer.ready(10)
            return await producer.send(topic, b"x" * (2 << 20))

    assert asyncio.run(main()) == (0, 0)


def test_create_topic_on_tansu(
    tansu: EmbeddedBroker, confluent_consume: Callable[..., tuple[list, list[str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """tansu creates a topic named in a Metadata request that allows it (4 partitions): the producer asks, then
    finds it at the first refresh; messages sent to it are read back."""
    monkeypatch.setattr("bruce.producer.metadata.fetcher.AUTOCREATE_CHECKS", (0.1, 0.2, 0.4))
    topic = f"created-{time.monotonic_ns()}"

    async def main() -> list[tuple[int, int]]:
        async with Producer(ProducerConfig(bootstrap_servers=(tansu.address,))) as producer:
            await producer.ready(10)
            assert producer.available_partitions(topic) is None
            assert await producer.create_topic(topic) is None
            assert producer.available_partitions(topic) == (0, 1, 2, 3)
            assert producer.counters.get("TopicAutocreateOk") == 1
            handles = [producer.send(topic, b"m%d" % i, partition=0) for i in range(3)]
            assert await producer.flush(30) == 0
            return [h.result() for h in handles]

    assert asyncio.run(main()) == [(0, 0), (0, 1), (0, 2)]
    messages, errors = confluent_consume(topic, 0, 3)
    assert errors == [] and [m.value for m in messages] == [b"m0", b"m1", b"m2"]


def test_sending_to_a_topic_that_does_not_exist_yet_creates_it(
    tansu: EmbeddedBroker, confluent_consume: Callable[..., tuple[list, list[str]]]
) -> None:
    """docs/producer.md's example: send to a new topic with ``topic_autocreate`` (librdkafka's and the Java
    producer's behaviour): the messages wait while it is created, then are delivered in order."""
    topic = f"events-{time.monotonic_ns()}"

    async def main() -> list[tuple[int, int]]:
        config = ProducerConfig(bootstrap_servers=(tansu.address,), linger_ms=5, topic_autocreate=True)
        async with Producer(config) as producer:
            await producer.ready(10)
            handles = [producer.send(topic, b"e%d" % i, key=b"user-1") for i in range(5)]
            results = [await h for h in handles]
            assert producer.counters.get("TopicAutocreateOk") == 1
            return results

    results = asyncio.run(main())
    (partition,) = {p for p, _ in results}
    assert [o for _, o in results] == [0, 1, 2, 3, 4]
    messages, errors = confluent_consume(topic, partition, 5)
    assert errors == [] and [m.value for m in messages] == [b"e%d" % i for i in range(5)]


def test_partition_keys_land_where_bruces_rule_says(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], confluent_consume: Callable[..., tuple[list, list[str]]]
) -> None:
    """``send(partition_key=k)``: partition ``k % 4`` (signed keys as their unsigned 32 bits), the record's own key
    untouched; read back per partition in order."""
    topic = new_topic(partitions=4)
    keys = [0, 1, 2, 3, 4, 7, 2**32 - 1, -1, -(2**31), 123_456_789]

    async def main() -> list[tuple[int, int]]:
        async with Producer(ProducerConfig(bootstrap_servers=(tansu.address,))) as producer:
            await producer.ready(10)
            handles = [producer.send(topic, b"pk-%d" % k, key=b"record-key", partition_key=k) for k in keys]
            assert await producer.flush(30) == 0
            return [h.result() for h in handles]

    placed = asyncio.run(main())
    assert [p for p, _ in placed] == [(k & 0xFFFFFFFF) % 4 for k in keys]
    for partition in range(4):
        expected = [b"pk-%d" % k for k, (p, _) in zip(keys, placed, strict=True) if p == partition]
        messages, errors = confluent_consume(topic, partition, len(expected))
        assert errors == [] and [m.value for m in messages] == expected
        assert all(m.key == b"record-key" for m in messages)
