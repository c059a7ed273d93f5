"""The sd_notify protocol: ``$NOTIFY_SOCKET`` as a path or an abstract ``@`` name, ``$WATCHDOG_USEC`` (and
``$WATCHDOG_PID``), nothing without the variable, and a send that fails neither blocks nor raises."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import pytest

from bruce.proxy.daemon.systemd import WATCHDOG_FLOOR_USEC, Notifier, from_environment, supervise


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
    mine = from_environment({"NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "4000000", "WATCHDOG_PID": str(os.getpid())})
    assert mine is not None and mine.watchdog_interval == 2.0


def test_a_failing_send_is_dropped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    notifier = Notifier(str(tmp_path / "nobody-listens"))
    assert notifier.send(READY=1) is False
    assert notifier.send(READY=1) is False
    assert len([r for r in caplog.records if "cannot notify systemd" in r.message]) == 1  # logged once
    notifier.close()


def test_supervise_pings_then_ready_once(tmp_path: Path) -> None:
    path = str(tmp_path / "notify")
    with receiver(path) as sock:
        notifier = Notifier(path, watchdog_usec=WATCHDOG_FLOOR_USEC)  # a ping every 0.5 s

        async def main() -> None:
            metadata = asyncio.Event()
            task = asyncio.create_task(supervise(notifier, metadata, lambda: "fine"))
            await asyncio.sleep(0.7)
            metadata.set()
            await asyncio.sleep(0.7)
            task.cancel()

        asyncio.run(main())
        messages = received(sock)
        assert messages.count(b"READY=1\nSTATUS=fine") == 1
        ready = messages.index(b"READY=1\nSTATUS=fine")
        assert messages[:ready].count(b"WATCHDOG=1") >= 2  # the watchdog is fed before READY too
        assert messages[ready:].count(b"WATCHDOG=1") >= 1  # and after (every 0.5 s)
        notifier.close()


def received(sock: socket.socket) -> list[bytes]:
    """Every datagram waiting on ``sock``."""
    sock.setblocking(False)
    messages = []
    while True:
        try:
            messages.append(sock.recv(4096))
        except BlockingIOError:
            return messages


class Counting(Notifier):
    """A notifier counting what it is asked to send (the kernel keeps only a few datagrams queued)."""

    sent = 0

    def send(self, **fields: str | int) -> bool:
        self.sent += 1
        return super().send(**fields)


def test_a_tiny_watchdog_timeout_is_raised_to_the_floor(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """WATCHDOG_USEC=1 would ask for a ping every half microsecond: raised to 1 s, said once, no busy loop."""
    path = str(tmp_path / "notify")
    with receiver(path) as sock:
        notifier = from_environment({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "1"})
        assert notifier is not None and notifier.watchdog_interval == 0.5
        notifier.close()
        counting = Counting(path, watchdog_usec=1)

        async def main() -> None:
            metadata = asyncio.Event()
            metadata.set()
            task = asyncio.create_task(supervise(counting, metadata, lambda: "fine"))
            await asyncio.sleep(1.2)
            task.cancel()

        asyncio.run(main())
        assert 3 <= counting.sent <= 5, counting.sent  # READY, then a ping at 0, 0.5 and 1.0 s
        assert received(sock).count(b"WATCHDOG=1") >= 2
        warnings = [r.getMessage() for r in caplog.records if "WATCHDOG_USEC" in r.getMessage()]
        assert warnings == 2 * [
            "WATCHDOG_USEC=1 (WatchdogSec=) is under 1 s: pinging systemd's watchdog every 0.5 s instead; "
            "set WatchdogSec= to at least 1 s in the unit"
        ]  # one line for each notifier
        counting.close()
