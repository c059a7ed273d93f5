"""The daemon under systemd's notification protocol, against a datagram socket bound by the test: watchdog pings from
the start, READY=1 once the input socket and the first metadata are up (with the counts in STATUS=), STOPPING=1 when
the orderly shutdown begins."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from bruce.proxy.config import Broker

from .harness import DaemonThread, make_config, wait_for

pytestmark = pytest.mark.e2e


def test_ready_status_watchdog_stopping(
    start_daemon: Callable[..., DaemonThread],
    brokers: tuple[Broker, ...],
    new_topic: Callable[..., str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = new_topic(partitions=1)
    path = str(tmp_path / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        sock.settimeout(10)
        monkeypatch.setenv("NOTIFY_SOCKET", path)
        monkeypatch.setenv("WATCHDOG_USEC", "1000000")  # a ping every 0.5 s (the shortest honoured)
        d = start_daemon(make_config(brokers))
        messages = [sock.recv(4096).decode()]
        while not messages[-1].startswith("READY=1"):
            messages.append(sock.recv(4096).decode())
        assert d.daemon.metadata_ready.is_set()
        assert messages[-1] == "READY=1\nSTATUS=0 received, 0 delivered, 0 discarded, 0 in flight; 0 brokers connected"
        with d.client() as client:
            for i in range(3):
                client.send_any_partition(topic, b"m%d" % i)
        d.settle(3)
        pings = 0
        while pings < 3:  # 1 s of the watchdog's pings
            if sock.recv(4096) == b"WATCHDOG=1":
                pings += 1
        d.stop()
        rest = []
        sock.settimeout(0.5)
        try:
            while True:
                rest.append(sock.recv(4096).decode())
        except TimeoutError:
            pass
        stopping = [m for m in rest if m.startswith("STOPPING=1")]
        assert stopping == [
            "STOPPING=1\nSTATUS=stopping: 3 received, 3 delivered, 0 discarded, 0 in flight; 1 brokers connected"
        ]
        wait_for(lambda: not d.running)
