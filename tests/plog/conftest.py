"""Fixtures for the plog tests: a fake sink with a switchable budget, an event-loop runner (asyncio and uvloop), and
small loopback clients."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvloop

from bruce.producer.reasons import DiscardReason

TIMEOUT = 10.0


@dataclass
class FakeSink:
    """Records what the listeners submit and reject. ``full`` makes the budget full: submissions are refused and
    recorded."""

    full: bool = False
    refuse_topics: set[str] = field(default_factory=set)
    messages: list[tuple[str, bytes | None, bytes, str]] = field(default_factory=list)
    partition_keys: list[int | None] = field(default_factory=list)
    refused: list[tuple[str, bytes | None, bytes, str]] = field(default_factory=list)
    rejected: list[tuple[DiscardReason, bytes, str | None, str]] = field(default_factory=list)
    waiters: dict[Callable[[], object], int] = field(default_factory=dict)
    failures: list[tuple[Exception, str]] = field(default_factory=list)
    availability_checks: int = 0

    def submit(self, topic: str, key: bytes | None, value: bytes, *, partition_key: int | None, listener: str) -> bool:
        assert (partition_key is None) == (key is None)
        entry = (topic, key, value, listener)
        if self.full or topic in self.refuse_topics:
            self.refused.append(entry)
            return False
        self.messages.append(entry)
        self.partition_keys.append(partition_key)
        return True

    def reject(self, reason: DiscardReason, data: bytes, *, topic: str | None, listener: str) -> None:
        self.rejected.append((reason, bytes(data), topic, listener))

    def budget_available(self, size: int) -> bool:
        self.availability_checks += 1
        return not self.full

    def notify_when_free(self, callback: Callable[[], object], size: int) -> None:
        if self.full:
            self.waiters[callback] = size
        else:
            asyncio.get_running_loop().call_soon(callback)

    def cancel_notify(self, callback: Callable[[], object]) -> None:
        self.waiters.pop(callback, None)

    def fail(self, error: Exception, *, listener: str) -> None:
        self.failures.append((error, listener))

    def free(self) -> None:
        self.full = False
        waiters = list(self.waiters)
        self.waiters.clear()
        for callback in waiters:
            callback()

    @property
    def values(self) -> list[bytes]:
        return [m[2] for m in self.messages]

    @property
    def reasons(self) -> list[str]:
        return [r[0].value for r in self.rejected]


@pytest.fixture
def sink() -> FakeSink:
    return FakeSink()


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request: pytest.FixtureRequest) -> Callable[[Coroutine[Any, Any, Any]], Any]:
    """Run a coroutine to completion on a fresh loop of each kind, with a deadline."""
    factory = uvloop.new_event_loop if request.param == "uvloop" else asyncio.new_event_loop

    def runner(coro: Coroutine[Any, Any, Any]) -> Any:
        with asyncio.Runner(loop_factory=factory) as r:
            return r.run(asyncio.wait_for(coro, TIMEOUT))

    return runner


async def until(condition: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    """Wait (polling) until ``condition()`` holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


@pytest.fixture
def wait_for() -> Callable[..., Awaitable[None]]:
    return until


class UdpClient(asyncio.DatagramProtocol):
    """A connected loopback UDP socket that queues the replies it receives (at most 1000)."""

    def __init__(self) -> None:
        self.replies: asyncio.Queue[bytes] = asyncio.Queue(maxsize=1000)
        self.transport: asyncio.DatagramTransport | None = None

    @classmethod
    async def connect(cls, address: tuple[str, int]) -> UdpClient:
        loop = asyncio.get_running_loop()
        _, client = await loop.create_datagram_endpoint(cls, remote_addr=address)
        return client

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple) -> None:
        self.replies.put_nowait(data)

    def send(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.sendto(data)

    async def reply(self, timeout: float = 5.0) -> bytes:
        return await asyncio.wait_for(self.replies.get(), timeout)

    @property
    def port(self) -> int:
        assert self.transport is not None
        return self.transport.get_extra_info("sockname")[1]

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


@pytest.fixture
def udp_client() -> type[UdpClient]:
    return UdpClient
