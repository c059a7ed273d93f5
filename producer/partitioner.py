"""Choosing a partition: AnyPartition, PartitionKey and explicit partitions. Pure.

Rules:
- **AnyPartition** (no key): a per-topic cycle over the available partitions, shuffled each time the set of available
  partitions changes (as Bruce shuffles per metadata build). Each batch goes to the next partition of the cycle, so each
  broker's share is proportional to the partitions it leads.
- **PartitionKey** — the *documented* semantics, not Bruce's code: ``(key as uint32) % number of ALL partitions``
  (sorted by id); only when that partition is unavailable does the key walk forward (wrapping) to the next available
  one. Keys of available partitions never move during an outage of another partition.
- A message key (bytes) becomes a partition key through CRC-32 (librdkafka's ``consistent`` partitioner).
- An explicit partition is used as given if available.
- No choice possible → ``None``; the caller discards with NO_AVAILABLE_PARTITIONS (or BAD_TOPIC for a missing topic).
"""

from __future__ import annotations

import random
import zlib

from .cluster import Topic


def key_to_partition_key(key: bytes) -> int:
    """The partition key of a message key (CRC-32, as librdkafka's ``consistent`` partitioner)."""
    return zlib.crc32(key)


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
        self._cycles: dict[str, list] = {}  # topic → [available partitions, shuffled order, next position]

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
        return order[position]
