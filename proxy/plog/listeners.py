"""plog's listeners on asyncio: UDP (unboxed messages, commands, multipart fragments) and TCP (one message per line).

Rules:
- Each listener has its own :class:`PlogStats` (what ``STAT`` reports, as in plog) and hands every message it takes in
  to the :class:`PlogSink` exactly once, with its default topic or the message's ``kt:`` tag (the topic ``"null"``
  means none, as in plog: the message is counted as ``no_topic`` and rejected as BAD_TOPIC). ``pk:<key>`` becomes the
  Kafka record key, and its partition key is plog's (:func:`bruce.wire.plog.plog_partition_key`). Whatever the
  listener drops itself is counted in its stats *and* rejected to the sink with a discard reason (see
  :mod:`.sink`).
- UDP cannot push back: a datagram is parsed (:func:`bruce.wire.plog.parse_packet`), counted, and submitted or
  dropped with a counter at once. The socket is read in bursts: when it is readable, up to :data:`UDP_BURST`
  datagrams are read with non-blocking ``recvfrom`` calls in one callback (bench/plog_bench.py measures it against
  asyncio's datagram transport, which reads one per callback). Commands are answered to the sender: ``PING`` →
  ``PONG`` + the trailing payload, ``STAT`` → the JSON statistics, ``ENVI`` → the listener's configuration as JSON;
  ``KILL`` calls the daemon's shutdown callback only when the listener enables it, and is otherwise refused and
  counted. Unknown commands are counted; a reply the socket refuses is counted (``reply_failures``).
- TCP can push back: before each line the listener asks the sink whether the budget has room; if not, the connection
  stops reading (``pause_reading``), keeps what it already read, and resumes when the sink calls back. A line is at
  most ``max_line`` bytes without its ``\\n`` (a ``\\r`` before it is stripped); a longer one is counted and skipped up
  to the next newline without being buffered. A last line without newline is delivered at a clean end of stream and
  counted as ``tcp_partial_lines`` (lost: rejected as MALFORMED) when the connection is reset or the listener stops.
  A line that could never fit the budget is submitted anyway (the sink discards it) rather than waited for. At most
  ``max_connections`` connections are served; more are closed at once and counted.
- Stopping is ordered and bounded: stop accepting, read what the kernel still holds for the UDP socket (at most
  :data:`DRAIN_MAX_DATAGRAMS`), submit the complete lines TCP connections still hold, close, drop incomplete
  multipart messages (counted).
- An unexpected exception while handling input (a bug, here or in the sink) is never swallowed: the listener stops
  reading (a TCP connection is aborted) and hands the error to :meth:`PlogSink.fail`, which stops the daemon with it.
  (plog counted such errors and went on.)
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import asdict

from bruce.producer.reasons import DiscardReason
from bruce.wire.errors import MalformedInput, UsageError
from bruce.wire.plog import Command, Fragment, Unboxed, parse_packet, plog_partition_key

from .config import ListenerConfig
from .defrag import TOO_LARGE, Defragmenter
from .sink import PlogSink
from .stats import PlogStats

log = logging.getLogger("bruce.proxy.plog")

DRAIN_MAX_DATAGRAMS = 65536  # read at most this many queued datagrams when a UDP listener stops
UDP_BURST = 256  # datagrams read per wake-up before yielding to the rest of the loop
MAX_PACKET = 1 << 16  # a UDP payload is at most 65,507 bytes over IPv4 (65,535 over IPv6)
REJECT_SAMPLE = 4096  # bytes of an over-long TCP line handed to the sink's discard report
SWEEP_INTERVAL = 1.0  # seconds between expiry sweeps of the reassembly buffer
STOP_TIMEOUT = 2.0  # seconds a stopping TCP listener waits for its connections to close before aborting them
NULL_TOPIC = "null"  # plog: a message whose topic resolves to "null" is not sent


class _Listener:
    """What both listeners share: config, sink, stats, submission."""

    def __init__(self, config: ListenerConfig, sink: PlogSink, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.sink = sink
        self.stats = PlogStats(config.name, clock=clock)
        self._address: tuple[str, int] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def address(self) -> tuple[str, int]:
        """The bound (host, port); the port is the real one when the config asked for 0."""
        if self._address is None:
            raise UsageError(f"plog listener {self.name} is not started")
        return self._address

    def _submit(self, topic: str | None, key: bytes | None, value: bytes) -> None:
        if topic is None or topic == NULL_TOPIC:
            self.stats.no_topic += 1
            self._reject(DiscardReason.BAD_TOPIC, value, topic=NULL_TOPIC)
            return
        self.stats.seen_messages += 1
        partition_key = None if key is None else plog_partition_key(key)
        if not self.sink.submit(topic, key, value, partition_key=partition_key, listener=self.config.name):
            self.stats.failed_to_send += 1

    def _reject(self, reason: DiscardReason, data: bytes, *, topic: str | None = None) -> None:
        self.sink.reject(reason, data, topic=topic, listener=self.config.name)

    def _fail(self, error: Exception) -> None:
        """An unexpected error while handling input: the sink stops the daemon with it."""
        self.sink.fail(error, listener=self.config.name)


# ---------------------------------------------------------------- UDP


class UdpListener(_Listener):
    """plog's UDP protocol on one socket."""

    def __init__(
        self,
        config: ListenerConfig,
        sink: PlogSink,
        *,
        on_kill: Callable[[], object] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if config.protocol != "udp":
            raise UsageError(f"plog listener {config.name} is {config.protocol}, not udp")
        if config.enable_kill and on_kill is None:
            raise UsageError(f"plog listener {config.name} enables KILL but no shutdown callback was given")
        super().__init__(config, sink, clock=clock)
        self.defrag = Defragmenter(
            self.stats,
            capacity=config.defrag_capacity,
            expiry=config.defrag_expiry,
            clock=clock,
            on_drop=self._dropped,
        )
        self._on_kill = on_kill
        self._sock: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sweeper: asyncio.TimerHandle | None = None

    async def start(self) -> None:
        """Bind the socket and start serving."""
        if self._sock is not None:
            raise UsageError(f"plog listener {self.name} is already started")
        loop = asyncio.get_running_loop()
        cfg = self.config
        family, _, _, _, sockaddr = (await loop.getaddrinfo(cfg.address, cfg.port, type=socket.SOCK_DGRAM))[0]
        sock = socket.socket(family, socket.SOCK_DGRAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, cfg.receive_buffer)
            sock.bind(sockaddr)
            sock.setblocking(False)
            loop.add_reader(sock.fileno(), self._on_readable)
        except BaseException:
            sock.close()
            raise
        self._sock, self._loop = sock, loop
        self._address = sock.getsockname()[:2]
        self._sweeper = loop.call_later(SWEEP_INTERVAL, self._sweep)
        log.info("plog udp listener %s on %s:%d", cfg.name, *self._address)

    async def stop(self) -> None:
        """Stop: handle the datagrams the kernel still holds, close, drop incomplete messages (rejected)."""
        sock, loop = self._sock, self._loop
        if sock is None or loop is None:
            return
        if self._sweeper is not None:
            self._sweeper.cancel()
        loop.remove_reader(sock.fileno())
        self._read_burst(DRAIN_MAX_DATAGRAMS)
        self._sock = self._loop = None
        sock.close()
        self.defrag.clear()

    def _on_readable(self) -> None:
        self._guarded(self._read_burst, UDP_BURST)

    def _guarded(self, handler: Callable[..., object], *args: object) -> None:
        """Run a loop callback's work; an unexpected error stops this listener's reading and the daemon."""
        try:
            handler(*args)
        except Exception as error:
            if self._sweeper is not None:
                self._sweeper.cancel()
            if self._sock is not None and self._loop is not None:
                self._loop.remove_reader(self._sock.fileno())
            self._fail(error)

    def _read_burst(self, limit: int) -> int:
        """Read and handle up to ``limit`` queued datagrams without blocking; returns how many were read."""
        sock = self._sock
        if sock is None:
            return 0
        recvfrom = sock.recvfrom
        handle = self.handle
        count = 0
        for _ in range(limit):
            try:
                data, addr = recvfrom(MAX_PACKET)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as e:  # e.g. ECONNREFUSED: an ICMP error about an earlier reply
                log.debug("plog listener %s: %s", self.name, e)
                continue
            count += 1
            reply = handle(data, addr)
            if reply is not None:
                self._reply(sock, reply, addr)
        return count

    def _reply(self, sock: socket.socket, reply: bytes, addr: tuple) -> None:
        try:
            sock.sendto(reply, addr)
        except OSError as e:  # the send buffer is full, or the reply is too large for a datagram
            self.stats.reply_failures += 1
            log.debug("plog listener %s: reply to %s not sent: %s", self.name, addr, e)

    def _dropped(self, what: str, sample: bytes) -> None:
        """The reassembly buffer dropped a message or an invalid fragment."""
        self._reject(DiscardReason.LONG_MSG if what == TOO_LARGE else DiscardReason.MALFORMED, sample)

    def _sweep(self) -> None:
        self._sweeper = asyncio.get_running_loop().call_later(SWEEP_INTERVAL, self._sweep)
        self._guarded(self.defrag.expire)

    def handle(self, data: bytes, addr: tuple) -> bytes | None:
        """Handle one datagram from ``addr``; return the reply to send back, if any."""
        try:
            packet = parse_packet(data)
        except MalformedInput as e:
            self.stats.malformed(e.reason)
            self._reject(DiscardReason.MALFORMED, data)
            return None
        if type(packet) is Unboxed:
            self.stats.udp_simple_messages += 1
            self._submit(self.config.topic, None, packet.message)
        elif type(packet) is Fragment:
            self.stats.fragment(packet.fragment_index)
            done = self.defrag.add((addr[0], addr[1]), packet)
            if done is not None:
                topic, key = done.topic, done.key
                topic = self.config.topic if topic is None else topic
                self._submit(topic, None if key is None else key.encode(), done.message)
        else:
            assert type(packet) is Command
            return self._command(packet)
        return None

    def _command(self, command: Command) -> bytes | None:
        name = command.name
        if name == "PING":
            self.stats.v0_commands += 1
            return b"PONG" + command.trail
        if name == "STAT":
            self.stats.v0_commands += 1
            return self.stats.to_json(pending_messages=len(self.defrag), pending_bytes=self.defrag.used)
        if name == "ENVI":
            self.stats.v0_commands += 1
            return json.dumps(asdict(self.config), separators=(",", ":")).encode()
        if name == "KILL" and self.config.enable_kill:
            self.stats.v0_commands += 1
            log.warning("plog listener %s: KILL received, shutting down", self.config.name)
            assert self._on_kill is not None
            self._on_kill()
            return None
        if name == "KILL":
            self.stats.kill_refused += 1
            log.warning("plog listener %s: KILL refused (enable_kill is off)", self.config.name)
        self.stats.unknown_command += 1
        return None


# ---------------------------------------------------------------- TCP


class TcpListener(_Listener):
    """Newline-delimited messages over TCP."""

    def __init__(self, config: ListenerConfig, sink: PlogSink, *, clock: Callable[[], float] = time.monotonic) -> None:
        if config.protocol != "tcp":
            raise UsageError(f"plog listener {config.name} is {config.protocol}, not tcp")
        super().__init__(config, sink, clock=clock)
        self._server: asyncio.Server | None = None
        self.connections: set[_LineConnection] = set()

    async def start(self) -> None:
        """Bind and start accepting connections."""
        loop = asyncio.get_running_loop()
        cfg = self.config
        self._server = await loop.create_server(
            lambda: _LineConnection(self), cfg.address, cfg.port, reuse_address=True
        )
        self._address = self._server.sockets[0].getsockname()[:2]
        log.info("plog tcp listener %s on %s:%d", cfg.name, *self._address)

    async def stop(self) -> None:
        """Stop accepting, submit the complete lines connections still hold, close them (abort after a deadline)."""
        if self._server is None:
            return
        server, self._server = self._server, None
        server.close()
        for conn in list(self.connections):
            conn.close()
        deadline = asyncio.get_running_loop().time() + STOP_TIMEOUT
        while self.connections and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        for conn in list(self.connections):
            conn.abort()
        await server.wait_closed()


class _LineConnection(asyncio.Protocol):
    """One TCP connection: splits the stream into lines, pausing while the sink's budget is full."""

    def __init__(self, listener: TcpListener) -> None:
        self.listener = listener
        self.stats = listener.stats
        self.max_line = listener.config.max_line
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._searched = 0  # bytes of the buffer known to hold no newline
        self._discarding = False  # skipping the rest of an over-long line
        self._paused = False
        self._eof = False
        self._closed = False

    # asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if len(self.listener.connections) >= self.listener.config.max_connections:
            self.stats.tcp_rejected_connections += 1
            self._closed = True
            transport.abort()  # type: ignore[attr-defined]
            return
        self.stats.tcp_connections += 1
        self.listener.connections.add(self)

    def data_received(self, data: bytes) -> None:
        self._guarded(self._received, data)

    def eof_received(self) -> bool:
        self._guarded(self._eof_received)
        return True  # we close the transport ourselves once the last line is handled

    def connection_lost(self, exc: Exception | None) -> None:
        self._guarded(self._lost, exc)

    def _guarded(self, handler: Callable[..., None], *args: object) -> None:
        """Run one event's handler; an unexpected error aborts the connection and stops the daemon."""
        try:
            handler(*args)
        except Exception as error:
            self._closed = True
            self.listener.connections.discard(self)
            self.listener.sink.cancel_notify(self._on_budget_free)
            if self.transport is not None:
                self.transport.abort()
            self.listener._fail(error)

    def _received(self, data: bytes) -> None:
        if self._discarding:
            newline = data.find(b"\n")
            if newline < 0:
                return
            self._discarding = False
            data = data[newline + 1 :]
        self._buffer += data
        self._process()

    def _eof_received(self) -> None:
        self._eof = True
        if not self._paused:
            self._finish()

    def _lost(self, exc: Exception | None) -> None:
        if self._closed and self not in self.listener.connections:
            return
        self._closed = True
        self.listener.connections.discard(self)
        self.listener.sink.cancel_notify(self._on_budget_free)
        self._process(force=True)  # lines already read get a fate: the sink takes or refuses them
        if self._buffer and not self._discarding:
            if len(self._buffer) > self.max_line:
                self._too_long(self._buffer, 0)
            elif self._eof and exc is None:
                self._submit_line(bytes(self._buffer))  # the peer ended its last line cleanly
            else:
                self.stats.tcp_partial_lines += 1
                self.listener._reject(DiscardReason.MALFORMED, bytes(self._buffer[:REJECT_SAMPLE]))
        self._buffer.clear()

    # control from the listener

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    # line handling

    def _process(self, *, force: bool = False) -> None:
        """Submit every complete line in the buffer, unless the budget is full (then pause), or ``force``."""
        buf = self._buffer
        start = 0
        sink = self.listener.sink
        while True:
            newline = buf.find(b"\n", max(start, self._searched))
            if newline < 0:
                self._searched = len(buf)
                if len(buf) - start > self.max_line + 1:  # room for a "\r" before the newline
                    self._too_long(buf, start)
                    self._discarding = True
                    start = len(buf)
                break
            end = newline - 1 if newline > start and buf[newline - 1] == 0x0D else newline
            if end - start > self.max_line:
                self._too_long(buf, start)
                start = newline + 1
                continue
            if not force and not sink.budget_available(end - start):
                self._pause(end - start)
                break
            self._submit_line(bytes(buf[start:end]))
            start = newline + 1
        if start:
            del buf[:start]
            self._searched = max(0, self._searched - start)

    def _submit_line(self, line: bytes) -> None:
        self.stats.tcp_lines += 1
        self.listener._submit(self.listener.config.topic, None, line)

    def _too_long(self, buf: bytearray, start: int) -> None:
        self.stats.tcp_line_too_long += 1
        self.listener._reject(DiscardReason.LONG_MSG, bytes(buf[start : start + REJECT_SAMPLE]))

    def _pause(self, size: int) -> None:
        if self._paused:
            return
        self._paused = True
        self.stats.tcp_pauses += 1
        if self.transport is not None:
            self.transport.pause_reading()
        self.listener.sink.notify_when_free(self._on_budget_free, size)

    def _on_budget_free(self) -> None:
        asyncio.get_running_loop().call_soon(self._guarded, self._resume)  # never re-enter _process from the sink

    def _resume(self) -> None:
        if self._closed or not self._paused:
            return
        self._paused = False
        self._process()
        if self._paused:
            return
        if self._eof:
            self._finish()
        elif self.transport is not None:
            self.transport.resume_reading()

    def _finish(self) -> None:
        """The peer ended the stream: deliver a last unterminated line, then close."""
        self._process()
        if self._paused:
            return
        if self._buffer and not self._discarding:
            if len(self._buffer) > self.max_line:
                self._too_long(self._buffer, 0)
            elif not self.listener.sink.budget_available(len(self._buffer)):
                self._pause(len(self._buffer))
                return
            else:
                self._submit_line(bytes(self._buffer))
        self._buffer.clear()
        if self.transport is not None:
            self.transport.close()


# ---------------------------------------------------------------- factory

Listener = UdpListener | TcpListener


def make_listener(config: ListenerConfig, sink: PlogSink, *, on_kill: Callable[[], object] | None = None) -> Listener:
    """The listener a config describes (not started: ``await listener.start()``).

    ``on_kill`` is called from the event loop when a listener that enables KILL receives it: it should start the
    daemon's orderly shutdown and return at once.
    """
    if config.protocol == "udp":
        return UdpListener(config, sink, on_kill=on_kill)
    return TcpListener(config, sink)
