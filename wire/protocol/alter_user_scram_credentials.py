"""AlterUserScramCredentials (API key 51), version 0: add, replace or delete users' SCRAM credentials (KIP-554).

Rules: flexible from v0. An upsertion carries the salt and the salted password (never the password itself).
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int8, Int16, Int32
from ._versioned import array, blob, nullable_string, register_api, string, struct

KEY = 51
VERSIONS = range(1)
FIRST_FLEXIBLE = 0


@dataclass(frozen=True, slots=True)
class ScramCredentialDeletion:
    name: str
    mechanism: int
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class ScramCredentialUpsertion:
    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class AlterUserScramCredentialsRequest:
    deletions: tuple[ScramCredentialDeletion, ...]
    upsertions: tuple[ScramCredentialUpsertion, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class AlterUserScramCredentialsResult:
    user: str
    error_code: int
    error_message: str | None
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class AlterUserScramCredentialsResponse:
    throttle_time_ms: int
    results: tuple[AlterUserScramCredentialsResult, ...]
    tags: dict[int, bytes] | None = None  # v0+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    deletion = struct(flex, "name" / string(flex), "mechanism" / Int8)
    upsertion = struct(
        flex,
        "name" / string(flex),
        "mechanism" / Int8,
        "iterations" / Int32,
        "salt" / blob(flex),
        "salted_password" / blob(flex),
    )
    return struct(
        flex,
        "deletions" / array(flex, deletion),
        "upsertions" / array(flex, upsertion),
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    result = struct(
        flex,
        "user" / string(flex),
        "error_code" / Int16,
        "error_message" / nullable_string(flex),
    )
    return struct(flex, "throttle_time_ms" / Int32, "results" / array(flex, result))


SPEC = register_api(
    key=KEY,
    name="AlterUserScramCredentials",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=AlterUserScramCredentialsRequest,
    request_schema=_request,
    response_type=AlterUserScramCredentialsResponse,
    response_schema=_response,
)
