"""DescribeTransactions (API key 65), version 0: the state of transactional ids: producer id and epoch, timeout, start
time and the partitions of the open transaction (KIP-664).

Rules: flexible from v0; sent to each transactional id's coordinator.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32, Int64
from ._versioned import array, register_api, string, struct

KEY = 65
VERSIONS = range(1)
FIRST_FLEXIBLE = 0


@dataclass(frozen=True, slots=True)
class DescribeTransactionsRequest:
    transactional_ids: tuple[str, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class TopicData:
    topic: str
    partitions: tuple[int, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class TransactionState:
    error_code: int
    transactional_id: str
    transaction_state: str
    transaction_timeout_ms: int
    transaction_start_time_ms: int
    producer_id: int
    producer_epoch: int
    topics: tuple[TopicData, ...]
    tags: dict[int, bytes] | None = None  # v0+


@dataclass(frozen=True, slots=True)
class DescribeTransactionsResponse:
    throttle_time_ms: int
    transaction_states: tuple[TransactionState, ...]
    tags: dict[int, bytes] | None = None  # v0+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    return struct(flex, "transactional_ids" / array(flex, string(flex)))


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    topic_data = struct(flex, "topic" / string(flex), "partitions" / array(flex, Int32))
    transaction_state = struct(
        flex,
        "error_code" / Int16,
        "transactional_id" / string(flex),
        "transaction_state" / string(flex),
        "transaction_timeout_ms" / Int32,
        "transaction_start_time_ms" / Int64,
        "producer_id" / Int64,
        "producer_epoch" / Int16,
        "topics" / array(flex, topic_data),
    )
    return struct(flex, "throttle_time_ms" / Int32, "transaction_states" / array(flex, transaction_state))


SPEC = register_api(
    key=KEY,
    name="DescribeTransactions",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=DescribeTransactionsRequest,
    request_schema=_request,
    response_type=DescribeTransactionsResponse,
    response_schema=_response,
)
