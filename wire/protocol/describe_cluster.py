"""DescribeCluster (API key 60), versions 0-2: the cluster's id, controller and brokers (what admin clients ask
instead of Metadata).

Rules: flexible from v0. v1 asks for the brokers or the controllers (``endpoint_type`` 1 or 2, KIP-919) and answers
which it gave; v2 can include fenced brokers and answers whether each is (KIP-1073). Authorized operations are a
32-bit mask (-2147483648 when not asked for).
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int8, Int16, Int32
from ._versioned import array, nullable_string, register_api, since, string, struct

KEY = 60
VERSIONS = range(3)
FIRST_FLEXIBLE = 0


@dataclass(frozen=True, slots=True)
class DescribeClusterRequest:
    include_cluster_authorized_operations: bool
    endpoint_type: int = 1  # v1+
    include_fenced_brokers: bool = False  # v2+
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class DescribeClusterBroker:
    broker_id: int
    host: str
    port: int
    rack: str | None = None
    is_fenced: bool = False  # v2+
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class DescribeClusterResponse:
    throttle_time_ms: int
    error_code: int
    error_message: str | None = None
    endpoint_type: int = 1  # v1+
    cluster_id: str = ""
    controller_id: int = -1
    brokers: tuple[DescribeClusterBroker, ...] = ()
    cluster_authorized_operations: int = -2147483648
    tags: dict[int, bytes] | None = None  # v0+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    return struct(
        flex,
        "include_cluster_authorized_operations" / Boolean,
        *since(v, 1, "endpoint_type" / Int8),  # v1
        *since(v, 2, "include_fenced_brokers" / Boolean),  # v2
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    broker = struct(
        flex,
        "broker_id" / Int32,
        "host" / string(flex),
        "port" / Int32,
        "rack" / nullable_string(flex),
        *since(v, 2, "is_fenced" / Boolean),  # v2
    )
    return struct(
        flex,
        "throttle_time_ms" / Int32,
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
        *since(v, 1, "endpoint_type" / Int8),  # v1
        "cluster_id" / string(flex),
        "controller_id" / Int32,
        "brokers" / array(flex, broker),
        "cluster_authorized_operations" / Int32,
    )


SPEC = register_api(
    key=KEY,
    name="DescribeCluster",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=DescribeClusterRequest,
    request_schema=_request,
    response_type=DescribeClusterResponse,
    response_schema=_response,
)
