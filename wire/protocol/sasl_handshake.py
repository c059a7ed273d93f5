"""SaslHandshake (API key 17), versions 0-1: the client names its SASL mechanism; the broker lists those it enables.

Rules: v0 and v1 have the same body. After a v0 handshake the SASL tokens follow as raw size-prefixed frames (not
Kafka requests); after v1 they travel in SaslAuthenticate requests (KIP-152). Error 33 (UNSUPPORTED_SASL_MECHANISM)
comes with the broker's enabled mechanisms; 34 (ILLEGAL_SASL_STATE) when a handshake is not expected now.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16
from ._versioned import array, register_api, string, struct

KEY = 17
SASL_HANDSHAKE = KEY  # as bruce.wire exports it
VERSIONS = range(2)


@dataclass(frozen=True, slots=True)
class SaslHandshakeRequest:
    mechanism: str


@dataclass(frozen=True, slots=True)
class SaslHandshakeResponse:
    error_code: int
    mechanisms: tuple[str, ...]


def _request(v: int) -> c.Construct:
    return struct(False, "mechanism" / string(False))


def _response(v: int) -> c.Construct:
    return struct(False, "error_code" / Int16, "mechanisms" / array(False, string(False)))


SPEC = register_api(
    key=KEY,
    name="SaslHandshake",
    versions=VERSIONS,
    first_flexible=None,
    request_type=SaslHandshakeRequest,
    request_schema=_request,
    response_type=SaslHandshakeResponse,
    response_schema=_response,
)
