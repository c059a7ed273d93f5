"""ApiVersions (API key 18), versions 0-4: which API versions a broker supports.

Rules: v3+ is flexible, but its *response header* stays v0 (base.py handles that). A broker that does not support the
requested version answers in the v0 body with error 35 (UNSUPPORTED_VERSION); :func:`decode_api_versions_response`
falls back to that shape. Brokers before Kafka 0.10 close the connection instead (the caller's cue for the v0 protocol).
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..errors import MalformedInput
from ..primitives import Array as KArray
from ..primitives import CompactArray, CompactString, Int16, Int32, TaggedFields
from .base import ApiSpec, decode_response, register

KEY = 18


@dataclass(frozen=True, slots=True)
class ApiVersionsRequest:
    client_software_name: str = "bruce-kafka"  # v3+
    client_software_version: str = "0"  # v3+
    tags: dict[int, bytes] | None = None  # v3+


@dataclass(frozen=True, slots=True)
class ApiVersionRange:
    api_key: int
    min_version: int
    max_version: int
    tags: dict[int, bytes] | None = None  # v3+


@dataclass(frozen=True, slots=True)
class ApiVersionsResponse:
    error_code: int
    api_keys: tuple[ApiVersionRange, ...]
    throttle_time_ms: int = 0  # v1+
    tags: dict[int, bytes] | None = None  # v3+: supported/finalized features (kept raw)

    def ranges(self) -> dict[int, tuple[int, int]]:
        """``{api_key: (min_version, max_version)}``."""
        return {r.api_key: (r.min_version, r.max_version) for r in self.api_keys}


_REQUEST_V0 = c.Struct()
_REQUEST_V3 = c.Struct(
    "client_software_name" / CompactString,  # v3
    "client_software_version" / CompactString,  # v3
    "tags" / TaggedFields,
)

_RANGE_V0 = c.Struct("api_key" / Int16, "min_version" / Int16, "max_version" / Int16)
_RESPONSE_V0 = c.Struct("error_code" / Int16, "api_keys" / KArray(_RANGE_V0))
_RESPONSE_V1 = c.Struct(*_RESPONSE_V0.subcons, "throttle_time_ms" / Int32)  # v1: + throttle time
_RESPONSE_V3 = c.Struct(
    "error_code" / Int16,
    "api_keys" / CompactArray(c.Struct(*_RANGE_V0.subcons, "tags" / TaggedFields)),  # v3: compact, tagged
    "throttle_time_ms" / Int32,
    "tags" / TaggedFields,
)

SPEC = register(
    ApiSpec(
        key=KEY,
        name="ApiVersions",
        requests={0: _REQUEST_V0, 1: _REQUEST_V0, 2: _REQUEST_V0, 3: _REQUEST_V3, 4: _REQUEST_V3},
        responses={0: _RESPONSE_V0, 1: _RESPONSE_V1, 2: _RESPONSE_V1, 3: _RESPONSE_V3, 4: _RESPONSE_V3},
        request_type=ApiVersionsRequest,
        response_type=ApiVersionsResponse,
        first_flexible=3,
    )
)


def decode_api_versions_response(version: int, frame: bytes) -> tuple[int, ApiVersionsResponse]:
    """Decode an ApiVersions response, accepting the v0-shaped answer a broker sends for a version it lacks."""
    try:
        return decode_response(KEY, version, frame)
    except MalformedInput:
        if version == 0:
            raise
        correlation_id, body = decode_response(KEY, 0, frame)
        if body.error_code == 0:
            raise
        return correlation_id, body
