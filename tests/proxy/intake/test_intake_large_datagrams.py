"""Bruce's startup check for large datagrams (a max_input_msg_size + 1 test datagram over a socketpair), and large
datagrams end to end when they are allowed."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bruce.client import BruceClient
from bruce.proxy.intake.intake import DATAGRAM_SIZE_LIMIT, DatagramIntake, IntakeError, check_large_datagrams

from .conftest import wait_until


def _default_limit() -> int:
    """The largest UNIX datagram the default send buffer carries here (found by bisection)."""
    lo, hi = 1, 16 << 20
    while lo < hi:
        mid = (lo + hi + 1) // 2
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        with a, b:
            a.setblocking(False)
            try:
                a.send(bytes(mid))
                lo = mid
            except OSError:
                hi = mid - 1
    return lo


DEFAULT_LIMIT = _default_limit()
WMEM_MAX = int(Path("/proc/sys/net/core/wmem_max").read_text())


def test_default_size_needs_nothing() -> None:
    assert check_large_datagrams(65536) is None
    assert check_large_datagrams(DEFAULT_LIMIT - 1) is None  # the test datagram (limit + 1) still fits


def test_large_size_needs_the_option() -> None:
    size = DEFAULT_LIMIT  # its test datagram is one byte more than the default send buffer carries
    with pytest.raises(IntakeError, match="allow_large_unix_datagrams") as e:
        check_large_datagrams(size)
    assert "SO_SNDBUF" in str(e.value)
    sndbuf = check_large_datagrams(size, allow_large_unix_datagrams=True)
    assert sndbuf is not None and sndbuf > size


def test_size_beyond_what_the_kernel_allows() -> None:
    too_big = 2 * WMEM_MAX + 100_000  # more than SO_SNDBUF can be raised to without privileges
    with pytest.raises(IntakeError, match="even with SO_SNDBUF"):
        check_large_datagrams(too_big, allow_large_unix_datagrams=True)


@pytest.mark.parametrize("size", [0, -1, DATAGRAM_SIZE_LIMIT + 1])
def test_out_of_range_sizes(size: int) -> None:
    with pytest.raises(IntakeError, match="max_input_msg_size"):
        check_large_datagrams(size, allow_large_unix_datagrams=True)


@pytest.mark.parametrize("reader", ["loop", "process"])
def test_large_datagrams_end_to_end(
    make_intake: Callable[..., DatagramIntake], sock_path: str, run: Any, reader: str
) -> None:
    limit = DEFAULT_LIMIT + 1000
    assert check_large_datagrams(limit, allow_large_unix_datagrams=True)
    intake = make_intake(reader=reader, max_input_msg_size=limit)
    value = bytes(range(256)) * ((limit - 40) // 256)

    async def scenario() -> None:
        serving = asyncio.ensure_future(intake.serve())
        await asyncio.sleep(0.1)
        with BruceClient(sock_path, max_datagram_size=limit) as client:
            client.send_any_partition("big", value)  # the client raises its SO_SNDBUF by itself
        await wait_until(lambda: intake.datagrams == 1)
        await intake.drain()
        intake.close()
        await serving

    run(scenario())
    assert [m.value for m in intake.sink.messages] == [value]
