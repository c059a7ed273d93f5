"""A TCP proxy for tests and benchmarks, on 127.0.0.1: adds a fixed delay per direction, cuts every connection on
command, and can swallow the server's answers (a lost acknowledgement) or the client's requests (sent, never
arrived).

Rules:
- Each connection to :attr:`NetProxy.address` opens one to the target. Bytes are forwarded in order, each chunk
  ``delay_ms`` after it arrived, in both directions; the delay adds latency, not a bandwidth limit (chunks in the pipe
  overlap).
- Bounded: at most :data:`MAX_CHUNKS` chunks of :data:`CHUNK` bytes wait per direction and connection; a full pipe
  stops reading from its source (TCP backpressure).
- :meth:`NetProxy.cut` aborts every connection at once (both sides see a reset), as a broken network would; new
  connections are accepted afterwards. With ``drop_answers`` set, bytes from the target are read and thrown away;
  with ``drop_requests``, bytes from the client (counted in ``dropped_request_bytes``).
- asyncio inside one event loop; :func:`proxy_in_thread` runs one in a thread of its own for blocking code (clients
  like confluent-kafka), with :meth:`ThreadedProxy.cut` safe to call from any thread; :func:`tansu_behind_proxy` puts
  one in front of a tansu that advertises it, so every client connection (metadata's included) goes through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

CHUNK = 64 << 10
MAX_CHUNKS = 256
ACCEPT_ITERATIONS = 20  # loop iterations from a connection accepted to its _accept running (a few), with room to spare


class NetProxy:
    """``async with NetProxy("127.0.0.1", port, delay_ms=20) as proxy: connect to proxy.address``."""

    def __init__(self, target_host: str, target_port: int, *, delay_ms: float = 0.0, port: int = 0) -> None:
        self.target = (target_host, target_port)
        self.delay = delay_ms / 1000
        self.drop_answers = False
        self.drop_requests = False
        self.dropped_request_bytes = 0
        self.port = port  # 0: a free one, chosen when started
        self.connections = 0  # accepted so far
        self.cuts = 0  # connections aborted by cut()
        self._listener: socket.socket | None = None
        self._acceptor: asyncio.Future[None] | None = None
        self._live: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._connecting: set[asyncio.StreamWriter] = set()  # accepted, upstream connect under way
        self._stopped = False
        self._tasks: set[asyncio.Task] = set()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def __aenter__(self) -> NetProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        self._stopped = False
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        listener.setblocking(False)
        self._listener = listener
        self.port = listener.getsockname()[1]
        self._acceptor = asyncio.ensure_future(self._accept_loop(listener))

    async def stop(self) -> None:
        self._stopped = True
        listener, self._listener = self._listener, None
        if listener is not None:
            # shutdown() resets the connections still in the kernel's accept queue and wakes the acceptor (accept
            # fails), which then ends: every connection it accepted was handed to a task of ours. (An asyncio
            # Server closed here leaked a connection accepted just before the close — its socket left open on a
            # loop about to stop, so its client waited 30 s for an answer where a dead broker's sees a reset.)
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            if self._acceptor is not None:
                await asyncio.gather(self._acceptor, return_exceptions=True)
            listener.close()
        self.cut()
        for _ in range(ACCEPT_ITERATIONS):  # the tasks of the last accepted connections see _stopped and abort
            await asyncio.sleep(0)
        self.cut()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept_loop(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(listener)
            except OSError:  # shut down by stop()
                return
            if self._stopped:
                conn.close()
                continue
            self._spawn(self._serve(conn))

    async def _serve(self, conn: socket.socket) -> None:
        try:
            reader, writer = await asyncio.open_connection(sock=conn)
        except BaseException:
            conn.close()
            raise
        await self._accept(reader, writer)

    def cut(self) -> int:
        """Abort every open connection now (both sides); returns how many."""
        live = list(self._live)
        self._live.clear()
        for client in list(self._connecting):
            client.transport.abort()
        for client, server in live:
            client.transport.abort()
            server.transport.abort()
        self.cuts += len(live)
        return len(live)

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        if self._stopped:
            client_writer.transport.abort()
            return
        self.connections += 1
        self._connecting.add(client_writer)  # cut() resets it even while its upstream connect is under way
        try:
            server_reader, server_writer = await asyncio.open_connection(*self.target)
        except OSError:
            client_writer.transport.abort()
            return
        finally:
            self._connecting.discard(client_writer)
        if client_writer.transport.is_closing():  # cut meanwhile
            server_writer.transport.abort()
            return
        pair = (client_writer, server_writer)
        self._live.add(pair)
        pumps = [
            self._spawn(self._pump(client_reader, server_writer, answers=False)),
            self._spawn(self._pump(server_reader, client_writer, answers=True)),
        ]
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        self._live.discard(pair)
        for writer in pair:  # one side ended: end the other (its pending bytes are flushed first)
            if not writer.transport.is_closing():
                writer.close()

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, answers: bool) -> None:
        """Read chunks from ``reader`` and write each to ``writer`` ``delay`` seconds after it arrived."""
        loop = asyncio.get_running_loop()
        pipe: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(MAX_CHUNKS)
        sender = self._spawn(self._send(pipe, writer))
        try:
            while True:
                try:
                    data = await reader.read(CHUNK)
                except (ConnectionError, OSError):
                    break
                if not data:
                    break
                if answers and self.drop_answers:
                    continue
                if not answers and self.drop_requests:
                    self.dropped_request_bytes += len(data)
                    continue
                await pipe.put((loop.time() + self.delay, data))
            await pipe.put((loop.time() + self.delay, b""))  # end of stream, after the bytes before it
            await sender
        finally:
            sender.cancel()

    async def _send(self, pipe: asyncio.Queue[tuple[float, bytes]], writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due, data = await pipe.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                with contextlib.suppress(OSError, RuntimeError):
                    writer.write_eof()
                return
            try:
                writer.write(data)
                await writer.drain()
            except (ConnectionError, OSError):
                return


class ThreadedProxy:
    """A :class:`NetProxy` whose event loop runs in a thread of its own (see :func:`proxy_in_thread`)."""

    def __init__(self, proxy: NetProxy, loop: asyncio.AbstractEventLoop) -> None:
        self.proxy = proxy
        self._loop = loop

    @property
    def address(self) -> str:
        return self.proxy.address

    def cut(self) -> int:
        return self._call(self.proxy.cut)

    def set_drop_answers(self, drop: bool) -> None:
        self._call(lambda: setattr(self.proxy, "drop_answers", drop))

    def set_drop_requests(self, drop: bool) -> None:
        self._call(lambda: setattr(self.proxy, "drop_requests", drop))

    @property
    def dropped_request_bytes(self) -> int:
        return self.proxy.dropped_request_bytes

    def _call(self, fn):
        done: asyncio.Future = asyncio.run_coroutine_threadsafe(_run(fn), self._loop)
        return done.result(timeout=10)


async def _run(fn):
    return fn()


@contextlib.contextmanager
def proxy_in_thread(
    target_host: str, target_port: int, *, delay_ms: float = 0.0, port: int = 0
) -> Iterator[ThreadedProxy]:
    """A started :class:`NetProxy` (on ``port``, or a free one) served by a thread of its own; stopped (every
    connection reset, the port closed) and the thread joined on leaving."""
    loop = asyncio.new_event_loop()
    proxy = NetProxy(target_host, target_port, delay_ms=delay_ms, port=port)
    thread = threading.Thread(target=loop.run_forever, name="netproxy", daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(proxy.start(), loop).result(timeout=10)
        yield ThreadedProxy(proxy, loop)
    finally:
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(proxy.stop(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


@contextlib.contextmanager
def tansu_behind_proxy(*, delay_ms: float = 0.0) -> Iterator[tuple[Any, ThreadedProxy]]:
    """A tansu (``bruce.proxy.daemon.embedded.EmbeddedBroker``) that advertises a :func:`proxy_in_thread` in front of
    it, so every client connection (metadata's too) goes through the proxy: ``(broker, proxy)``."""
    from bruce.proxy.config.ports import free_port
    from bruce.proxy.daemon.embedded import EmbeddedBroker

    port = free_port()
    with EmbeddedBroker(advertised_port=port) as broker:
        host, _, target = broker.address.rpartition(":")
        with proxy_in_thread(host, int(target), delay_ms=delay_ms, port=port) as proxy:
            yield broker, proxy
