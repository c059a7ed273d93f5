"""plog's TCP listener: one message per line, with backpressure, a connection limit and timeouts.

Rules (and :mod:`.base`'s):
- TCP can push back: before each line the listener asks the sink whether the budget has room; if not, the connection
  stops reading (``pause_reading``), keeps what it already read, and resumes when the sink calls back. A line is at
  most ``max_line`` bytes without its ``\\n`` (a ``\\r`` before it is stripped); a longer one is counted and skipped up
  to the next newline without being buffered. A last line without newline is delivered at a clean end of stream and
  counted as ``tcp_partial_lines`` (lost: rejected as MALFORMED) when the connection is reset or the listener stops.
  A line that could never fit the budget is submitted anyway (the sink discards it) rather than waited for.
- At most ``max_connections`` connections are served; a connection over that is counted and reset at once, after
  reading what its client had already sent (queued in the kernel before the accept, at most
  :data:`REJECTED_READ_MAX` bytes): its complete lines are submitted, an unterminated rest is a partial line
  (MALFORMED), so nothing the kernel accepted before the reset is lost uncounted.
- Timeouts (checked every :func:`_sweep_interval`): a connection that received nothing for ``idle_timeout`` while
  holding no partial line is closed (``tcp_idle_closed``); one whose started line has not ended ``line_timeout``
  after its first bytes is reset (``tcp_line_timeouts``; the partial line is MALFORMED). A connection paused for the
  budget is waiting for the daemon, not idle, and never times out. So idle or trickling clients cannot hold the
  slots.
- Stopping is ordered and bounded: stop accepting, submit the complete lines connections still hold, close them
  (abort after :data:`STOP_TIMEOUT`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable

from bruce.producer import DiscardReason
from bruce.wire import UsageError

from ..config import ListenerConfig
from .base import REJECT_SAMPLE, BaseListener
from .sink import PlogSink

log = logging.getLogger("bruce.proxy.plog")

STOP_TIMEOUT = 2.0  # seconds a stopping TCP listener waits for its connections to close before aborting them
LISTEN_BACKLOG = 1024  # asyncio's 100 overflows under a burst of connects: SYNs dropped, clients wait 1 s and more
REJECTED_READ_MAX = 4 << 20  # bytes read from a rejected connection's kernel queue before it is reset


class TcpListener(BaseListener):
    """Newline-delimited messages over TCP."""

    def __init__(self, config: ListenerConfig, sink: PlogSink, *, clock: Callable[[], float] = time.monotonic) -> None:
        if config.protocol != "tcp":
            raise UsageError(f"plog listener {config.name} is {config.protocol}, not tcp")
        super().__init__(config, sink, clock=clock)
        self._server: asyncio.Server | None = None
        self._sweeper: asyncio.TimerHandle | None = None
        self.connections: set[_LineConnection] = set()

    async def start(self) -> None:
        """Bind and start accepting connections."""
        loop = asyncio.get_running_loop()
        cfg = self.config
        self._server = await loop.create_server(
            lambda: _LineConnection(self), cfg.address, cfg.port, reuse_address=True, backlog=LISTEN_BACKLOG
        )
        self._address = self._server.sockets[0].getsockname()[:2]
        self._sweeper = loop.call_later(_sweep_interval(cfg), self._sweep)
        log.info("plog tcp listener %s on %s:%d", cfg.name, *self._address)

    def _sweep(self) -> None:
        """Close the connections that were idle, or trickled a line, for too long (see the module rules)."""
        self._sweeper = asyncio.get_running_loop().call_later(_sweep_interval(self.config), self._sweep)
        now = self.clock()
        for conn in list(self.connections):
            conn._guarded(conn.check_timeouts, now)

    async def stop(self) -> None:
        """Stop accepting, submit the complete lines connections still hold, close them (abort after a deadline)."""
        if self._server is None:
            return
        server, self._server = self._server, None
        server.close()
        if self._sweeper is not None:
            self._sweeper.cancel()
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
        self._last = listener.clock()  # when data last arrived
        self._line_since: float | None = None  # when the partial line in the buffer (or being skipped) began

    # asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream server's transport: an asyncio.Transport
        if len(self.listener.connections) >= self.listener.config.max_connections:
            self.stats.tcp_rejected_connections += 1
            self._closed = True
            self._guarded(self._take_queued, transport)
            transport.abort()  # type: ignore[attr-defined]  # a stream server's transport: an asyncio.Transport
            return
        self.stats.tcp_connections += 1
        self.listener.connections.add(self)

    def data_received(self, data: bytes) -> None:
        self._last = self.listener.clock()
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
        if (self._buffer or self._discarding) and self._line_since is None:
            self._line_since = self._last

    def _take_queued(self, transport: asyncio.BaseTransport) -> None:
        """A rejected connection: settle what its client sent before the accept (bounded), without waiting."""
        fd = transport.get_extra_info("socket").fileno()
        eof = False
        while len(self._buffer) < REJECTED_READ_MAX:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:  # nothing more queued (EAGAIN), or the client already reset it
                break
            if not chunk:
                eof = True
                break
            self._buffer += chunk
        self._eof = eof
        self._settle(clean=eof)

    def check_timeouts(self, now: float) -> None:
        """Close the connection if it was idle for ``idle_timeout``, or its line started ``line_timeout`` ago."""
        if self._closed or self._paused or self._eof or self.transport is None:
            return
        cfg = self.listener.config
        if self._line_since is not None:
            if now - self._line_since > cfg.line_timeout:
                self.stats.tcp_line_timeouts += 1
                self.transport.abort()  # the partial line is discarded by connection_lost
        elif now - self._last > cfg.idle_timeout:
            self.stats.tcp_idle_closed += 1
            self.transport.close()

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
        self._settle(clean=self._eof and exc is None)

    def _settle(self, *, clean: bool) -> None:
        """The connection is gone: every line read gets a fate; a last unterminated one is delivered only when the
        peer ended the stream ``clean``-ly, else it is a partial line (MALFORMED)."""
        self._process(force=True)  # lines already read get a fate: the sink takes or refuses them
        if self._buffer and not self._discarding:
            if len(self._buffer) > self.max_line:
                self._too_long(self._buffer, 0)
            elif clean:
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
            self._line_since = None

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
        self._last = self.listener.clock()  # the wait was the daemon's: the idle time starts again
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


def _sweep_interval(config: ListenerConfig) -> float:
    """How often a TCP listener checks its connections' timeouts: a quarter of the shorter one, within 0.05-1 s."""
    return min(1.0, max(0.05, min(config.idle_timeout, config.line_timeout) / 4))
