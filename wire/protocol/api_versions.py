"""ApiVersions (API key 18), versions 0-4: which API versions a broker supports.

Rules: v3+ is flexible, but its *response header* stays v0 (base.py handles that). The v3+ answer's tagged fields
(the broker's supported and finalized features, their epoch, whether a ZooKeeper migration is ready) are decoded by
name. A broker that does not support the
requested version answers in the v0 body with error 35 (UNSUPPORTED_VERSION); :func:`decode_api_versions_response`
falls back to that shape. Brokers before Kafka 0.10 close the connection instead (the caller's cue for the v0 protocol).
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..errors import MalformedInput
from ..primitives import Boolean, Int16, Int32, Int64
from ._versioned import array, register_api, since, string, struct, tagged
from .base import decode_response

KEY = 18
API_VERSIONS_KEY = KEY  # as bruce.wire exports it
VERSIONS = range(5)
FIRST_FLEXIBLE = 3


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
class SupportedFeatureKey:
    name: str
    min_version: int
    max_version: int
    tags: dict[int, bytes] | None = None


@dataclass(frozen=True, slots=True)
class FinalizedFeatureKey:
    name: str
    max_version_level: int
    min_version_level: int
    tags: dict[int, bytes] | None = None


@dataclass(frozen=True, slots=True)
class ApiVersionsResponse:
    error_code: int
    api_keys: tuple[ApiVersionRange, ...]
    throttle_time_ms: int = 0  # v1+
    supported_features: tuple[SupportedFeatureKey, ...] | None = None  # v3+ tagged field 0
    finalized_features_epoch: int | None = None  # v3+ tagged field 1
    finalized_features: tuple[FinalizedFeatureKey, ...] | None = None  # v3+ tagged field 2
    zk_migration_ready: bool | None = None  # v3+ tagged field 3
    tags: dict[int, bytes] | None = None  # v3+

    def ranges(self) -> dict[int, tuple[int, int]]:
        """``{api_key: (min_version, max_version)}``."""
        return {r.api_key: (r.min_version, r.max_version) for r in self.api_keys}


def _request(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    return struct(
        flexible,
        *since(v, 3, "client_software_name" / string(flexible), "client_software_version" / string(flexible)),  # v3
    )


_SUPPORTED = struct(True, "name" / string(True), "min_version" / Int16, "max_version" / Int16)
_FINALIZED = struct(True, "name" / string(True), "max_version_level" / Int16, "min_version_level" / Int16)


def _response(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    api = struct(flexible, "api_key" / Int16, "min_version" / Int16, "max_version" / Int16)
    return struct(
        flexible,
        "error_code" / Int16,
        "api_keys" / array(flexible, api),
        *since(v, 1, "throttle_time_ms" / Int32),  # v1
        tagged=tagged(
            v,
            (3, 0, "supported_features", array(True, _SUPPORTED)),
            (3, 1, "finalized_features_epoch", Int64),
            (3, 2, "finalized_features", array(True, _FINALIZED)),
            (3, 3, "zk_migration_ready", Boolean),
        ),  # v3: tags 0-3
    )


SPEC = register_api(
    key=KEY,
    name="ApiVersions",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=ApiVersionsRequest,
    request_schema=_request,
    response_type=ApiVersionsResponse,
    response_schema=_response,
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
