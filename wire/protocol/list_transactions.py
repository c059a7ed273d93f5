"""ListTransactions (API key 66), versions 0-2: the transactional ids a coordinator knows (KIP-664).

Rules: flexible from v0. Filters: by state and by producer id (v0), by a minimum running time (``duration_filter``,
v1, KIP-994), by a transactional id pattern (v2, KIP-1152). The answer lists the brokers' unknown state filters and
each transaction's id, producer id and state.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32, Int64
from ._versioned import array, nullable_string, register_api, since, string, struct

KEY = 66
VERSIONS = range(3)
FIRST_FLEXIBLE = 0


@dataclass(frozen=True, slots=True)
class ListTransactionsRequest:
    state_filters: tuple[str, ...]
    producer_id_filters: tuple[int, ...]
    duration_filter: int = -1  # v1+
    transactional_id_pattern: str | None = None  # v2+
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class ListedTransaction:
    transactional_id: str
    producer_id: int
    transaction_state: str
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class ListTransactionsResponse:
    throttle_time_ms: int
    error_code: int
    unknown_state_filters: tuple[str, ...]
    transaction_states: tuple[ListedTransaction, ...]
    tags: dict[int, bytes] | None = None  # v0+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    return struct(
        flex,
        "state_filters" / array(flex, string(flex)),
        "producer_id_filters" / array(flex, Int64),
        *since(v, 1, "duration_filter" / Int64),  # v1
        *since(v, 2, "transactional_id_pattern" / nullable_string(flex)),  # v2
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    transaction_state = struct(
        flex,
        "transactional_id" / string(flex),
        "producer_id" / Int64,
        "transaction_state" / string(flex),
    )
    return struct(
        flex,
        "throttle_time_ms" / Int32,
        "error_code" / Int16,
        "unknown_state_filters" / array(flex, string(flex)),
        "transaction_states" / array(flex, transaction_state),
    )


SPEC = register_api(
    key=KEY,
    name="ListTransactions",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=ListTransactionsRequest,
    request_schema=_request,
    response_type=ListTransactionsResponse,
    response_schema=_response,
)
