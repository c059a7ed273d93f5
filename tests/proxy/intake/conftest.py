"""Fixtures for the intake tests: a short socket path, a recording sink, an intake factory, loop runners, a raw
receiving socket for client tests."""

from __future__ import annotations

import asyncio
import shutil
import socket
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvloop

from bruce.producer.counters import Counters
from bruce.producer.reasons import DiscardReason
from bruce.proxy.intake.intake import DatagramIntake
from bruce.proxy.messages.budget import MessageBudget
from bruce.proxy.messages.message import HeldMessage

TIMEOUT = 10.0


@dataclass
class RecordingSink:
    """Records every outcome the intake reports, by kind and (``log``) all of them in the order reported: a message's
    value, or a discard's ``(reason, detail)``."""

    messages: list[HeldMessage] = field(default_factory=list)
    discards: list[tuple[DiscardReason, str, bytes, bytes, int]] = field(default_factory=list)
    unparsed: list[tuple[DiscardReason, bytes, int | None]] = field(default_factory=list)
    log: list[bytes | tuple[DiscardReason, int | None]] = field(default_factory=list)

    def on_message(self, msg: HeldMessage) -> None:
        self.messages.append(msg)
        self.log.append(msg.value)

    def route(self, msg: HeldMessage) -> None:
        self.on_message(msg)

    def route_many(self, messages: list[HeldMessage]) -> None:
        """Each in turn; if one raises, ``messages`` keeps only those after it (as the router does)."""
        handed = 0
        try:
            for msg in messages:
                handed += 1
                self.on_message(msg)
        except BaseException:
            del messages[:handed]
            raise

    def on_discard(self, reason: DiscardReason, topic: str, key: bytes, value: bytes, client_ts: int) -> None:
        self.discards.append((reason, topic, key, value, client_ts))
        self.log.append((reason, None))

    def on_unparsed(self, reason: DiscardReason, datagram: bytes, *, detail: int | None = None) -> None:
        self.unparsed.append((reason, datagram, detail))
        self.log.append((reason, detail))

    @property
    def outcomes(self) -> int:
        return len(self.messages) + len(self.discards) + len(self.unparsed)


class ListRouter:
    """A router that keeps what it is given, in order (``routed``)."""

    def __init__(self, routed: list[HeldMessage] | None = None) -> None:
        self.routed = [] if routed is None else routed

    def route(self, msg: HeldMessage) -> None:
        self.routed.append(msg)

    def route_many(self, messages: list[HeldMessage]) -> None:
        self.routed.extend(messages)


@pytest.fixture
def sock_path() -> Iterator[str]:
    """A socket path short enough for AF_UNIX (pytest's tmp_path can exceed the 107-byte limit)."""
    d = tempfile.mkdtemp(prefix="bruce-intake-")
    yield str(Path(d) / "bruce.socket")
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def make_intake(sock_path: str) -> Iterator[Callable[..., DatagramIntake]]:
    """``make_intake(**kwargs)`` → a DatagramIntake on ``sock_path`` with a RecordingSink (``.sink``, and its
    ``discards``), fresh
    Counters and a 64 MiB budget unless given. Every intake made is closed at the end of the test."""
    made: list[DatagramIntake] = []

    def make(**kwargs: Any) -> DatagramIntake:
        kwargs.setdefault("sink", RecordingSink())
        kwargs.setdefault("discards", kwargs["sink"])
        kwargs.setdefault("counters", Counters())
        kwargs.setdefault("budget", MessageBudget(64 << 20))
        kwargs.setdefault("reader", "loop")
        intake = DatagramIntake(kwargs.pop("path", sock_path), **kwargs)
        made.append(intake)
        return intake

    yield make
    for intake in made:
        intake.close()


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request: pytest.FixtureRequest) -> Callable[[Coroutine[Any, Any, Any]], Any]:
    """Run a coroutine to completion on a fresh event loop of the parametrized kind, with a timeout."""

    def runner(coro: Coroutine[Any, Any, Any]) -> Any:
        loop = uvloop.new_event_loop() if request.param == "uvloop" else asyncio.new_event_loop()
        try:
            return loop.run_until_complete(asyncio.wait_for(coro, TIMEOUT))
        finally:
            loop.close()

    return runner


async def wait_until(predicate: Callable[[], bool], timeout: float = TIMEOUT) -> None:
    """Poll ``predicate`` until it holds; fail loudly after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met within the timeout")
        await asyncio.sleep(0.002)


@pytest.fixture
def until() -> Callable[..., Awaitable[None]]:
    return wait_until


def connect(path: str, *, blocking: bool = True) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.connect(path)
    s.setblocking(blocking)
    return s


@pytest.fixture
def client_socket() -> Iterator[Callable[..., socket.socket]]:
    """``client_socket(path, blocking=True)`` → a connected UNIX datagram socket, closed after the test."""
    made: list[socket.socket] = []

    def make(path: str, *, blocking: bool = True) -> socket.socket:
        s = connect(path, blocking=blocking)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


@pytest.fixture
def receiver(sock_path: str) -> Iterator[socket.socket]:
    """A plain bound socket at ``sock_path`` standing in for the daemon (client tests read it directly)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(sock_path)
    s.settimeout(TIMEOUT)
    yield s
    s.close()
