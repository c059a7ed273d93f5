"""Senders written for plog work unchanged: the `socat` commands from plog's README, against our listeners.

socat is installed by scripts/bootstrap.sh; its absence is a failure, not a skip.
"""

from __future__ import annotations

import asyncio
import shutil

import pytest

from bruce.proxy.config.listeners import ListenerConfig
from bruce.proxy.plog.listeners import TcpListener, UdpListener


def socat() -> str:
    path = shutil.which("socat")
    if path is None:
        pytest.fail("socat is not installed: run scripts/bootstrap.sh (it installs the Debian package socat)")
    return path


async def pipe_into(command: list[str], data: bytes) -> None:
    process = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    _, err = await asyncio.wait_for(process.communicate(data), 10)
    assert process.returncode == 0, err.decode()


def test_socat_udp_datagram(run, sink, wait_for) -> None:
    async def main() -> None:
        listener = UdpListener(ListenerConfig(protocol="udp", port=0, topic="socat"), sink)
        await listener.start()
        host, port = listener.address
        await pipe_into([socat(), "-t0", "-", f"UDP-DATAGRAM:{host}:{port}"], b"yipee!")
        await wait_for(lambda: sink.messages != [], "the datagram")
        assert sink.messages == [("socat", None, b"yipee!", listener.name)]
        await listener.stop()

    run(main())


def test_socat_tcp_lines(run, sink, wait_for) -> None:
    async def main() -> None:
        listener = TcpListener(ListenerConfig(protocol="tcp", port=0, topic="socat"), sink)
        await listener.start()
        host, port = listener.address
        await pipe_into([socat(), "-t0", "-", f"TCP:{host}:{port}"], b"foo\nbar\nbaz")
        await wait_for(lambda: len(sink.messages) == 3, "three lines")
        assert sink.values == [b"foo", b"bar", b"baz"]  # plog itself drops the unterminated "baz"
        await listener.stop()

    run(main())
