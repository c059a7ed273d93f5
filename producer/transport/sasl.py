"""SASL authentication on a connected broker: SaslHandshake v1, then SaslAuthenticate rounds (KIP-152), PLAIN or
SCRAM-SHA-256/512 (RFC 5802/7677), and re-authentication before the session the broker grants runs out (KIP-368).

Rules:
- Runs on the connection's one framing path (:meth:`BrokerConnection.request`), after ApiVersions: a broker that
  does not offer SaslHandshake v1 and SaslAuthenticate (Kafka before 1.0) is refused with a clear error.
- SCRAM is the ``scramp`` library's client (a well-kept implementation, used by pg8000): it checks the server's
  nonce and final signature, so a broker that does not know the password cannot pass for one that does.
- Any refusal (unknown mechanism, SASL_AUTHENTICATION_FAILED, a server signature that does not verify) is an
  :class:`AuthenticationFailed` naming the broker and the mechanism, with the broker's message; never the password.
- :func:`authenticate` returns when the session must be renewed (loop time, or None: no limit). Re-authentication
  starts at 85 % of the lifetime, as the Java client's earliest point, leaving time for a round trip.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, Protocol

from scramp import ScramClient, ScramException

from bruce.wire import (
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    ProtocolChoice,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
)

from ..acks import Failure
from ..config import SecurityConfig
from ..errors import TransportError

REAUTH_FRACTION = 0.85


class SaslChannel(Protocol):
    """What authentication asks of a connection (:class:`~bruce.producer.transport.broker_connection.BrokerConnection`
    is one): its broker's name, the versions it negotiated, and one request/response round."""

    node: str
    versions: ProtocolChoice | None

    def request(self, body: Any, version: int) -> Awaitable[Any]: ...


class AuthenticationFailed(TransportError):
    """The broker refused our credentials or our TLS checks refused the broker; the message says which and why."""

    def __init__(self, node: str, method: str, detail: str) -> None:
        super().__init__(f"authentication failed: broker {node}, {method}: {detail}", reason=Failure.AUTHENTICATION)
        self.node = node
        self.method = method


async def authenticate(conn: SaslChannel, security: SecurityConfig, *, nonce: str | None = None) -> float | None:
    """Authenticate ``conn`` with ``security``'s mechanism; the loop time by which to re-authenticate, or None.
    ``nonce``: SCRAM's client nonce, for test vectors only (random otherwise)."""
    mechanism = security.sasl_mechanism
    choice = conn.versions
    if choice is None or not choice.negotiated or not choice.supports(SASL_HANDSHAKE):
        raise AuthenticationFailed(conn.node, mechanism, "the broker does not offer SASL (no SaslHandshake)")
    if choice.version(SASL_HANDSHAKE) < 1 or not choice.supports(SASL_AUTHENTICATE):
        raise AuthenticationFailed(conn.node, mechanism, "the broker lacks SaslHandshake v1 / SaslAuthenticate")
    started = asyncio.get_running_loop().time()
    handshake = await conn.request(SaslHandshakeRequest(mechanism), 1)
    if handshake.error_code != 0:
        offered = ", ".join(handshake.mechanisms) or "none"
        raise AuthenticationFailed(
            conn.node, mechanism, f"mechanism not enabled (error {handshake.error_code}; the broker offers {offered})"
        )
    version = choice.version(SASL_AUTHENTICATE)
    username = security.sasl_username
    assert security.sasl_password is not None  # checked by SecurityConfig
    password = security.sasl_password.reveal()
    if mechanism == "PLAIN":
        answer = await _round(conn, mechanism, version, f"\0{username}\0{password}".encode())
    else:
        client = ScramClient([mechanism], username, password, c_nonce=nonce)
        try:
            first = await _round(conn, mechanism, version, client.get_client_first().encode())
            client.set_server_first(first.auth_bytes.decode())
            answer = await _round(conn, mechanism, version, client.get_client_final().encode())
            client.set_server_final(answer.auth_bytes.decode())
        except (ScramException, UnicodeDecodeError) as e:
            raise AuthenticationFailed(conn.node, mechanism, f"SCRAM exchange failed: {e}") from None
    lifetime_ms = answer.session_lifetime_ms
    return started + lifetime_ms / 1000 * REAUTH_FRACTION if lifetime_ms > 0 else None


async def _round(conn: SaslChannel, mechanism: str, version: int, token: bytes) -> SaslAuthenticateResponse:
    """One SaslAuthenticate exchange; a refusal is :class:`AuthenticationFailed` with the broker's message."""
    answer: SaslAuthenticateResponse = await conn.request(SaslAuthenticateRequest(token), version)
    if answer.error_code != 0:
        message = answer.error_message or "no message"
        raise AuthenticationFailed(conn.node, mechanism, f"{message} (error {answer.error_code})")
    return answer
