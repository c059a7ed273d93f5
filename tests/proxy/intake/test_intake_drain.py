"""Shutdown and failure: every datagram the kernel accepted is read at shutdown (both readers), blocked senders are
released with EPIPE, the reader process's pipe is emptied, a stuck or dead reader process is handled loudly, and the
reader process never outlives the daemon."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from bruce.producer.reasons import DiscardReason
from bruce.proxy.intake.intake import DatagramIntake, IntakeError
from bruce.wire.datagram import build_any_partition

from .conftest import TIMEOUT, connect, wait_until


def numbered(i: int) -> bytes:
    return build_any_partition("t", b"%d" % i, timestamp=i)


def process_state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def values(intake: DatagramIntake) -> list[int]:
    return [int(m.value) for m in intake.sink.messages]


class FloodingSender(threading.Thread):
    """Sends numbered datagrams on a blocking socket until the daemon refuses (EPIPE); ``sent`` counts successes."""

    def __init__(self, path: str) -> None:
        super().__init__(daemon=True)
        self.sock = connect(path)
        self.sent = 0
        self.error: OSError | None = None

    def run(self) -> None:
        try:
            while True:
                self.sock.send(numbered(self.sent + 1))
                self.sent += 1
        except OSError as e:
            self.error = e
        finally:
            self.sock.close()


def test_drain_reads_the_kernel_queue(make_intake: Callable[..., DatagramIntake], sock_path: str) -> None:
    intake = make_intake()
    intake.open()  # not reading: the queue fills
    with connect(sock_path, blocking=False) as client:
        queued = 0
        with pytest.raises(BlockingIOError):
            while True:
                client.send(numbered(queued + 1))
                queued += 1
    assert queued >= 2  # the kernel's queue (about 11 with the default net.unix.max_dgram_qlen)
    assert asyncio.run(intake.drain()) == queued
    assert values(intake) == list(range(1, queued + 1))
    assert not os.path.exists(sock_path)


def test_blocked_senders_are_released_and_nothing_they_sent_is_lost(
    make_intake: Callable[..., DatagramIntake], sock_path: str
) -> None:
    intake = make_intake()
    intake.open()
    senders = [FloodingSender(sock_path) for _ in range(3)]
    for s in senders:
        s.start()
    time.sleep(0.2)  # the queue is full and all three are blocked in send()
    assert all(s.is_alive() for s in senders)
    asyncio.run(intake.drain())
    for s in senders:
        s.join(TIMEOUT)
        assert not s.is_alive()
        assert isinstance(s.error, BrokenPipeError)
    assert len(intake.sink.messages) == sum(s.sent for s in senders)


def test_reader_process_forwards_everything_at_shutdown(
    make_intake: Callable[..., DatagramIntake], sock_path: str, run: Any
) -> None:
    intake = make_intake(reader="process")
    intake.open()
    sender = FloodingSender(sock_path)

    async def scenario() -> None:
        serving = asyncio.ensure_future(intake.serve())
        await asyncio.sleep(0.05)
        sender.start()
        await wait_until(lambda: intake.datagrams > 2000)
        time.sleep(0.2)  # the loop is busy: the reader process keeps reading, the pipe fills
        intake.stop_accepting()
        await intake.drain()
        intake.close()
        await serving

    run(scenario())
    sender.join(TIMEOUT)
    assert isinstance(sender.error, BrokenPipeError)
    assert values(intake) == list(range(1, sender.sent + 1))  # every successful send, in order


def test_a_busy_loop_does_not_block_clients_with_the_reader_process(
    make_intake: Callable[..., DatagramIntake], sock_path: str, run: Any
) -> None:
    """1500 datagrams sent while the event loop is blocked (by the sending itself): they all get through, because
    the reader process empties the kernel queue into its pipe (55 KB: within even a default 64 KiB pipe). Reading in
    the loop, no more than the kernel's ~11 would ever get through and the deadline would fail the test."""
    intake = make_intake(reader="process")
    n = 1500

    async def scenario() -> None:
        serving = asyncio.ensure_future(intake.serve())
        await asyncio.sleep(0.1)
        deadline = time.monotonic() + TIMEOUT / 2
        with connect(sock_path, blocking=False) as client:
            for i in range(1, n + 1):
                while True:
                    try:
                        client.send(numbered(i))
                        break
                    except BlockingIOError:
                        assert time.monotonic() < deadline, f"stuck after {i - 1} datagrams"
                        time.sleep(0.0005)
        assert intake.datagrams == 0  # the loop did not read any of them
        await intake.drain()
        intake.close()
        await serving

    run(scenario())
    assert values(intake) == list(range(1, n + 1))


