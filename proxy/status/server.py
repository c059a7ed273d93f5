"""The status HTTP server: an aiohttp application hosted in the daemon's own event loop (``AppRunner`` + ``TCPSite``).

Rules:
- Binds 127.0.0.1 by default (Bruce binds every interface unless ``--status_loopback_only``); the daemon passes the
  host it wants. A bind failure raises :class:`StatusBindError` naming ``host:port``. :func:`check_status_port` is
  Bruce's startup test-bind: synchronous, for use before the event loop starts (or before ``--daemon`` forks).
- Routes are Bruce's (docs/bruce-compatibility.md#status-pages) plus ``/metrics`` (not with ``metrics=False``:
  ``--no_metrics``). Unknown paths answer 404 (Bruce answers 200 with the front page), a known path with another method
  405 with an ``Allow`` header, both with a text body; unknown ``/msg_debug`` commands are 404. Malformed HTTP (a
  request line or header over 8 KiB, a method that is not a token) gets aiohttp's 400 and the connection is closed.
- Handlers only call the :class:`~bruce.proxy.status.source.StatusSource`'s synchronous, non-blocking methods and the
  pure renderers; nothing waits. The message debug commands do short local file operations (open, truncate, unlink)
  on the loop, as the debug log is used from the loop.
- A handler that raises answers 500 with the exception's text; the server keeps serving. Counted, like every request,
  in the server's own counters (location ``bruce.proxy.status``): ``StatusRequest{page}``, ``StatusNotFound``,
  ``StatusMethodNotAllowed``, ``StatusHandlerError``. Errors are logged at most once per 30 s.
- Bounded: request bodies are never read (64 KiB cap), header and line sizes are aiohttp's (8 KiB), idle keep-alive
  connections (and connections that never send a request) close after 15 s, and :meth:`StatusServer.stop` waits at
  most 2 s for requests in progress.
- On a shared host (:mod:`.guard`): at most :func:`~.guard.connection_cap` connections (the quietest is closed to
  admit a new one), malformed HTTP logged as one rate-limited line, and every request's ``Host`` checked (403
  otherwise); requests that change state (``/msg_debug`` commands other than ``get_topics``, ``POST
  /metadata_update``) must also be same-origin.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from bruce.producer import Counters
from bruce.wire import BruceError, UsageError

from . import dashboard, pages
from .guard import ConnectionGate, GatedSite, HostPolicy, RequestErrorLog, connection_cap
from .prometheus import CONTENT_TYPE as METRICS_CONTENT_TYPE
from .prometheus import render_metrics
from .source import CounterSet, StatusSource

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9090  # --status_port
LOCATION = "bruce.proxy.status"
KEEPALIVE_TIMEOUT_S = 15.0
SHUTDOWN_TIMEOUT_S = 2.0
MAX_BODY = 64 * 1024
LOG_EVERY_S = 30.0

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class StatusBindError(BruceError):
    """The status port cannot be bound (in use by another instance, no permission, unknown host)."""

    reason = "STATUS_BIND"


def _bind_error(host: str, port: int, error: OSError) -> StatusBindError:
    why = error.strerror or str(error)
    hint = " (is another bruce already running?)" if error.errno == errno.EADDRINUSE else ""
    return StatusBindError(f"cannot serve the status interface on {host}:{port}: {why}{hint}")


def check_status_port(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> None:
    """Bruce's startup check: bind ``host:port`` and release it at once; :class:`StatusBindError` if that fails."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        for family, kind, proto, _, address in infos:
            with socket.socket(family, kind, proto) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as asyncio's server does
                s.bind(address)
    except OSError as e:
        raise _bind_error(host, port, e) from e


