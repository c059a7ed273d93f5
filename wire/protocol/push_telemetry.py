"""PushTelemetry (API key 72), version 0: a client pushes its metrics, an OpenTelemetry ``MetricsData`` protobuf
compressed with ``compression_type`` (a record codec number), as GetTelemetrySubscriptions asked (KIP-714).

Rules: flexible from v0. ``terminating`` marks the client's last push; ``metrics`` is kept raw.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int8, Int16, Int32, Uuid
from ._versioned import blob, register_api, struct

KEY = 72
VERSIONS = range(1)
FIRST_FLEXIBLE = 0


@dataclass(frozen=True, slots=True)
class PushTelemetryRequest:
    client_instance_id: bytes
    subscription_id: int
    terminating: bool
    compression_type: int
    metrics: bytes
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class PushTelemetryResponse:
    throttle_time_ms: int
    error_code: int
    tags: dict[int, bytes] | None = None  # v0+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    return struct(
        flex,
        "client_instance_id" / Uuid,
        "subscription_id" / Int32,
        "terminating" / Boolean,
        "compression_type" / Int8,
        "metrics" / blob(flex),
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    return struct(flex, "throttle_time_ms" / Int32, "error_code" / Int16)


SPEC = register_api(
    key=KEY,
    name="PushTelemetry",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=PushTelemetryRequest,
    request_schema=_request,
    response_type=PushTelemetryResponse,
    response_schema=_response,
)
