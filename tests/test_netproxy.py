"""The test network proxy (tests/netproxy.py): bytes intact and in order both ways, the delay added per direction
(a lower bound: a delay can never make a round trip shorter), cuts, swallowed answers, and its threaded form for
blocking clients."""

from __future__ import annotations

import asyncio
import os
import socket
import time

import pytest
from netproxy import MAX_CHUNKS, NetProxy, proxy_in_thread


async def _echo_server() -> tuple[asyncio.Server, list[bytes]]:
    """A server echoing what it receives, keeping a copy."""
    received: list[bytes] = []

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(1 << 16):
                received.append(data)
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    return await asyncio.start_server(echo, "127.0.0.1", 0), received


async def _round_trip(address: str, payload: bytes) -> bytes:
    host, port = address.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(payload)
    await writer.drain()
    data = await asyncio.wait_for(reader.readexactly(len(payload)), 10)
    writer.close()
    return data


def test_bytes_cross_intact_in_order_with_the_delay_added_both_ways() -> None:
    async def main() -> None:
        server, received = await _echo_server()
        async with server, NetProxy("127.0.0.1", server.sockets[0].getsockname()[1], delay_ms=40) as proxy:
            payload = os.urandom(3 << 20)  # more than the pipe holds at once: backpressure, then order
            assert len(payload) > MAX_CHUNKS * 1024
            loop = asyncio.get_running_loop()
            start = loop.time()
            assert await _round_trip(proxy.address, payload) == payload
            assert loop.time() - start >= 0.080  # 40 ms each way at least
            assert b"".join(received) == payload
            small = [await _round_trip(proxy.address, b"x%d" % i) for i in range(3)]
            assert small == [b"x0", b"x1", b"x2"] and proxy.connections == 4

    asyncio.run(main())


def test_cut_resets_every_connection_and_new_ones_work() -> None:
    async def main() -> None:
        server, _ = await _echo_server()
        async with server, NetProxy("127.0.0.1", server.sockets[0].getsockname()[1]) as proxy:
            host, port = proxy.address.split(":")
            streams = []
            for _ in range(2):
                reader, writer = await asyncio.open_connection(host, int(port))
                writer.write(b"hello")
                assert await reader.readexactly(5) == b"hello"
                streams.append((reader, writer))  # kept: a dropped writer closes its connection
            assert proxy.cut() == 2 and proxy.cuts == 2
            for reader, _ in streams:
                with pytest.raises((ConnectionError, asyncio.IncompleteReadError)):
                    await asyncio.wait_for(reader.readexactly(1), 5)
            assert await _round_trip(proxy.address, b"again") == b"again"

    asyncio.run(main())


def test_dropped_answers_reach_the_server_only() -> None:
    async def main() -> None:
        server, received = await _echo_server()
        async with server, NetProxy("127.0.0.1", server.sockets[0].getsockname()[1]) as proxy:
            proxy.drop_answers = True
            host, port = proxy.address.split(":")
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(b"request")
            for _ in range(500):  # until the server got it (bounded)
                if b"".join(received) == b"request":
                    break
                await asyncio.sleep(0.01)
            assert b"".join(received) == b"request"
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(reader.read(1), 0.2)  # the echo was swallowed
            proxy.cut()
            proxy.drop_answers = False
            assert await _round_trip(proxy.address, b"answered") == b"answered"

    asyncio.run(main())


def test_threaded_proxy_for_blocking_clients() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with proxy_in_thread("127.0.0.1", port, delay_ms=10) as proxy:
            host, proxy_port = proxy.address.split(":")
            client = socket.create_connection((host, int(proxy_port)), timeout=10)
            listener.settimeout(10)
            accepted, _ = listener.accept()
            accepted.settimeout(10)
            start = time.monotonic()
            client.sendall(b"ping")
            assert accepted.recv(4) == b"ping"
            accepted.sendall(b"pong")
            assert client.recv(4) == b"pong"
            assert time.monotonic() - start >= 0.020
            assert proxy.cut() == 1
            with pytest.raises(OSError):
                for _ in range(100):  # a reset connection refuses writes (bounded)
                    client.sendall(b"x" * 1024)
                    time.sleep(0.01)
            client.close()
            accepted.close()
