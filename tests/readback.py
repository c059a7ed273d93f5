"""Reading a topic back with confluent-kafka, the independent check of what reached a broker.

Rules:
- CRC checks on; from offset 0 of each partition asked for; no group offsets committed.
- Reads until ``expected`` messages arrived or ``timeout`` passed, then ``extra`` seconds more (a surplus, i.e.
  duplicates, shows then); the caller asserts on the count.
- Any consumer error fails at once (``AssertionError`` naming the topic), a bad CRC included.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import Consumer, Message, TopicPartition


def read_back(
    address: str,
    topic: str,
    partitions: int | Iterable[int],
    expected: int,
    *,
    timeout: float = 30.0,
    extra: float = 0.0,
    props: Mapping[str, Any] | None = None,
) -> list[Message]:
    """The messages of ``partitions`` (a count: 0 to n-1, or the numbers) of ``topic``, in the order read.
    ``props``: more consumer settings (security ones, say)."""
    numbers = range(partitions) if isinstance(partitions, int) else partitions
    consumer = Consumer(
        {
            "bootstrap.servers": address,
            "group.id": f"read-back-{topic}",
            "check.crcs": True,
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
            "log_level": 3,
            **(props or {}),
        }
    )
    got: list[Message] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in numbers])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(got) >= expected:
                deadline = min(deadline, time.monotonic() + extra)
                if extra <= 0:
                    break
            for m in consumer.consume(10_000, 0.1):
                if m.error():
                    raise AssertionError(f"consumer error on {topic}: {m.error()}")
                got.append(m)
    finally:
        consumer.close()
    return got
