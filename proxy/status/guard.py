"""The status server's defences on a shared host: a connection cap that keeps descriptors for Kafka, one rate-limited
line per malformed request, and who may ask (Host / Origin checks against DNS rebinding and cross-site requests).

Rules:
- Connections: at most :func:`connection_cap` are open at once — ``RLIMIT_NOFILE / 16``, between 8 and 64 (64 with
  the usual limit of 1,024) — so a flood of idle connections can never take the descriptors the producer needs for
  its broker connections. When the cap is reached, the connection that has been quiet longest (no bytes received
  for the longest time) is closed to make room, and counted (``StatusConnectionsEvicted``): a flood of idle
  connections cannot lock out a scraper, and every connection still closes after the 15 s keep-alive.
- Malformed HTTP (aiohttp's parser errors: an over-long request line or header, a bad method) is answered 400 by
  aiohttp and logged here as one WARNING line without traceback, at most once per :data:`LOG_EVERY_S` with a count of
  the ones suppressed; every one is counted (``StatusBadRequest``). Other errors aiohttp reports (bugs) keep their
  traceback, rate-limited the same way.
- Who may ask (:class:`HostPolicy`): every request's ``Host`` must name this server — an IP address literal,
  ``localhost``, this host's name (``socket.gethostname()``), the ``--status_host`` name, or a name given in
  ``allowed_hosts`` — or it is refused with 403. A web page that points its own domain at 127.0.0.1 (DNS rebinding)
  sends its own domain as ``Host``, so it can read nothing (``/discards`` shows message prefixes). A request that
  changes state (the ``/msg_debug`` commands other than ``get_topics``, ``POST /metadata_update``) must also be
  same-origin: an ``Origin`` header, if present, must be ``http(s)://<its Host>``, and ``Sec-Fetch-Site``, if present,
  must be ``same-origin`` or ``none`` (typed by the user). So a page in a browser on the host cannot switch on writing
  message contents to ``--debug_dir`` with a link, an image or a script. Refusals are counted (``StatusRefused{why}``).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import resource
import socket
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from aiohttp import web

from bruce.producer import Counters

log = logging.getLogger("bruce.proxy.status")

LOG_EVERY_S = 30.0
CAP_MIN, CAP_MAX, CAP_SHARE = 8, 64, 16  # the cap: RLIMIT_NOFILE / CAP_SHARE, within CAP_MIN..CAP_MAX
LISTEN_BACKLOG = 1024  # a burst of connects waits in the kernel, not in SYN retransmits (asyncio's default: 100)
SAME_ORIGIN_FETCH = frozenset({"same-origin", "none"})


def connection_cap(nofile: int | None = None) -> int:
    """How many status connections may be open: ``RLIMIT_NOFILE / 16`` (the soft limit), within 8..64."""
    if nofile is None:
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if nofile == resource.RLIM_INFINITY:
        return CAP_MAX
    return max(CAP_MIN, min(CAP_MAX, nofile // CAP_SHARE))


# ----------------------------------------------------------------------------------------------- the connection cap


class ConnectionGate:
    """The open status connections, least recently active first; admitting one over ``cap`` closes the quietest."""

    def __init__(self, cap: int, counters: Counters, clock: Callable[[], float] = time.monotonic) -> None:
        self.cap = cap
        self.counters = counters
        self.clock = clock
        self.open: OrderedDict[_GatedProtocol, None] = OrderedDict()

    def admit(self, conn: _GatedProtocol) -> None:
        while len(self.open) >= self.cap:
            quietest, _ = self.open.popitem(last=False)
            self.counters.inc("StatusConnectionsEvicted")
            quietest.evict()
        self.open[conn] = None

    def active(self, conn: _GatedProtocol) -> None:
        if conn in self.open:
            self.open.move_to_end(conn)

    def gone(self, conn: _GatedProtocol) -> None:
        self.open.pop(conn, None)


class _GatedProtocol(asyncio.Protocol):
    """aiohttp's request handler behind the gate: every event is passed on; the gate sees arrivals and activity."""

    def __init__(self, gate: ConnectionGate, inner: asyncio.Protocol) -> None:
        self.gate = gate
        self.inner = inner
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream server's transport: an asyncio.Transport
        self.gate.admit(self)
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self.gate.active(self)
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self.gate.gone(self)
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def evict(self) -> None:
        if self.transport is not None:
            self.transport.abort()


