"""Partition choice: AnyPartition's shuffled cycle, PartitionKey's documented semantics (only an unavailable
partition's keys move), explicit partitions."""

from __future__ import annotations

import random
import zlib
from collections import Counter

import pytest
from kafka.partitioner.default import murmur2 as java_murmur2

from bruce.producer import ConfigError, ProducerConfig
from bruce.producer.metadata.cluster import Partition, Topic
from bruce.producer.metadata.partitioner import (
    AnyPartitionCycle,
    explicit_partition,
    key_to_partition_key,
    partition_for_key,
)


def topic(leaders: list[int | None], name: str = "t") -> Topic:
    """Partition i is led by leaders[i] (None: unavailable)."""
    parts = tuple(Partition(i, -1 if leader is None else leader) for i, leader in enumerate(leaders))
    led = {i: leader for i, leader in enumerate(leaders) if leader is not None}
    return Topic(name, parts, led, tuple(sorted(led)))


def test_partition_key_is_a_modulus_over_all_partitions() -> None:
    t = topic([1, 2, 1, 2])
    assert [partition_for_key(k, t) for k in range(8)] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert partition_for_key(2**32 + 5, t) == 1  # the key is taken as uint32
    assert partition_for_key(-1, t) == (2**32 - 1) % 4


def test_only_the_unavailable_partitions_keys_move_to_the_next_available_one() -> None:
    healthy = topic([1, 2, 1, 2])
    outage = topic([1, None, 1, 2])
    for key in range(1000):
        before = partition_for_key(key, healthy)
        after = partition_for_key(key, outage)
        assert after == (2 if before == 1 else before)


def test_walk_wraps_around_and_none_when_nothing_is_available() -> None:
    assert partition_for_key(3, topic([1, 1, 1, None])) == 0
    assert partition_for_key(3, topic([None, None])) is None
    assert partition_for_key(0, Topic("t", (), {}, ())) is None


KEYS = [b"", b"a", b"abc", "ключ-ü-東京".encode(), bytes(range(256)) * 3, b"user-1"]


def test_message_keys_per_partitioner() -> None:
    for key in KEYS:
        java = java_murmur2(key) & 0x7FFFFFFF  # kafka-python's port of Java's Utils.murmur2
        assert key_to_partition_key(key) == key_to_partition_key(key, "murmur2") == java  # murmur2_random: default
        assert key_to_partition_key(key, "consistent") == zlib.crc32(key)
        assert key_to_partition_key(key, "fnv1a") == key_to_partition_key(key, "fnv1a_random") == _sarama_fnv1a(key)
        assert key_to_partition_key(key, "random") is None
    for same in (bytearray(b"abc"), memoryview(b"abc"), b"abc" * 30):  # uncached kinds: the same numbers
        assert key_to_partition_key(same) == java_murmur2(bytes(same)) & 0x7FFFFFFF
        assert key_to_partition_key(same, "fnv1a") == _sarama_fnv1a(bytes(same))
    assert key_to_partition_key(b"", "consistent_random") is None  # empty keys are random there, as in librdkafka
    assert key_to_partition_key(b"x", "consistent_random") == zlib.crc32(b"x")


def test_null_keys_per_partitioner() -> None:
    for random_null in ("murmur2_random", "consistent_random", "fnv1a_random", "random"):
        assert key_to_partition_key(None, random_null) is None
    assert key_to_partition_key(None, "murmur2") == java_murmur2(b"") & 0x7FFFFFFF
    assert key_to_partition_key(None, "consistent") == 0
    assert key_to_partition_key(None, "fnv1a") == abs(0x811C9DC5 - 2**32)  # the empty key's hash, as a negative int32
    with pytest.raises(ValueError, match="not one of murmur2_random"):
        key_to_partition_key(b"k", "crc")


def _sarama_fnv1a(key: bytes) -> int:
    h = 0x811C9DC5
    for byte in key:
        h = ((h ^ byte) * 0x01000193) % 2**32
    return abs(h - 2**32 if h >= 2**31 else h)


def test_explicit_partition() -> None:
    t = topic([1, None])
    assert explicit_partition(0, t) == 0
    assert explicit_partition(1, t) is None
    assert explicit_partition(5, t) is None


def test_any_partition_cycles_each_available_partition_once_per_round() -> None:
    cycle = AnyPartitionCycle(random.Random(1))
    t = topic([1, 2, 1, 2, 2])
    picks = [cycle.next(t) for _ in range(50)]
    assert Counter(picks) == {0: 10, 1: 10, 2: 10, 3: 10, 4: 10}
    assert all(sorted(picks[i : i + 5]) == [0, 1, 2, 3, 4] for i in range(0, 50, 5))
    per_broker = Counter(t.leaders[p] for p in picks)
    assert per_broker == {1: 20, 2: 30}  # proportional to the partitions each broker leads


def test_any_partition_reshuffles_when_availability_changes() -> None:
    cycle = AnyPartitionCycle(random.Random(2))
    assert {cycle.next(topic([1, 2, 1])) for _ in range(3)} == {0, 1, 2}
    shrunk = topic([1, None, 1])
    assert {cycle.next(shrunk) for _ in range(10)} == {0, 2}
    assert cycle.next(topic([None, None])) is None


def test_a_new_view_with_the_same_available_partitions_keeps_the_cycle_going() -> None:
    cycle = AnyPartitionCycle(random.Random(3))
    first = [cycle.next(topic([1, 2, 1, 2])) for _ in range(2)]
    rest = [cycle.next(topic([2, 2, 1, 1])) for _ in range(2)]  # leaders moved, same partitions available
    assert sorted(first + rest) == [0, 1, 2, 3]
    assert cycle.next(topic([None, None])) is None
    again = [cycle.next(topic([1, 2, 1, 2])) for _ in range(4)]
    assert sorted(again) == [0, 1, 2, 3]  # back to the same partitions: a full round again


def test_the_partitioner_setting() -> None:
    assert ProducerConfig().partitioner == "murmur2_random"  # Java's placement (docs/producer.md says why)
    assert ProducerConfig.from_mapping({"partitioner": "consistent"}).partitioner == "consistent"
    with pytest.raises(ConfigError, match="partitioner: 'java' is not one of murmur2_random, murmur2, consistent"):
        ProducerConfig(partitioner="java")
