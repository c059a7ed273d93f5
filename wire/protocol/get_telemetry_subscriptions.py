"""GetTelemetrySubscriptions (API key 71), version 0: a client asks which of its metrics the broker wants pushed, how
often and how compressed (KIP-714; librdkafka 2.5+ and the Java client 3.7+ send it).

Rules: flexible from v0. A client sends an all-zero ``client_instance_id`` the first time and is given one.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int8, Int16, Int32, Uuid
from ._versioned import array, register_api, string, struct

KEY = 71
VERSIONS = range(1)
FIRST_FLEXIBLE = 0


@dataclass(frozen=True, slots=True)
class GetTelemetrySubscriptionsRequest:
    client_instance_id: bytes
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class GetTelemetrySubscriptionsResponse:
    throttle_time_ms: int
    error_code: int
    client_instance_id: bytes
    subscription_id: int
    accepted_compression_types: tuple[int, ...]
    push_interval_ms: int
    telemetry_max_bytes: int
    delta_temporality: bool
    requested_metrics: tuple[str, ...]
    tags: dict[int, bytes] | None = None  # v0+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    return struct(flex, "client_instance_id" / Uuid)


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    return struct(
        flex,
        "throttle_time_ms" / Int32,
        "error_code" / Int16,
        "client_instance_id" / Uuid,
        "subscription_id" / Int32,
        "accepted_compression_types" / array(flex, Int8),
        "push_interval_ms" / Int32,
        "telemetry_max_bytes" / Int32,
        "delta_temporality" / Boolean,
        "requested_metrics" / array(flex, string(flex)),
    )


SPEC = register_api(
    key=KEY,
    name="GetTelemetrySubscriptions",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=GetTelemetrySubscriptionsRequest,
    request_schema=_request,
    response_type=GetTelemetrySubscriptionsResponse,
    response_schema=_response,
)
