"""plog TCP input through the daemon to tansu, read back with confluent-kafka: lines split across reads, an over-long
line (counted and discarded, the next line still delivered), a reset cutting a line (counted), and backpressure: with
a tiny budget every line of a fast sender is delivered, none discarded, because the connection pauses instead."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable

import pytest

from bruce.proxy.config import Broker
from bruce.proxy.daemon.embedded import EmbeddedBroker

from ..daemon.harness import consume_topic, make_config, wait_for
from .conftest import PlogDaemon, tcp

pytestmark = pytest.mark.e2e


def test_lines_split_across_reads_and_an_over_long_line(
    plog_daemon: Callable[..., PlogDaemon], new_topic: Callable[..., str], tansu: EmbeddedBroker
) -> None:
    topic = new_topic(partitions=1)
    d = plog_daemon([tcp(topic, max_line=100)])
    pieces = [b"fir", b"st\r\nsec", b"ond\n", b"L" * 150, b"L" * 150 + b"\nafter the long one\n", b"last, no newline"]
    with socket.create_connection(d.address("tcp")) as conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for piece in pieces:
            conn.sendall(piece)
            time.sleep(0.02)  # separate reads on the daemon's side
        conn.shutdown(socket.SHUT_WR)
        a = d.settle(5)
    assert (a.received, a.delivered, a.discarded) == (5, 4, 1)
    assert d.discards("LONG_MSG") == 1
    reads = sorted(consume_topic(tansu.address, topic, 1, 4), key=lambda r: r.offset)
    assert [r.value for r in reads] == [b"first", b"second", b"after the long one", b"last, no newline"]
    counters = d.plog_counters()
    assert (counters[("PlogTcpLines", "tcp")], counters[("PlogTcpLineTooLong", "tcp")]) == (4, 1)


def test_a_reset_connection_loses_only_its_cut_line(
    plog_daemon: Callable[..., PlogDaemon], new_topic: Callable[..., str], tansu: EmbeddedBroker
) -> None:
    topic = new_topic(partitions=1)
    d = plog_daemon([tcp(topic)])
    conn = socket.create_connection(d.address("tcp"))
    conn.sendall(b"whole\nhalf a li")
    wait_for(lambda: d.accounting().received == 1, what="the whole line")
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()  # a reset
    a = d.settle(2)
    assert (a.delivered, a.discarded, d.discards("MALFORMED")) == (1, 1, 1)
    assert d.plog_counters()[("PlogTcpPartialLines", "tcp")] == 1
    assert [r.value for r in consume_topic(tansu.address, topic, 1, 1)] == [b"whole"]


def test_backpressure_with_a_tiny_budget_loses_nothing(
    plog_daemon: Callable[..., PlogDaemon],
    new_topic: Callable[..., str],
    tansu: EmbeddedBroker,
    brokers: tuple[Broker, ...],
) -> None:
    """A 4 KiB budget holds about 8 lines of 50 bytes; 3000 lines written as fast as the socket takes them all arrive,
    none is NO_MEM: the connection stops reading whenever the budget is full."""
    topic = new_topic(partitions=2)
    d = plog_daemon([tcp(topic)], make_config(brokers, time_ms=2), msg_buffer_max=4)
    lines = [b"line %05d " % i + b"." * 40 for i in range(3000)]
    with socket.create_connection(d.address("tcp")) as conn:
        conn.sendall(b"".join(line + b"\n" for line in lines))
        conn.shutdown(socket.SHUT_WR)
        a = d.settle(len(lines), timeout=60)
    assert (a.received, a.delivered, a.discarded) == (3000, 3000, 0)
    counters = d.plog_counters()
    assert counters[("PlogTcpPauses", "tcp")] > 0
    assert counters[("PlogFailedToSend", "tcp")] == 0 and d.discards("NO_MEM") == 0
    high_water = d.call(lambda: d.daemon.budget.high_water)
    assert high_water <= 4 * 1024
    reads = consume_topic(tansu.address, topic, 2, len(lines))
    assert sorted(r.value for r in reads) == lines
