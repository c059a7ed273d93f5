"""Keyed placement against the peers: for every librdkafka partitioner name, the same keys sent by bruce.producer
(``ProducerConfig.partitioner``) and by confluent-kafka (librdkafka's ``partitioner``) to two topics of 7 partitions
on tansu land on the same partition, key for key (read back by an independent consumer). The keys: empty, null,
non-ASCII, long, and a few hundred random ones. For ``murmur2*``, kafka-python's murmur2 (a port of Java's) agrees."""

from __future__ import annotations

import asyncio
import random

import pytest
from confluent_kafka import Producer as PeerProducer
from kafka.partitioner.default import murmur2 as java_murmur2
from spark.kafka_io import consume_all

from bruce.producer import PARTITIONERS, Producer, ProducerConfig

pytestmark = pytest.mark.e2e

PARTITIONS = 7
_rng = random.Random(15)
KEYS = [b"", "ключ-ü-東京-🙂".encode(), bytes(range(256)) * 8, b"user-1", b"\x00", b"\xff" * 3] + [
    _rng.randbytes(_rng.randint(1, 64)) for _ in range(250)
]
NULL = len(KEYS)  # the value of the message sent with a null key


def _bruce(address: str, topic: str, partitioner: str) -> None:
    async def main() -> None:
        config = ProducerConfig(bootstrap_servers=(address,), partitioner=partitioner, linger_ms=20)
        async with Producer(config) as producer:
            await producer.ready(10)
            for i, key in enumerate([*KEYS, None]):
                producer.send(topic, b"%d" % i, key=key)
            assert await producer.flush(30) == 0 and producer.delivered == len(KEYS) + 1

    asyncio.run(main())


def _peer(address: str, topic: str, partitioner: str) -> None:
    producer = PeerProducer({"bootstrap.servers": address, "partitioner": partitioner, "linger.ms": 20, "log_level": 3})
    for i, key in enumerate([*KEYS, None]):
        producer.produce(topic, value=b"%d" % i, key=key)
    assert producer.flush(30) == 0


def _placement(address: str, topic: str) -> dict[int, int]:
    got = consume_all(address, topic, PARTITIONS, len(KEYS) + 1)
    assert len(got) == len(KEYS) + 1
    return {int(m.value): m.partition for m in got}


@pytest.mark.parametrize("partitioner", PARTITIONERS)
def test_same_partition_as_librdkafka(tansu, new_topic, partitioner: str) -> None:
    ours, theirs = new_topic(partitions=PARTITIONS), new_topic(partitions=PARTITIONS)
    _bruce(tansu.address, ours, partitioner)
    _peer(tansu.address, theirs, partitioner)
    mine, peer = _placement(tansu.address, ours), _placement(tansu.address, theirs)
    hashed = [
        i for i, key in enumerate(KEYS) if partitioner != "random" and (key or partitioner != "consistent_random")
    ]
    if not partitioner.endswith("random"):
        hashed.append(NULL)  # murmur2, consistent, fnv1a: a null key has one partition too
    assert len(hashed) >= (0 if partitioner == "random" else len(KEYS) - 1)
    assert {i: mine[i] for i in hashed} == {i: peer[i] for i in hashed}
    if partitioner.startswith("murmur2"):
        assert all(mine[i] == (java_murmur2(KEYS[i]) & 0x7FFFFFFF) % PARTITIONS for i in range(len(KEYS)))
    if partitioner.endswith("random"):  # the rest went somewhere, any partition (spread checked in unit tests)
        assert set(mine) == set(peer) == set(range(NULL + 1))
