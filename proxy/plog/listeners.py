"""plog's listeners on asyncio: UDP (unboxed messages, commands, multipart fragments) here, TCP (one message per line)
in :mod:`.tcp`; :func:`make_listener` builds either.

Rules (and :mod:`.base`'s):
- UDP cannot push back: a datagram is parsed (:func:`bruce.wire.plog.parse_packet`), counted, and submitted or
  dropped with a counter at once. The socket is read in bursts: when it is readable, up to :data:`UDP_BURST`
  datagrams are read with non-blocking ``recvfrom`` calls in one callback (bench/plog_bench.py measures it against
  asyncio's datagram transport, which reads one per callback). Commands are answered to the sender: ``PING`` →
  ``PONG`` + the trailing payload, ``STAT`` → the JSON statistics, ``ENVI`` → the listener's configuration as JSON;
  ``KILL`` calls the daemon's shutdown callback only when the listener enables it, and is otherwise refused and
  counted. Unknown commands are counted; a reply the socket refuses is counted (``reply_failures``).
- Stopping is ordered and bounded: stop reading, handle what the kernel still holds for the socket (at most
  :data:`DRAIN_MAX_DATAGRAMS`), close, drop incomplete multipart messages (counted).
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from bruce.producer import DiscardReason
from bruce.wire import Command, Fragment, MalformedInput, Unboxed, UsageError, parse_packet

from ..config import ListenerConfig
from .base import BaseListener
from .defrag import TOO_LARGE, Defragmenter
from .sink import PlogSink
from .tcp import TcpListener

__all__ = ["Listener", "TcpListener", "UdpListener", "make_listener"]

log = logging.getLogger("bruce.proxy.plog")

DRAIN_MAX_DATAGRAMS = 65536  # read at most this many queued datagrams when a UDP listener stops
UDP_BURST = 256  # datagrams read per wake-up before yielding to the rest of the loop
MAX_PACKET = 1 << 16  # a UDP payload is at most 65,507 bytes over IPv4 (65,535 over IPv6)
SWEEP_INTERVAL = 1.0  # seconds between expiry sweeps of the reassembly buffer


# ---------------------------------------------------------------- UDP


class UdpListener(BaseListener):
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

    def _reply(self, sock: socket.socket, reply: bytes, addr: tuple[Any, ...]) -> None:
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

    def handle(self, data: bytes, addr: tuple[Any, ...]) -> bytes | None:
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