class StatusServer:
    """The status interface of one daemon. ``await server.start(host, port)`` … ``await server.stop()``."""

    def __init__(
        self,
        source: StatusSource,
        *,
        counters: Counters | None = None,
        clock: Callable[[], float] = time.time,
        metrics: bool = True,
        allowed_hosts: tuple[str, ...] = (),
        max_connections: int | None = None,
    ) -> None:
        self.source = source
        self.metrics = metrics  # False (--no_metrics): no /metrics route, no link to it
        self.counters = counters if counters is not None else Counters()
        self.clock = clock
        self.host: str | None = None
        self.port: int | None = None
        self.allowed_hosts = allowed_hosts  # Host names accepted besides IP literals, localhost and this host's name
        self.gate = ConnectionGate(max_connections or connection_cap(), self.counters)
        self.policy = HostPolicy(DEFAULT_HOST, allowed_hosts)
        self._runner: web.AppRunner | None = None
        self._last_logged = -LOG_EVERY_S
        self._suppressed = 0

    # -- lifecycle ---------------------------------------------------------------------------------------------------

    async def start(self, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> None:
        """Bind and serve in the running loop; ``port=0`` picks a free port (see :attr:`port`)."""
        if self._runner is not None:
            raise UsageError("the status server is already started")
        runner = web.AppRunner(
            self.build_app(),
            handle_signals=False,
            shutdown_timeout=SHUTDOWN_TIMEOUT_S,
            access_log=None,
            keepalive_timeout=KEEPALIVE_TIMEOUT_S,
            logger=RequestErrorLog(self.counters),
        )
        self.policy = HostPolicy(host, self.allowed_hosts)
        await runner.setup()
        try:
            await GatedSite(runner, host, port, self.gate).start()
        except OSError as e:
            await runner.cleanup()
            raise _bind_error(host, port, e) from e
        self._runner = runner
        self.host = host
        self.port = runner.addresses[0][1]
        log.info("status interface on http://%s:%d/ (at most %d connections)", host, self.port, self.gate.cap)

    async def stop(self) -> None:
        """Stop listening and close connections (requests in progress get at most 2 s). Idempotent."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    @property
    def url(self) -> str:
        """``http://host:port`` of the running server."""
        if self._runner is None:
            raise UsageError("the status server is not running")
        host = f"[{self.host}]" if self.host and ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    # -- the application ---------------------------------------------------------------------------------------------

    def build_app(self) -> web.Application:
        """The aiohttp application (routes and error handling); :meth:`start` serves it."""
        app = web.Application(middlewares=[self._guard], client_max_size=MAX_BODY)
        get = app.router.add_get
        get("/", self._page("front", lambda: self._html(self._front())))
        for fmt in ("plain", "json"):
            for page in pages.PAGES:
                render = self._renderer(page, fmt)
                respond: Callable[[str], web.Response] = self._text if fmt == "plain" else self._json
                get(f"/{page}/{fmt}", self._page(page, lambda r=render, w=respond: w(r())))  # type: ignore[misc]  # mypy cannot type defaults that bind the loop's values
        get("/msg_debug/{command:.+}", self._msg_debug)
        app.router.add_post("/metadata_update", self._page("metadata_update", self._metadata_update))
        if self.metrics:
            get("/metrics", self._page("metrics", self._metrics))
        return app

    def _renderer(self, page: str, fmt: str) -> Callable[[], str]:
        src, plain = self.source, fmt == "plain"
        r: Callable[..., str]  # each page's pair of renderers takes its own arguments
        if page == "server_info":
            r = pages.render_server_info_plain if plain else pages.render_server_info_json
            return lambda: r(src.server_info(), now=self.clock())
        if page == "counters":
            r = pages.render_counters_plain if plain else pages.render_counters_json
            return lambda: r(src.server_info(), self._counter_sets(), now=self.clock())
        if page == "discards":
            r = pages.render_discards_plain if plain else pages.render_discards_json
            return lambda: r(src.server_info(), src.discard_report())
        if page == "queues":
            r = pages.render_queues_plain if plain else pages.render_queues_json
            return lambda: r(src.server_info(), src.queue_stats(), now=self.clock())
        r = pages.render_metadata_fetch_time_plain if plain else pages.render_metadata_fetch_time_json
        return lambda: r(src.server_info(), src.metadata_times(), now_ms=int(self.clock() * 1000))

    def _counter_sets(self) -> list[tuple[str, CounterSet]]:
        return [*self.source.counter_sets(), (LOCATION, self.counters)]

    def _front(self) -> str:
        return dashboard.render_front_page(self.source, now=self.clock(), metrics=self.metrics)

    def _metadata_update(self) -> web.Response:
        self.source.request_metadata_update()
        return self._text(pages.render_metadata_update(now=self.clock()))

    def _metrics(self) -> web.Response:
        src = self.source
        body = render_metrics(
            src.server_info(), self._counter_sets(), src.gauges(), src.queue_stats(), src.metadata_times()
        )
        return web.Response(body=body.encode(), headers={"Content-Type": METRICS_CONTENT_TYPE})

    async def _msg_debug(self, request: web.Request) -> web.Response:
        self.counters.inc("StatusRequest", labels=(("page", "msg_debug"),))
        answer = self.source.msg_debug_command(request.match_info["command"])
        if answer is None:
            raise web.HTTPNotFound()
        return self._text(answer)

    def _page(self, name: str, respond: Callable[[], web.Response]) -> Handler:
        labels = (("page", name),)

        async def handle(request: web.Request) -> web.Response:
            self.counters.inc("StatusRequest", labels=labels)
            return respond()

        return handle

    @staticmethod
    def _text(body: str, status: int = 200) -> web.Response:
        return web.Response(text=body, status=status, content_type="text/plain", charset="utf-8")

    @staticmethod
    def _json(body: str) -> web.Response:
        return web.Response(text=body, content_type="application/json", charset="utf-8")

    @staticmethod
    def _html(body: str) -> web.Response:
        return web.Response(text=body, content_type="text/html", charset="utf-8")

    # -- errors ------------------------------------------------------------------------------------------------------

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        refused = self.policy.refusal(request, changes_state=_changes_state(request))
        if refused is not None:
            self.counters.inc("StatusRefused", labels=(("why", refused[0]),))
            return self._text(refused[1], 403)
        try:
            return await handler(request)
        except web.HTTPNotFound:
            self.counters.inc("StatusNotFound")
            return self._text(f"[not found: {request.path}; the front page / lists every page]\n", 404)
        except web.HTTPMethodNotAllowed as e:
            self.counters.inc("StatusMethodNotAllowed")
            allowed = ", ".join(sorted(e.allowed_methods))
            response = self._text(f"[method {request.method} not allowed on {request.path}; use {allowed}]\n", 405)
            response.headers["Allow"] = ",".join(sorted(e.allowed_methods))
            return response
        except (web.HTTPException, asyncio.CancelledError):
            raise
        except Exception as e:
            self.counters.inc("StatusHandlerError")
            self._log_error(request, e)
            return self._text(f"[internal error on {request.path}: {type(e).__name__}: {e}]\n", 500)

    def _log_error(self, request: web.Request, error: Exception) -> None:
        now = time.monotonic()
        if now - self._last_logged < LOG_EVERY_S:
            self._suppressed += 1
            return
        more = f" ({self._suppressed} more since the last such message)" if self._suppressed else ""
        self._last_logged, self._suppressed = now, 0
        log.error("status page %s %s failed%s", request.method, request.path, more, exc_info=error)


def _changes_state(request: web.Request) -> bool:
    """A request that changes the daemon's state: any but GET and HEAD, and the ``/msg_debug`` commands except
    ``get_topics``."""
    if request.method not in ("GET", "HEAD"):
        return True
    return request.path.startswith("/msg_debug/") and request.path != "/msg_debug/get_topics"
