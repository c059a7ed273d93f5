"""Delivery through the bruce daemon's socket, without Spark: the datagrams that arrive (parsed with bruce.wire), a
missing daemon, a socket that stays full, and rows a datagram cannot carry."""

from __future__ import annotations

import socket
import zlib
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from bruce.spark.delivery import DeliveryFailed
from bruce.spark.options import write_options
from bruce.spark.schema import BadRow
from bruce.spark.task import deliver
from bruce.wire.datagram import DatagramKind, parse_datagram
from bruce.wire.plog import murmur2


@pytest.fixture
def daemon_socket(tmp_path: Path) -> Iterator[tuple[str, socket.socket]]:
    """A UNIX datagram socket standing in for the daemon's input socket."""
    path = str(tmp_path / "bruce.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(2)
    try:
        yield path, sock
    finally:
        sock.close()


def _received(sock: socket.socket, n: int) -> list:
    return [parse_datagram(sock.recv(70000)) for _ in range(n)]


def test_rows_become_datagrams(daemon_socket) -> None:
    path, sock = daemon_socket
    batch = pa.RecordBatch.from_pydict(
        {
            "value": ["a", "b", "c"],
            "key": pa.array([None, b"k", b"k2"], pa.binary()),
            "topic": pa.array([None, "other", None], pa.string()),
            "partition_key": pa.array([None, None, -7], pa.int64()),
            "timestamp": pa.array([11, 12, None], pa.int64()),
        }
    )
    summary = deliver(iter([batch]), write_options({"socket": path, "topic": "events"}))
    assert (summary.mode, summary.rows, summary.delivered, summary.discarded) == ("daemon", 3, 3, {})
    a, b, c = _received(sock, 3)
    assert (a.kind, a.topic, a.key, a.value, a.timestamp) == (DatagramKind.ANY_PARTITION, b"events", b"", b"a", 11)
    java = murmur2(b"k") & 0x7FFFFFFF  # Java's placement: the daemon takes it modulo all partitions
    assert (b.kind, b.topic, b.key, b.partition_key) == (DatagramKind.PARTITION_KEY, b"events", b"k", java)  # option
    assert (c.kind, c.topic, c.key, c.partition_key) == (DatagramKind.PARTITION_KEY, b"events", b"k2", -7)
    assert c.timestamp > 1_600_000_000_000  # no timestamp: now


def test_the_partitioner_option_reaches_daemon_writes(daemon_socket) -> None:
    path, sock = daemon_socket
    batch = pa.RecordBatch.from_pydict({"value": ["a", "b"], "key": pa.array([b"k", None], pa.binary())})
    deliver(iter([batch]), write_options({"socket": path, "topic": "t", "kafka.partitioner": "consistent"}))
    a, b = _received(sock, 2)
    crc = zlib.crc32(b"k")
    assert (a.kind, a.partition_key) == (DatagramKind.PARTITION_KEY, crc - 2**32 if crc >= 2**31 else crc)
    assert (b.kind, b.partition_key) == (DatagramKind.PARTITION_KEY, 0)  # consistent: a null key is crc32(b"") = 0


def test_no_daemon_fails_the_task(tmp_path: Path) -> None:
    options = write_options({"socket": str(tmp_path / "absent.sock"), "topic": "t"})
    with pytest.raises(DeliveryFailed) as failed:
        deliver(iter([pa.RecordBatch.from_pydict({"value": [b"x", b"y"]})]), options)
    summary = failed.value.summary
    assert (summary.delivered, summary.discarded) == (0, {"DAEMON_UNAVAILABLE": 1, "NOT_SENT": 1})
    assert "no bruce daemon is listening" in str(failed.value)


def test_full_socket_is_waited_out_then_fails(daemon_socket) -> None:
    path, sock = daemon_socket
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # nobody reads: the queue fills
    options = write_options({"socket": path, "topic": "t", "delivery.timeout.ms": "300"})
    rows = pa.RecordBatch.from_pydict({"value": [bytes(1000)] * 5000})
    with pytest.raises(DeliveryFailed) as failed:
        deliver(iter([rows]), options)
    summary = failed.value.summary
    assert 0 < summary.delivered < 5000
    assert summary.discarded == {"SOCKET_FULL": 1, "NOT_SENT": 5000 - summary.delivered - 1}
    assert "stayed full for 0.3 s" in summary.first_error


@pytest.mark.parametrize(
    ("columns", "topic", "message"),
    [
        ({"value": pa.array([None], pa.binary())}, "t", "null value"),
        ({"value": [b"v"], "topic": pa.array([None], pa.string())}, None, "null topic"),
    ],
)
def test_rows_a_datagram_cannot_carry(daemon_socket, columns: dict, topic: str | None, message: str) -> None:
    path, _ = daemon_socket
    options = write_options({"socket": path} | ({"topic": topic} if topic else {}))
    with pytest.raises(BadRow, match=message):
        deliver(iter([pa.RecordBatch.from_pydict(columns)]), options)


def test_too_large_datagram_is_a_counted_discard(daemon_socket) -> None:
    path, _ = daemon_socket
    options = write_options({"socket": path, "topic": "t", "max.datagram.size": "100"})
    with pytest.raises(DeliveryFailed) as failed:
        deliver(iter([pa.RecordBatch.from_pydict({"value": [b"ok", bytes(200)]})]), options)
    assert failed.value.summary.delivered == 1
    assert failed.value.summary.discarded == {"MSG_TOO_LARGE": 1}