def test_drain_recovers_from_a_stuck_reader_process(
    make_intake: Callable[..., DatagramIntake], sock_path: str, run: Any
) -> None:
    intake = make_intake(reader="process")

    async def scenario() -> None:
        serving = asyncio.ensure_future(intake.serve())
        await asyncio.sleep(0.1)
        child = intake._process.process.pid
        os.kill(child, signal.SIGSTOP)
        await wait_until(lambda: process_state(child) == "T")  # stopped before anything arrives
        with connect(sock_path, blocking=False) as client:
            for i in range(1, 6):
                client.send(numbered(i))
        await intake.drain(timeout=0.3)  # the child is killed; we read its queue ourselves
        intake.close()
        await serving

    run(scenario())
    assert values(intake) == [1, 2, 3, 4, 5]


def test_a_dying_reader_process_stops_serve_loudly(make_intake: Callable[..., DatagramIntake], run: Any) -> None:
    intake = make_intake(reader="process")

    async def scenario() -> None:
        serving = asyncio.ensure_future(intake.serve())
        await asyncio.sleep(0.1)
        intake._process.process.kill()
        with pytest.raises(IntakeError, match="reader process ended unexpectedly"):
            await serving

    run(scenario())


@pytest.mark.parametrize("reader", ["loop", "process"])
def test_a_failing_sink_stops_serve_loudly(
    make_intake: Callable[..., DatagramIntake], sock_path: str, run: Any, reader: str
) -> None:
    intake = make_intake(reader=reader)

    def broken(msg: object) -> None:
        raise RuntimeError("router bug")

    intake.sink.on_message = broken

    async def scenario() -> None:
        serving = asyncio.ensure_future(intake.serve())
        await asyncio.sleep(0.1)
        with connect(sock_path) as client:
            client.send(numbered(1))
        with pytest.raises(RuntimeError, match="router bug"):
            await serving

    run(scenario())


def test_reader_process_ignores_ctrl_c(make_intake: Callable[..., DatagramIntake], sock_path: str, run: Any) -> None:
    intake = make_intake(reader="process")

    async def scenario() -> None:
        serving = asyncio.ensure_future(intake.serve())
        await asyncio.sleep(0.3)
        os.kill(intake._process.process.pid, signal.SIGINT)  # the terminal sends it to the whole group
        await asyncio.sleep(0.1)
        assert intake._process.process.poll() is None
        with connect(sock_path) as client:
            client.send(numbered(7))
        await wait_until(lambda: intake.datagrams == 1)
        await intake.drain()
        intake.close()
        await serving

    run(scenario())
    assert values(intake) == [7]


DAEMON = """
import asyncio, sys
from bruce.producer.counters import Counters
from bruce.proxy.messages.budget import MessageBudget
from bruce.proxy.intake.intake import DatagramIntake

class Sink:
    def route(self, m): pass
    def route_many(self, ms): pass
    def on_discard(self, *a): pass
    def on_unparsed(self, *a, **k): pass

async def main():
    sink = Sink()
    intake = DatagramIntake(sys.argv[1], sink=sink, discards=sink, budget=MessageBudget(1 << 20), counters=Counters())
    serving = asyncio.ensure_future(intake.serve())
    await asyncio.sleep(0.3)
    print(intake._process.process.pid, flush=True)
    await serving

asyncio.run(main())
"""


def test_reader_process_dies_with_the_daemon(sock_path: str) -> None:
    daemon = subprocess.Popen([sys.executable, "-c", DAEMON, sock_path], stdout=subprocess.PIPE, text=True)
    try:
        child = int(daemon.stdout.readline())
        os.kill(child, 0)  # running
    finally:
        daemon.kill()  # no chance to clean up
        daemon.wait(TIMEOUT)
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.02)
    raise AssertionError(f"the reader process {child} outlived the daemon")


def test_zero_length_datagram_is_malformed_not_a_shutdown(
    make_intake: Callable[..., DatagramIntake], sock_path: str, run: Any
) -> None:
    intake = make_intake(reader="process")

    async def scenario() -> None:
        serving = asyncio.ensure_future(intake.serve())
        await asyncio.sleep(0.1)
        with connect(sock_path) as client:
            client.send(b"")
            client.send(numbered(1))
        await wait_until(lambda: intake.datagrams == 2)
        await intake.drain()
        intake.close()
        await serving

    run(scenario())
    assert intake.sink.unparsed == [(DiscardReason.MALFORMED, b"", None)]
    assert values(intake) == [1]


def test_socket_connect_refused_after_close(make_intake: Callable[..., DatagramIntake], sock_path: str) -> None:
    intake = make_intake()
    intake.open()
    client = connect(sock_path)
    intake.close()
    with pytest.raises((ConnectionRefusedError, BrokenPipeError)):
        client.send(b"x")
    client.close()
    with pytest.raises(FileNotFoundError):
        socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).connect(sock_path)
