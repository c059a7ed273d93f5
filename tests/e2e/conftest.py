"""End-to-end fixtures: a wire-level client on the session broker, and reading back with confluent-kafka.

Delivery is verified by consuming with an independent client (confluent-kafka, ``check.crcs=true``), counting what
arrives rather than trusting the broker's offsets.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer, TopicPartition
from kafkaclient import KafkaClient

from bruce.proxy.daemon.embedded import EmbeddedBroker


@dataclass(frozen=True, slots=True)
class Consumed:
    """One message as confluent-kafka delivered it."""

    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...]


@pytest.fixture
def client(tansu: EmbeddedBroker) -> Iterator[KafkaClient]:
    """A negotiated wire-level connection to the session broker."""
    with KafkaClient.connect(tansu.address) as c:
        yield c


def consume_with_confluent(
    address: str, topic: str, partition: int, expected: int, *, timeout: float = 15.0
) -> tuple[list[Consumed], list[str]]:
    """Read ``expected`` messages from offset 0 with CRC checks on: (messages, errors). Stops early on errors."""
    consumer = Consumer(
        {
            "bootstrap.servers": address,
            "group.id": f"e2e-{topic}",
            "check.crcs": True,
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
            "log_level": 3,
        }
    )
    messages: list[Consumed] = []
    errors: list[str] = []
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        deadline = time.monotonic() + timeout
        while len(messages) < expected and len(errors) < 3 and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is None:
                continue
            if m.error():
                errors.append(str(m.error()))
                continue
            messages.append(Consumed(m.offset(), m.key(), m.value(), m.timestamp()[1], tuple(m.headers() or ())))
    finally:
        consumer.close()
    return messages, errors


@pytest.fixture
def confluent_consume(tansu: EmbeddedBroker) -> Callable[..., tuple[list[Consumed], list[str]]]:
    """``confluent_consume(topic, partition, expected) -> (messages, errors)`` on the session broker."""

    def consume(topic: str, partition: int, expected: int, **kw) -> tuple[list[Consumed], list[str]]:
        return consume_with_confluent(tansu.address, topic, partition, expected, **kw)

    return consume
