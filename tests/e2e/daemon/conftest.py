"""Fixtures for the daemon's end-to-end tests: ``workdir``, ``brokers`` and ``bruce_process`` (from the harness,
shared with the plog inputs' tests) and ``start_daemon``, in-process daemons that are always stopped afterwards."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bruce.proxy.config import Broker

from .harness import DaemonThread, brokers, bruce_process, daemon_starter, workdir

__all__ = ["brokers", "bruce_process", "start_daemon", "workdir"]


@pytest.fixture
def start_daemon(workdir: Path, brokers: tuple[Broker, ...]) -> Iterator[Callable[..., DaemonThread]]:
    """``start_daemon(config=None, reader="process", **options) -> DaemonThread`` (serving; stopped at teardown)."""
    with daemon_starter(workdir, brokers) as start:
        yield start