class GatedSite(web.BaseSite):
    """aiohttp's ``TCPSite``, with every connection passing through a :class:`ConnectionGate`."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, gate: ConnectionGate) -> None:
        super().__init__(runner)
        self._host, self._port, self._gate = host, port, gate

    @property
    def name(self) -> str:
        return f"http://{self._host}:{self._port}"

    async def start(self) -> None:
        await super().start()
        handler = self._runner.server
        assert handler is not None
        gate = self._gate
        self._server = await asyncio.get_running_loop().create_server(
            lambda: _GatedProtocol(gate, handler()), self._host, self._port, reuse_address=True, backlog=LISTEN_BACKLOG
        )


# ------------------------------------------------------------------------------------------ malformed requests


class RequestErrorLog:
    """Stands in for aiohttp's server logger. A malformed request (``Error handling request ...``) is one WARNING
    line without traceback, counted as ``StatusBadRequest``; any other error aiohttp reports keeps its traceback, at
    ERROR. Either kind is logged at most once per 30 s, with the number suppressed since."""

    def __init__(self, counters: Counters, clock: Callable[[], float] = time.monotonic) -> None:
        self.counters = counters
        self.clock = clock
        self._last: dict[bool, float] = {}
        self._suppressed: dict[bool, int] = {True: 0, False: 0}

    def exception(self, msg: str, *args: Any, exc_info: Any = None, **_: Any) -> None:
        text = msg % args if args else msg
        bad_request = text.startswith("Error handling request")
        if bad_request:
            self.counters.inc("StatusBadRequest")
        now = self.clock()
        last = self._last.get(bad_request)
        if last is not None and now - last < LOG_EVERY_S:
            self._suppressed[bad_request] += 1
            return
        suppressed, self._suppressed[bad_request], self._last[bad_request] = self._suppressed[bad_request], 0, now
        more = f" ({suppressed} more since the last such message)" if suppressed else ""
        if not bad_request:
            log.error("status server: %s%s", text, more, exc_info=exc_info)
            return
        why = ""
        if isinstance(exc_info, BaseException):
            why = f": {type(exc_info).__name__}: {' '.join(str(exc_info).split())[:200]}"  # one line
        log.warning("status server: %s%s%s", text, why, more)

    def debug(self, msg: str, *args: Any, exc_info: Any = None, **_: Any) -> None:
        self.exception(msg, *args, exc_info=exc_info)  # aiohttp's "not HTTP at all" case: the same as a bad request

    def warning(self, msg: str, *args: Any, **_: Any) -> None:
        log.warning(msg, *args)

    def error(self, msg: str, *args: Any, **_: Any) -> None:
        log.error(msg, *args)


# ---------------------------------------------------------------------------------------------- who may ask


class HostPolicy:
    """Which ``Host`` / ``Origin`` a request may carry (see the module rules)."""

    def __init__(self, bind_host: str, allowed_hosts: Iterable[str] = ()) -> None:
        names = {"localhost", socket.gethostname(), bind_host, *allowed_hosts}
        self.names = frozenset(n.lower().rstrip(".") for n in names if n and not _is_ip(n))

    def refusal(self, request: web.Request, *, changes_state: bool) -> tuple[str, str] | None:
        """``None`` if ``request`` may be answered, else ``(why, the 403 body)``."""
        host = request.headers.get("Host", "")
        if not self.host_allowed(host):
            return "host", (
                f"[refused: Host {host!r} does not name this status server: ask it by IP address, localhost or its "
                "host name (another name: --status_allowed_hosts); docs/status.md#who-may-ask]\n"
            )
        if not changes_state:
            return None
        origin = request.headers.get("Origin")
        fetch_site = request.headers.get("Sec-Fetch-Site")
        if origin is not None and origin.lower() not in (f"http://{host.lower()}", f"https://{host.lower()}"):
            return "origin", (
                f"[refused: {request.path} changes the daemon's state and is only accepted from this server's own "
                f"pages or a tool like curl, not from origin {origin!r}; docs/status.md#who-may-ask]\n"
            )
        if fetch_site is not None and fetch_site.lower() not in SAME_ORIGIN_FETCH:
            return "origin", (
                f"[refused: {request.path} changes the daemon's state and is only accepted from this server's own "
                f"pages or a tool like curl, not from a {fetch_site} request; docs/status.md#who-may-ask]\n"
            )
        return None

    def host_allowed(self, host: str) -> bool:
        name = _host_name(host)
        return bool(name) and (_is_ip(name) or name.lower().rstrip(".") in self.names)


def _host_name(host: str) -> str:
    """The name in a ``Host`` header, without the port (``[::1]:9090`` → ``::1``)."""
    host = host.strip()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else ""
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
