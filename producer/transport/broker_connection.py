"""The asyncio shell around :class:`~bruce.producer.transport.framing.Connection`: one TCP connection to one broker.

Rules:
- It only moves bytes and timers; framing, correlation and decoding are the sans-I/O core's.
- Each request carries a *token*, called exactly once with the decoded response or with a :class:`Failure`
  (connection closed, socket error, socket timeout, request timeout, protocol error). After any failure the connection
  is closed and every outstanding token fails with the same :class:`Failure`.
- Socket timeout, Bruce's meaning (``kafka_socket_timeout``): while a request is outstanding, no bytes received and no
  write progress for that long is a failure. Request timeout: the oldest outstanding request unanswered that long.
  One timer per connection checks both; it runs only while requests are outstanding.
- Writes respect the transport's flow control: :attr:`BrokerConnection.writable` is false while the write buffer is
  above its high-water mark, and ``on_writable`` is called when it drains.
- Connecting is bounded by the connect timeout. :func:`open_connection` also negotiates versions (ApiVersions), and
  with ``protocol="auto"`` falls back to the Kafka 0.8 protocol when the broker closes the connection on ApiVersions.
- Security (:class:`SecurityConfig`): TLS is asyncio's TLS transport under the same protocol object (one framing
  path); a broker certificate our checks refuse, or a TLS alert by which the broker refuses ours (mTLS), is an
  :class:`AuthenticationFailed` (and never the cue for the 0.8 fallback). SASL runs after ApiVersions, each of its
  requests bounded like any other; :attr:`BrokerConnection.reauthenticate_at` says when to renew the session (KIP-368).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bruce.wire import ApiVersionsRequest, ApiVersionsResponse, BruceError, ProtocolChoice, choose_versions

from ..acks import Failure
from ..config import SecurityConfig, client_context
from ..errors import BrokerProtocolError, TransportError
from .framing import Connection
from .sasl import AuthenticationFailed, authenticate

Token = Callable[[Any], None]  # called with the response body or a Failure
_REFUSED_ALERTS = ("CERTIFICATE", "UNKNOWN_CA", "ACCESS_DENIED")  # TLS alerts by which a broker refuses our certificate
API_VERSIONS_VERSION = 3  # the version we ask with (flexible; brokers that lack it answer in v0 with error 35)


@dataclass(frozen=True, slots=True)
class Timeouts:
    """A connection's limits, in seconds: connecting, no progress while a request is outstanding (Bruce's
    ``kafka_socket_timeout``), and waiting for one response."""

    connect: float  # seconds
    socket: float
    request: float


class BrokerConnection(asyncio.Protocol):
    """A connected broker. Use :func:`open_connection`; then :meth:`send` requests; :meth:`close` when done."""

    def __init__(
        self,
        node: str,
        client_id: str,
        timeouts: Timeouts,
        *,
        tolerate_unsolicited: bool = False,
        on_writable: Callable[[], None] = lambda: None,
    ) -> None:
        """``on_writable`` is called when the write buffer drains below its high-water mark (see the module's
        rules)."""
        self.node = node  # "host:port", for messages
        self.core = Connection(client_id)
        self.timeouts = timeouts
        self.tolerate_unsolicited = tolerate_unsolicited
        self.versions: ProtocolChoice | None = None
        self.failure: Failure | None = None
        self.failure_detail = ""
        self._transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self._last_progress = 0.0
        self._last_write_size = 0
        self._timer: asyncio.TimerHandle | None = None
        self.writable = True  # False while the transport's write buffer is above its high-water mark
        self.on_writable = on_writable
        self.reauthenticate_at: float | None = None  # loop time by which SASL must be renewed (KIP-368)
        self.tls_alert = ""  # the TLS alert that ended the connection, if one did (e.g. our certificate refused)

    # ---------------------------------------------------------------- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # a stream connection's

    def data_received(self, data: bytes) -> None:
        if self.failure is not None:
            return  # bytes that were on their way when the connection failed
        self._last_progress = self._loop.time()
        core = self.core
        for pending, body in core.receive_data(data, tolerate_unsolicited=self.tolerate_unsolicited):
            pending.token(body)
        if core.error is not None:
            self._fail(Failure.PROTOCOL_ERROR, str(core.error))

    def pause_writing(self) -> None:
        self.writable = False

    def resume_writing(self) -> None:
        self.writable = True
        self.on_writable()

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is None:
            self._fail(Failure.BROKER_CLOSE, "the broker closed the connection")
        else:
            if isinstance(exc, ssl.SSLError):
                self.tls_alert = str(exc.reason or exc)
            self._fail(Failure.SOCKET_ERROR, f"socket error: {exc}")

    # ---------------------------------------------------------------- requests

    @property
    def alive(self) -> bool:
        return self.failure is None and self._transport is not None

    def send(self, body: Any, version: int, token: Token | None, *, expect_response: bool = True) -> None:
        """Write one request; ``token`` is called once with its response or a :class:`Failure`."""
        if not self.alive:
            raise TransportError(f"connection to {self.node} is closed", reason=(self.failure or Failure.SOCKET_ERROR))
        frame = self.core.send_request(body, version, token=token, expect_response=expect_response)
        now = self._loop.time()
        if expect_response:
            self.core.in_flight[-1].sent_at = now
            if self._timer is None:
                self._last_progress = now
                self._last_write_size = 0
                self._timer = self._loop.call_at(now + self._check_period(), self._check_timeouts)
        assert self._transport is not None
        if type(frame) is list:
            self._transport.writelines(frame)  # a Produce request: its batches as they are (uvloop: one writev)
        else:
            self._transport.write(frame)  # type: ignore[arg-type]  # not a list: bytes

    def request(self, body: Any, version: int) -> asyncio.Future[Any]:
        """Send a request and return a future for its response (a :class:`TransportError` on failure)."""
        future: asyncio.Future[Any] = self._loop.create_future()

        def resolve(result: Any) -> None:
            if future.done():
                return
            if isinstance(result, Failure):
                future.set_exception(TransportError(f"{self.node}: {self.failure_detail or result}", reason=result))
            else:
                future.set_result(result)

        self.send(body, version, resolve)
        return future

    def close(self) -> None:
        """Close now; outstanding requests fail with SOCKET_ERROR (a local close)."""
        self._fail(Failure.SOCKET_ERROR, "closed locally")

    # ---------------------------------------------------------------- internals

    def _check_period(self) -> float:
        return max(0.01, min(self.timeouts.socket, self.timeouts.request) / 4)

    def _check_timeouts(self) -> None:
        self._timer = None
        if not self.alive or not self.core.in_flight:
            return
        now = self._loop.time()
        assert self._transport is not None
        write_size = self._transport.get_write_buffer_size()
        if write_size < self._last_write_size:
            self._last_progress = now
        self._last_write_size = write_size
        if now - self._last_progress >= self.timeouts.socket:
            self._fail(Failure.SOCKET_TIMEOUT, f"no progress for {self.timeouts.socket:.3f} s")
            return
        if now - self.core.in_flight[0].sent_at >= self.timeouts.request:
            self._fail(Failure.REQUEST_TIMEOUT, f"no response within {self.timeouts.request:.3f} s")
            return
        self._timer = self._loop.call_at(now + self._check_period(), self._check_timeouts)

    def _fail(self, failure: Failure, detail: str) -> None:
        if self.failure is not None:
            return
        self.failure = failure
        self.failure_detail = detail
        self.core.fail(BrokerProtocolError(f"connection failed: {detail}"))
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._transport is not None:
            self._transport.abort()
        pending = list(self.core.in_flight)
        self.core.in_flight.clear()
        for p in pending:
            p.token(failure)


async def connect(
    host: str,
    port: int,
    client_id: str,
    timeouts: Timeouts,
    *,
    tls: ssl.SSLContext | None = None,
    **kwargs: Any,
) -> BrokerConnection:
    """A TCP (or, with ``tls``, TLS) connection to ``host:port`` within the connect timeout (no version negotiation)."""
    loop = asyncio.get_running_loop()
    node = f"{host}:{port}"
    extra: dict[str, Any] = {}
    if tls is not None:  # the handshake's own limit, inside the connect timeout, so that its end can be told apart
        extra = {"ssl": tls, "server_hostname": host, "ssl_handshake_timeout": timeouts.connect * 0.9}
    try:
        async with asyncio.timeout(timeouts.connect):
            _, protocol = await loop.create_connection(
                lambda: BrokerConnection(node, client_id, timeouts, **kwargs), host, port, **extra
            )
    except ssl.SSLCertVerificationError as e:
        raise AuthenticationFailed(node, "TLS", f"the broker's certificate is refused: {e.verify_message}") from None
    except ssl.SSLError as e:
        alert = str(e.reason or e)
        if any(word in alert for word in _REFUSED_ALERTS):  # TLS 1.2: refused in the handshake
            raise AuthenticationFailed(node, "TLS", f"the broker refused us: {alert}") from None
        if isinstance(e, ssl.SSLEOFError) or "WRONG_VERSION_NUMBER" in alert or "record layer" in alert:
            alert += f"; is {node} a plaintext port?"
        raise TransportError(f"TLS handshake with {node} failed: {alert}", reason=Failure.CONNECT_FAIL) from None
    except ConnectionRefusedError as e:
        raise TransportError(f"cannot connect to {node}: {e}", reason=Failure.CONNECT_FAIL) from None
    except (OSError, TimeoutError) as e:
        why = str(e) or ("timed out" if isinstance(e, TimeoutError) else type(e).__name__)
        if tls is not None and isinstance(e, ConnectionResetError | ConnectionAbortedError | BrokenPipeError):
            why = f"TLS handshake failed: the peer closed the connection ({why}); is {node} a plaintext port?"
        raise TransportError(f"cannot connect to {node}: {why}", reason=Failure.CONNECT_FAIL) from None
    return protocol


async def open_connection(
    host: str,
    port: int,
    client_id: str,
    timeouts: Timeouts,
    protocol: str,
    *,
    security: SecurityConfig | None = None,
    **kwargs: Any,
) -> BrokerConnection:
    """Connect, negotiate versions and authenticate. ``protocol``: "auto" (ApiVersions; v0 when the broker closes on
    it), "v0" (no ApiVersions) or "modern" (ApiVersions required); ``security``: TLS and SASL (None: plaintext).
    Raises :class:`TransportError` (an :class:`AuthenticationFailed` when credentials or certificates are refused)."""
    tls = client_context(security) if security is not None else None
    conn = await _negotiate(host, port, client_id, timeouts, protocol, tls, kwargs)
    if security is not None and security.sasl:
        try:
            conn.reauthenticate_at = await authenticate(conn, security)
        except BaseException:
            conn.close()
            raise
    return conn


async def reauthenticate(conn: BrokerConnection, security: SecurityConfig) -> None:
    """Renew the SASL session on ``conn`` (KIP-368); on failure the connection is closed and the error raised."""
    try:
        conn.reauthenticate_at = await authenticate(conn, security)
    except BaseException:
        conn.close()
        raise


async def _negotiate(
    host: str, port: int, client_id: str, timeouts: Timeouts, protocol: str, tls: ssl.SSLContext | None, kwargs: Any
) -> BrokerConnection:
    conn = await connect(host, port, client_id, timeouts, tls=tls, **kwargs)
    if protocol == "v0":
        conn.versions = choose_versions(None, generation="v0")
        return conn
    try:
        answer = await _api_versions(conn, API_VERSIONS_VERSION)
    except TransportError as e:
        conn.close()
        if any(word in conn.tls_alert for word in _REFUSED_ALERTS):
            raise AuthenticationFailed(conn.node, "TLS", f"the broker refused us: {conn.tls_alert}") from None
        if protocol == "modern" or e.reason not in (Failure.BROKER_CLOSE, Failure.SOCKET_ERROR) or conn.tls_alert:
            raise
        # Kafka before 0.10 closes the connection on ApiVersions: speak the 0.8 protocol on a new connection.
        conn = await connect(host, port, client_id, timeouts, tls=tls, **kwargs)
        conn.versions = choose_versions(None, generation="auto")
        return conn
    except BaseException:  # cancelled while negotiating: never leave the socket open
        conn.close()
        raise
    try:
        conn.versions = choose_versions(answer.ranges(), generation=protocol)
    except BruceError as e:
        conn.close()
        raise TransportError(f"{conn.node}: {e}", reason=Failure.PROTOCOL_ERROR) from None
    return conn


async def _api_versions(conn: BrokerConnection, version: int) -> ApiVersionsResponse:
    answer = await conn.request(ApiVersionsRequest(), version)
    if answer.error_code == 35 and version > 0:
        ours = answer.ranges().get(18, (0, 0))[1]
        return await _api_versions(conn, min(ours, version - 1))
    if answer.error_code != 0:
        conn.close()
        raise TransportError(f"{conn.node}: ApiVersions error {answer.error_code}", reason=Failure.PROTOCOL_ERROR)
    return answer  # type: ignore[no-any-return]  # the ApiVersions request's answer
