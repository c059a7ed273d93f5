"""Independent Kafka I/O for the Spark tests: confluent-kafka writes inputs and reads results (CRC checks on)."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import Producer
from readback import read_back


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
    return [
        Consumed(m.partition(), m.offset(), m.key(), m.value(), m.timestamp()[1], tuple(m.headers() or ()))
        for m in read_back(address, topic, partitions, expected, timeout=timeout, extra=0.5)
    ]


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
