"""UpdateFeatures (API key 57), versions 0-2: change the cluster's finalized feature levels (KIP-584).

Rules: flexible from v0. v0 allows a downgrade per feature; v1 replaces that by an upgrade type (1 upgrade, 2 safe
downgrade, 3 unsafe downgrade) and adds ``validate_only``; v2 answers without per-feature results.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int8, Int16, Int32
from ._versioned import array, nullable_string, register_api, since, string, struct, until

KEY = 57
VERSIONS = range(3)
FIRST_FLEXIBLE = 0


@dataclass(frozen=True, slots=True)
class FeatureUpdateKey:
    feature: str
    max_version_level: int
    allow_downgrade: bool = False  # v0 only
    upgrade_type: int = 1  # v1+
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class UpdateFeaturesRequest:
    timeout_ms: int = 60000
    feature_updates: tuple[FeatureUpdateKey, ...] = ()
    validate_only: bool = False  # v1+
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class UpdatableFeatureResult:
    feature: str
    error_code: int
    error_message: str | None
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class UpdateFeaturesResponse:
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    results: tuple[UpdatableFeatureResult, ...] = ()  # v0-v1
    tags: dict[int, bytes] | None = None  # v0+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    update = struct(
        flex,
        "feature" / string(flex),
        "max_version_level" / Int16,
        *until(v, 0, "allow_downgrade" / Boolean),  # v0 only
        *since(v, 1, "upgrade_type" / Int8),  # v1
    )
    return struct(
        flex,
        "timeout_ms" / Int32,
        "feature_updates" / array(flex, update),
        *since(v, 1, "validate_only" / Boolean),  # v1
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    result = struct(
        flex,
        "feature" / string(flex),
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
    )
    return struct(
        flex,
        "throttle_time_ms" / Int32,
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
        *until(v, 1, "results" / array(flex, result)),  # v0-v1
    )


SPEC = register_api(
    key=KEY,
    name="UpdateFeatures",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=UpdateFeaturesRequest,
    request_schema=_request,
    response_type=UpdateFeaturesResponse,
    response_schema=_response,
)
