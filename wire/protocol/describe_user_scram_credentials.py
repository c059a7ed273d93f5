"""DescribeUserScramCredentials (API key 50), version 0: the SCRAM mechanisms and iteration counts of users (null
``users``: every user; KIP-554).

Rules: flexible from v0. Mechanisms: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int8, Int16, Int32
from ._versioned import array, nullable_array, nullable_string, register_api, string, struct

KEY = 50
VERSIONS = range(1)
FIRST_FLEXIBLE = 0


@dataclass(frozen=True, slots=True)
class UserName:
    name: str
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class DescribeUserScramCredentialsRequest:
    users: tuple[UserName, ...] | None
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class CredentialInfo:
    mechanism: int
    iterations: int
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class DescribeUserScramCredentialsResult:
    user: str
    error_code: int
    error_message: str | None
    credential_infos: tuple[CredentialInfo, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class DescribeUserScramCredentialsResponse:
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    results: tuple[DescribeUserScramCredentialsResult, ...]
    tags: dict[int, bytes] | None = None  # v0+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    user_name = struct(flex, "name" / string(flex))
    return struct(flex, "users" / nullable_array(flex, user_name))


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    credential_info = struct(flex, "mechanism" / Int8, "iterations" / Int32)
    result = struct(
        flex,
        "user" / string(flex),
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
        "credential_infos" / array(flex, credential_info),
    )
    return struct(
        flex,
        "throttle_time_ms" / Int32,
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
        "results" / array(flex, result),
    )


SPEC = register_api(
    key=KEY,
    name="DescribeUserScramCredentials",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=DescribeUserScramCredentialsRequest,
    request_schema=_request,
    response_type=DescribeUserScramCredentialsResponse,
    response_schema=_response,
)
