"""SaslAuthenticate (API key 36), versions 0-2: one SASL token each way (KIP-152), after a v1 SaslHandshake.

Rules: v1 adds the session lifetime the broker grants (KIP-368: the client re-authenticates before it runs out; 0
means no limit); v2 is flexible. Error 58 (SASL_AUTHENTICATION_FAILED) comes with the broker's message.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int64
from ._versioned import blob, nullable_string, register_api, since, struct

KEY = 36
SASL_AUTHENTICATE = KEY  # as bruce.wire exports it
VERSIONS = range(3)
FIRST_FLEXIBLE = 2


@dataclass(frozen=True, slots=True)
class SaslAuthenticateRequest:
    auth_bytes: bytes
    tags: dict[int, bytes] | None = None  # v2+

    def __repr__(self) -> str:  # the token may carry a password (PLAIN): never shown
        return f"SaslAuthenticateRequest(auth_bytes=<{len(self.auth_bytes)} bytes>)"


@dataclass(frozen=True, slots=True)
class SaslAuthenticateResponse:
    error_code: int
    error_message: str | None
    auth_bytes: bytes
    session_lifetime_ms: int = 0  # v1+
    tags: dict[int, bytes] | None = None  # v2+


def _request(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    return struct(flexible, "auth_bytes" / blob(flexible))


def _response(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    return struct(
        flexible,
        "error_code" / Int16,
        "error_message" / nullable_string(flexible),
        "auth_bytes" / blob(flexible),
        *since(v, 1, "session_lifetime_ms" / Int64),  # v1
    )


SPEC = register_api(
    key=KEY,
    name="SaslAuthenticate",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=SaslAuthenticateRequest,
    request_schema=_request,
    response_type=SaslAuthenticateResponse,
    response_schema=_response,
)
