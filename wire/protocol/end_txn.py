"""EndTxn (API key 26), versions 0-3: a transactional producer asks its transaction coordinator to commit or abort
the open transaction; the coordinator then writes the commit or abort marker to every partition of it.

Rules:
- The request names the transactional id, the producer id and epoch, and ``committed`` (True: commit, False: abort);
  the answer is one error code.
- v1 equals v0 (responses may come before throttling), v2 only adds PRODUCER_FENCED, v3 is flexible.
- v4 only adds TRANSACTION_ABORTABLE; v5 (KIP-890) bumps the epoch at every transaction's end and answers the new
  one: not offered here, so the epoch stays the producer's for its whole life.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Boolean, Int16, Int32, Int64
from ._versioned import register_api, string, struct

KEY = 26
VERSIONS = range(4)
FIRST_FLEXIBLE = 3


@dataclass(frozen=True, slots=True)
class EndTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    tags: dict[int, bytes] | None = None  # v3+


def _request(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    return struct(
        flexible,
        "transactional_id" / string(flexible),
        "producer_id" / Int64,
        "producer_epoch" / Int16,
        "committed" / Boolean,
    )


@dataclass(frozen=True, slots=True)
class EndTxnResponse:
    throttle_time_ms: int
    error_code: int
    tags: dict[int, bytes] | None = None  # v3+


def _response(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    return struct(flexible, "throttle_time_ms" / Int32, "error_code" / Int16)


SPEC = register_api(
    key=KEY,
    name="EndTxn",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=EndTxnRequest,
    request_schema=_request,
    response_type=EndTxnResponse,
    response_schema=_response,
)
