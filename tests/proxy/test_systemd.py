"""The sd_notify protocol: ``$NOTIFY_SOCKET`` as a path or an abstract ``@`` name, ``$WATCHDOG_USEC`` (and
``$WATCHDOG_PID``), nothing without the variable, and a send that fails neither blocks nor raises."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import pytest

from bruce.proxy.daemon.systemd import Notifier, from_environment, supervise


def receiver(address: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(address)
    sock.settimeout(5)
    return sock


def test_path_socket(tmp_path: Path) -> None:
    path = str(tmp_path / "notify")
    with receiver(path) as sock:
        notifier = from_environment({"NOTIFY_SOCKET": path})
        assert notifier is not None and notifier.watchdog_interval is None
        assert notifier.send(READY=1, STATUS="1 received")
        assert sock.recv(4096) == b"READY=1\nSTATUS=1 received"
        notifier.close()


def test_abstract_socket_and_watchdog() -> None:
    name = f"@bruce-test-{os.getpid()}"
    with receiver("\0" + name[1:]) as sock:
        notifier = from_environment({"NOTIFY_SOCKET": name, "WATCHDOG_USEC": "3000000"})
        assert notifier is not None and notifier.watchdog_interval == 1.5
        assert notifier.send(WATCHDOG=1)
        assert sock.recv(4096) == b"WATCHDOG=1"
        notifier.close()


def test_environment_rules() -> None:
    assert from_environment({}) is None
    assert from_environment({"NOTIFY_SOCKET": "relative/path"}) is None
    other = from_environment({"NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "1000", "WATCHDOG_PID": "1"})
    assert other is not None and other.watchdog_interval is None  # the watchdog is another process's
    mine = from_environment({"NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "1000", "WATCHDOG_PID": str(os.getpid())})
    assert mine is not None and mine.watchdog_interval == 0.0005


def test_a_failing_send_is_dropped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    notifier = Notifier(str(tmp_path / "nobody-listens"))
    assert notifier.send(READY=1) is False
    assert notifier.send(READY=1) is False
    assert len([r for r in caplog.records if "cannot notify systemd" in r.message]) == 1  # logged once
    notifier.close()


def test_supervise_pings_then_ready_once(tmp_path: Path) -> None:
    path = str(tmp_path / "notify")
    with receiver(path) as sock:
        notifier = Notifier(path, watchdog_usec=100_000)  # a ping every 50 ms

        async def main() -> None:
            metadata = asyncio.Event()
            task = asyncio.create_task(supervise(notifier, metadata, lambda: "fine"))
            await asyncio.sleep(0.2)
            metadata.set()
            await asyncio.sleep(0.2)
            task.cancel()

        asyncio.run(main())
        sock.setblocking(False)
        messages = []
        while True:
            try:
                messages.append(sock.recv(4096))
            except BlockingIOError:
                break
        assert messages.count(b"READY=1\nSTATUS=fine") == 1
        ready = messages.index(b"READY=1\nSTATUS=fine")
        assert messages[:ready].count(b"WATCHDOG=1") >= 2  # the watchdog is fed before READY too
        assert messages[ready:].count(b"WATCHDOG=1") >= 2
        notifier.close()
