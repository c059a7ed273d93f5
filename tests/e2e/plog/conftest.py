"""Fixtures for plog input end to end: an in-process daemon with plog listeners on free loopback ports (the session
broker as its initial broker), plain-socket senders, and the status pages' per-listener counters; ``workdir``,
``brokers`` and ``bruce_process`` come from the daemon tests' harness.

Every daemon started here is stopped by its fixture; every in-process stop checks the accounting invariant."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from dashboard_check import metric_counters

from bruce.proxy.config import Broker, Config
from bruce.proxy.config.listeners import ListenerConfig

from ..daemon.harness import DaemonThread, brokers, bruce_process, daemon_starter, http_get, make_config, workdir

__all__ = ["brokers", "bruce_process", "plog_daemon", "workdir"]

TIMEOUT = 10.0


def udp(topic: str | None, **settings: Any) -> ListenerConfig:
    """A UDP listener on a free port (named ``udp`` unless given)."""
    return ListenerConfig(**{"protocol": "udp", "port": 0, "topic": topic, "name": "udp", **settings})


def tcp(topic: str, **settings: Any) -> ListenerConfig:
    """A TCP listener on a free port (named ``tcp`` unless given)."""
    return ListenerConfig(**{"protocol": "tcp", "port": 0, "topic": topic, "name": "tcp", **settings})


class PlogDaemon(DaemonThread):
    """A :class:`DaemonThread` with plog listeners; ``address(name)`` is where a listener listens."""

    def address(self, name: str) -> tuple[str, int]:
        for listener in self.daemon.plog.listeners:
            if listener.name == name:
                return listener.address
        raise AssertionError(f"no plog listener named {name}")

    def stats(self, name: str) -> dict[str, Any]:
        """A listener's STAT document (as the STAT command answers it), read on the daemon's loop."""

        def read() -> dict[str, Any]:
            listener = next(x for x in self.daemon.plog.listeners if x.name == name)
            defrag = getattr(listener, "defrag", None)
            pending = {"pending_messages": len(defrag), "pending_bytes": defrag.used} if defrag is not None else {}
            return listener.stats.to_dict(**pending)

        return self.call(read)

    def plog_counters(self) -> dict[tuple[str, str], int]:
        """``/metrics``' plog counters: ``{(name, listener): value}``."""
        status, _, text = http_get(self.daemon.status_url + "/metrics")
        assert status == 200
        return {
            (c["name"], c["labels"]["listener"]): c["value"]
            for c in metric_counters(text)
            if c["location"] == "bruce.proxy.plog"
        }


@pytest.fixture
def plog_daemon(workdir: Path, brokers: tuple[Broker, ...]) -> Iterator[Callable[..., PlogDaemon]]:
    """``plog_daemon(listeners, config=None, **options) -> PlogDaemon`` (serving; stopped at teardown)."""
    with daemon_starter(workdir, brokers, PlogDaemon) as start:

        def start_plog(listeners: Sequence[ListenerConfig], config: Config | None = None, **options: Any) -> PlogDaemon:
            config = dataclasses.replace(config or make_config(brokers), plog_listeners=tuple(listeners))
            return start(config, reader="loop", **options)

        yield start_plog


def send_udp(address: tuple[str, int], packets: Sequence[bytes]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for packet in packets:
            s.sendto(packet, address)


def ask_udp(address: tuple[str, int], packet: bytes) -> bytes:
    """Send one packet and return the reply datagram."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(TIMEOUT)
        s.sendto(packet, address)
        return s.recvfrom(65536)[0]


def free_port(kind: int = socket.SOCK_DGRAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
