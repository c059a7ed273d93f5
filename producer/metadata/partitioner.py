"""Choosing a partition: AnyPartition, PartitionKey and explicit partitions. Pure.

Rules:
- **AnyPartition** (no key): a per-topic cycle over the available partitions, shuffled each time the set of available
  partitions changes (as Bruce shuffles per metadata build). Each batch goes to the next partition of the cycle, so each
  broker's share is proportional to the partitions it leads.
- **PartitionKey** — the *documented* semantics, not Bruce's code: ``(key as uint32) % number of ALL partitions``
  (sorted by id); only when that partition is unavailable does the key walk forward (wrapping) to the next available
  one. Keys of available partitions never move during an outage of another partition.
- A message key becomes a partition key through the configured partitioner (librdkafka's names,
  :data:`PARTITIONERS`): a number whose value modulo the partition count is the partition that partitioner picks
  (``murmur2``: Java's ``(murmur2(key) & 0x7fffffff) % n``; ``consistent``: ``crc32(key) % n``; ``fnv1a``:
  ``|int32(fnv1a(key))| % n``), or None for "any partition" (``random``; null keys with the ``_random`` variants, and
  empty keys too with ``consistent_random``). PartitionKey routing then applies (above).
- An explicit partition is used as given if available.
- No choice possible → ``None``; the caller discards with NO_AVAILABLE_PARTITIONS (or BAD_TOPIC for a missing topic).
"""

from __future__ import annotations

import functools
import random
import zlib
from typing import Any

from bruce.wire import murmur2

from ..config import PARTITIONERS
from .cluster import Topic

_FNV_OFFSET, _FNV_PRIME = 0x811C9DC5, 0x01000193
_CACHED_KEY_SIZE = 64  # keys up to this many bytes have their murmur2 remembered (murmur2 is pure Python, per word)


@functools.lru_cache(maxsize=4096)  # bounded: 4096 keys (bytes) of at most 64 bytes
def _java_murmur2(key: bytes) -> int:
    return murmur2(key) & 0x7FFFFFFF


def key_to_partition_key(key: bytes | None, partitioner: str = "murmur2_random") -> int | None:
    """The partition key that places a message keyed ``key`` where librdkafka's ``partitioner`` would (None: any
    partition). See the module rules."""
    if partitioner == "murmur2_random" or partitioner == "murmur2":
        if key is None:
            return None if partitioner == "murmur2_random" else _java_murmur2(b"")
        if type(key) is bytes and len(key) <= _CACHED_KEY_SIZE:
            return _java_murmur2(key)
        return murmur2(key) & 0x7FFFFFFF  # a long key, or a bytearray / memoryview (not hashable)
    if partitioner == "consistent":
        return zlib.crc32(key or b"")
    if partitioner == "consistent_random":
        return zlib.crc32(key) if key else None
    if partitioner == "fnv1a" or (partitioner == "fnv1a_random" and key is not None):
        return fnv1a_partition_key(key or b"")
    if partitioner in ("fnv1a_random", "random"):
        return None
    raise ValueError(f"partitioner {partitioner!r} is not one of {', '.join(PARTITIONERS)}")


def fnv1a_partition_key(key: bytes) -> int:
    """librdkafka's (and Sarama's) FNV-1a placement: the 32-bit FNV-1a hash as a signed int, made positive."""
    h = _FNV_OFFSET
    for byte in key:
        h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return abs(h - (1 << 32) if h >= 1 << 31 else h)


def partition_for_key(partition_key: int, topic: Topic) -> int | None:
    """PartitionKey routing: modulus over all partitions, then forward to the next available partition."""
    partitions = topic.partitions
    count = len(partitions)
    if not count or not topic.leaders:
        return None
    index = (partition_key & 0xFFFFFFFF) % count
    leaders = topic.leaders
    pid = partitions[index].id
    if pid in leaders:  # the usual case: the key's own partition is available
        return pid
    for step in range(1, count):
        pid = partitions[(index + step) % count].id
        if pid in leaders:
            return pid
    return None


def explicit_partition(partition: int, topic: Topic) -> int | None:
    return partition if partition in topic.leaders else None


class AnyPartitionCycle:
    """Round-robin over each topic's available partitions, in an order shuffled per change of availability."""

    __slots__ = ("_cycles", "_rng")

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._cycles: dict[str, list[Any]] = {}  # topic → [available partitions, shuffled order, next position]

    def next(self, topic: Topic) -> int | None:
        """The next partition for a keyless batch of ``topic``, or None when none is available."""
        available = topic.available
        cycle = self._cycles.get(topic.name)
        if cycle is None or cycle[0] is not available:
            if not available:
                return None
            if cycle is None or cycle[0] != available:  # a new view with the same partitions keeps its order
                order = list(available)
                self._rng.shuffle(order)
                cycle = self._cycles[topic.name] = [available, order, 0]
            cycle[0] = available
        order = cycle[1]
        position = cycle[2]
        cycle[2] = position + 1 if position + 1 < len(order) else 0
        partition: int = order[position]
        return partition
