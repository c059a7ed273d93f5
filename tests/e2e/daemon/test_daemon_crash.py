"""A task that crashes stops the daemon loudly: ``Daemon.run`` raises the error, the ``bruce`` command logs it and exits
1, and every message is still accounted for."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bruce.producer.dispatch import sender
from bruce.producer.errors import ProducerClosed
from bruce.producer.producer import Producer
from bruce.proxy.config import Broker
from bruce.proxy.config.ports import free_port
from bruce.proxy.daemon.embedded import EmbeddedBroker

from .harness import BruceProcess, DaemonThread, counters_json, make_config, wait_for

pytestmark = pytest.mark.e2e


def _reader_pid(pid: int) -> int:
    children = [int(c) for task in Path(f"/proc/{pid}/task").iterdir() for c in (task / "children").read_text().split()]
    assert len(children) == 1, children
    return children[0]


def test_a_dead_intake_reader_stops_the_command_with_status_1(
    bruce_process: Callable[..., BruceProcess], tansu: EmbeddedBroker, workdir: Path
) -> None:
    sock = str(workdir / "crash.sock")
    bruce = bruce_process(["--receive_socket_name", sock, "--status_port", "0", "--initial_brokers", tansu.address])
    bruce.wait_serving()
    os.kill(_reader_pid(bruce.process.pid), signal.SIGKILL)
    assert bruce.wait() == 1
    log = bruce.log
    assert "the intake reader process ended unexpectedly" in log
    assert "bruce stopped after an error" in log
    assert not os.path.exists(sock)


def test_a_crashed_producer_task_stops_the_daemon_and_accounts(
    start_daemon: Callable[..., DaemonThread], new_topic: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The producer's sender task fails on its first request: the daemon stops, ``run`` raises the failure, and the
    messages it held are discarded as SERVER_SHUTDOWN, wherever they were (received = delivered + discarded, nothing in
    flight)."""
    topic = new_topic(partitions=1)

    async def broken(self: sender.Sender) -> None:
        while not self.dispatcher.ledger.held_messages:  # an idempotent producer starts a sender before any message
            await asyncio.sleep(0.01)
        raise RuntimeError("sender failed on purpose")

    monkeypatch.setattr(sender.Sender, "run", broken)
    d = start_daemon()
    with d.client() as client:
        for i in range(10):
            client.send_any_partition(topic, b"crash-%d" % i)
    wait_for(lambda: not d.running, what="the daemon to stop after the crash")
    assert d.error is not None
    assert "sender failed on purpose" in repr(d.error.exceptions if hasattr(d.error, "exceptions") else d.error)
    a = d.daemon.accounting()
    assert a.balanced and a.in_flight == 0 and a.received == 10 and a.discarded == 10, a
    assert d.discards("SERVER_SHUTDOWN") == 10
    assert d.daemon.producer.counters.get("MsgDiscard", (("reason", "SERVER_SHUTDOWN"), ("topic", topic))) > 0
    d.error = None  # checked: let the fixture's stop pass


def test_status_pages_answer_until_the_end_of_a_long_shutdown(
    start_daemon: Callable[..., DaemonThread], new_topic: Callable[..., str]
) -> None:
    """While the shutdown waits for the first metadata (none comes: no such broker), the status server still answers;
    it stops last."""
    nobody = (Broker("127.0.0.1", free_port()),)  # nothing listens there
    d = start_daemon(make_config(nobody), initial_brokers=nobody, shutdown_max_delay=1500)
    url = d.daemon.status_url
    with d.client() as client:
        client.send_any_partition("waiting", b"w")
    wait_for(lambda: d.accounting().received == 1, what="the datagram")
    d.loop.call_soon_threadsafe(d.daemon.request_shutdown)
    time.sleep(0.3)
    assert counters_json(url)["MsgReceived"] == 1  # still serving during the shutdown
    a = d.stop()
    assert (a.received, a.discarded) == (1, 1)


def test_batches_the_producer_no_longer_takes_are_discarded_not_lost(
    start_daemon: Callable[..., DaemonThread],
    new_topic: Callable[..., str],
    brokers: tuple[Broker, ...],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once the producer refuses batches (closed or failed underneath), what the batcher still holds is discarded as
    SERVER_SHUTDOWN: the shutdown completes normally and every message is accounted for."""
    topic = new_topic(partitions=1)
    d = start_daemon(make_config(brokers, time_ms=60_000, messages=None, nbytes=None))
    with d.client() as client:
        for i in range(5):
            client.send_any_partition(topic, b"held-%d" % i)
    wait_for(lambda: d.call(lambda: d.daemon.batcher.held) == 5, what="five messages in the open batch")

    def refuses(self: Producer, topic: str, messages: list) -> None:
        raise ProducerClosed("the producer is not accepting messages")

    monkeypatch.setattr(Producer, "submit", refuses)
    a = d.stop()
    assert (a.received, a.delivered, a.discarded, a.in_flight) == (5, 0, 5, 0)
    assert d.discards("SERVER_SHUTDOWN") == 5
