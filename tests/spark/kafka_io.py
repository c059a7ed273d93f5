"""Independent Kafka I/O for the Spark tests: confluent-kafka writes inputs and reads results (CRC checks on)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import Consumer, Producer, TopicPartition


@dataclass(frozen=True, slots=True)
class Consumed:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...]


def consume_all(address: str, topic: str, partitions: int, expected: int, *, timeout: float = 20.0) -> list[Consumed]:
    """Every message of ``topic`` from offset 0, waiting until ``expected`` arrived (or the timeout), then a little
    longer to catch extras. Raises on any consumer error (a bad CRC included)."""
    consumer = Consumer(
        {
            "bootstrap.servers": address,
            "group.id": f"spark-tests-{topic}",
            "check.crcs": True,
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
            "log_level": 3,
        }
    )
    got: list[Consumed] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + timeout
        quiet_until = None
        while time.monotonic() < deadline:
            m = consumer.poll(0.1)
            if m is None:
                if len(got) >= expected:
                    quiet_until = quiet_until or time.monotonic() + 0.5
                    if time.monotonic() > quiet_until:
                        break
                continue
            if m.error():
                raise AssertionError(f"consumer error on {topic}: {m.error()}")
            got.append(
                Consumed(m.partition(), m.offset(), m.key(), m.value(), m.timestamp()[1], tuple(m.headers() or ()))
            )
    finally:
        consumer.close()
    return got


def produce_all(address: str, topic: str, messages: list[dict], *, linger_ms: int = 20) -> None:
    """Produce ``messages`` (confluent-kafka ``produce`` keyword arguments) and wait for every ACK."""
    producer = Producer({"bootstrap.servers": address, "linger.ms": linger_ms, "log_level": 3})
    failures: list[str] = []

    def report(err, _msg) -> None:
        if err is not None:
            failures.append(str(err))

    for m in messages:
        producer.produce(topic, on_delivery=report, **m)
    left = producer.flush(20)
    assert left == 0 and not failures, (left, failures[:3])
