"""The durable cluster (tests/durable_cluster.py) does what the fault tests rely on, checked with confluent-kafka
alone: a broker killed with SIGKILL and restarted still holds every message, two brokers on one bucket serve the
same log, a broker moved to a new address serves it there, and a cut resets the connections through it."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest
from confluent_kafka import Producer
from durable_cluster import READ_PROPS, DurableCluster
from readback import read_back

pytestmark = pytest.mark.e2e


def _produce(address: str, topic: str, values: list[bytes], partitions: int) -> None:
    producer = Producer({"bootstrap.servers": address, "enable.idempotence": True, "linger.ms": 5, "log_level": 3})
    for i, value in enumerate(values):
        producer.produce(topic, value, partition=i % partitions)
    assert producer.flush(30) == 0


def _values(address: str, topic: str, partitions: int, expected: int) -> list[bytes]:
    return sorted(m.value() for m in read_back(address, topic, partitions, expected, extra=0.5, props=READ_PROPS))


def test_a_killed_broker_restarts_with_its_log(durable_cluster: Callable[..., DurableCluster]) -> None:
    cluster = durable_cluster()
    cluster.create_topic("kept", 2)
    first = [b"first-%04d" % i for i in range(500)]
    _produce(cluster.address(), "kept", first, 2)
    cluster.kill()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", cluster.ports[0]), timeout=2):
        pass  # down: the address refuses connections
    cluster.restart()
    second = [b"second-%04d" % i for i in range(500)]
    _produce(cluster.address(), "kept", second, 2)
    assert _values(cluster.address(), "kept", 2, 1000) == sorted(first + second)


def test_two_brokers_on_one_bucket_serve_the_same_log(durable_cluster: Callable[..., DurableCluster]) -> None:
    cluster = durable_cluster(brokers=2)
    cluster.create_topic("shared", 3)
    values = [b"shared-%04d" % i for i in range(300)]
    _produce(cluster.address(0), "shared", values, 3)
    cluster.kill(0)
    assert _values(cluster.address(1), "shared", 3, 300) == values


def test_a_moved_broker_serves_the_log_at_its_new_address(durable_cluster: Callable[..., DurableCluster]) -> None:
    cluster = durable_cluster()
    cluster.create_topic("moved", 1)
    values = [b"moved-%04d" % i for i in range(200)]
    _produce(cluster.address(), "moved", values, 1)
    old = cluster.address()
    new = cluster.move()
    assert new != old
    assert _values(new, "moved", 1, 200) == values


def test_a_cut_resets_the_connections_and_the_client_carries_on(
    durable_cluster: Callable[..., DurableCluster],
) -> None:
    cluster = durable_cluster()
    cluster.create_topic("cut", 1)
    producer = Producer({"bootstrap.servers": cluster.address(), "enable.idempotence": True, "log_level": 3})
    for i in range(100):
        producer.produce("cut", b"cut-%04d" % i)
    assert producer.flush(30) == 0
    assert cluster.cut() >= 1  # the producer's connection, reset
    for i in range(100, 200):
        producer.produce("cut", b"cut-%04d" % i)
    assert producer.flush(30) == 0
    assert _values(cluster.address(), "cut", 1, 200) == [b"cut-%04d" % i for i in range(200)]


def test_many_small_batches_read_back_with_the_cluster_consumer_settings(
    durable_cluster: Callable[..., DurableCluster],
) -> None:
    """One stored object per batch: a fetch reads hundreds of them, longer than a 50 ms wait (READ_PROPS)."""
    cluster = durable_cluster()
    cluster.create_topic("small", 1)
    producer = Producer({"bootstrap.servers": cluster.address(), "linger.ms": 0, "batch.num.messages": 1})
    values = [b"small-%04d" % i for i in range(300)]
    for value in values:
        producer.produce("small", value, partition=0)
        producer.poll(0)
    assert producer.flush(30) == 0
    assert _values(cluster.address(), "small", 1, 300) == values
