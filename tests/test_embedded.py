"""The embedded broker launcher: starts tansu on loopback, creates topics, and never outlives its parent."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from bruce.proxy.daemon.embedded import EmbeddedBroker, EmbeddedBrokerError


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_broker_listens_on_loopback_and_stops() -> None:
    with EmbeddedBroker() as broker:
        assert broker.address.startswith("127.0.0.1:")
        with socket.create_connection(("127.0.0.1", broker.port), timeout=2):
            pass
        broker.create_topic("embedded-check", 3)
        with pytest.raises(EmbeddedBrokerError, match="embedded-check"):
            broker.create_topic("embedded-check", 3)  # already exists: a clear error naming the topic
        pid = broker.process.pid
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def test_broker_dies_with_a_killed_parent() -> None:
    code = (
        "from bruce.proxy.daemon.embedded import EmbeddedBroker; import time\n"
        "b = EmbeddedBroker().start(); print(b.process.pid, flush=True); time.sleep(60)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    broker_pid = int(parent.stdout.readline())
    assert _alive(broker_pid)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 5
    while _alive(broker_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _alive(broker_pid):
        os.kill(broker_pid, signal.SIGKILL)
        pytest.fail("the embedded broker outlived its killed parent")
