"""Fixtures for the daemon's end-to-end tests: a short working directory (UNIX socket paths are limited to 107
bytes), the session broker as the daemon's initial broker, and factories for in-process and subprocess daemons that
are always stopped afterwards."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bruce.proxy.config import Broker, Config
from bruce.proxy.daemon import Daemon
from bruce.proxy.embedded import EmbeddedBroker

from .harness import BruceProcess, DaemonThread, make_config, make_options, start_bruce


@pytest.fixture
def workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="bruce-e2e-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def brokers(tansu: EmbeddedBroker) -> tuple[Broker, ...]:
    return (Broker("127.0.0.1", tansu.port),)


@pytest.fixture
def start_daemon(workdir: Path, brokers: tuple[Broker, ...]) -> Iterator[Callable[..., DaemonThread]]:
    """``start_daemon(config=None, reader="process", **options) -> DaemonThread`` (serving; stopped at teardown)."""
    running: list[DaemonThread] = []

    def start(config: Config | None = None, *, reader: str = "process", **overrides: Any) -> DaemonThread:
        options = make_options(workdir, brokers, **overrides)
        daemon = Daemon(options, config or make_config(options.initial_brokers), reader=reader)
        daemon.preflight()
        thread = DaemonThread(daemon)
        running.append(thread)
        return thread.start()

    yield start
    for thread in running:
        if thread.running:
            thread.stop()


@pytest.fixture
def bruce_process(workdir: Path) -> Iterator[Callable[..., BruceProcess]]:
    """``bruce_process(args) -> BruceProcess`` (the real command; killed at teardown if still running)."""
    started: list[BruceProcess] = []

    def start(args: list[str], **kwargs: Any) -> BruceProcess:
        process = start_bruce(args, workdir / f"bruce-{len(started)}.log", **kwargs)
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()
