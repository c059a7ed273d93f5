"""AddOffsetsToTxn (API key 25), versions 0-4: a transactional producer adds a consumer group's offsets to its
transaction, before it commits them with TxnOffsetCommit (consume-transform-produce).

Rules: v1 equals v0 (answers may come before throttling), v2 adds PRODUCER_FENCED, v3 is flexible, v4 adds
TRANSACTION_ABORTABLE.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32, Int64
from ._versioned import register_api, string, struct

KEY = 25
VERSIONS = range(5)
FIRST_FLEXIBLE = 3


@dataclass(frozen=True, slots=True)
class AddOffsetsToTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str
    tags: dict[int, bytes] | None = None  # v3+


@dataclass(frozen=True, slots=True)
class AddOffsetsToTxnResponse:
    throttle_time_ms: int
    error_code: int
    tags: dict[int, bytes] | None = None  # v3+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    return struct(
        flex,
        "transactional_id" / string(flex),
        "producer_id" / Int64,
        "producer_epoch" / Int16,
        "group_id" / string(flex),
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    return struct(flex, "throttle_time_ms" / Int32, "error_code" / Int16)


SPEC = register_api(
    key=KEY,
    name="AddOffsetsToTxn",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=AddOffsetsToTxnRequest,
    request_schema=_request,
    response_type=AddOffsetsToTxnResponse,
    response_schema=_response,
)
