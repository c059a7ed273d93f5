"""DeleteTopics (API key 20), versions 0-6: delete topics.

Rules: v0-v5 name the topics (``topic_names``); v6 sends ``topics``, each by name or by id (a null name). v1 adds the
throttle time, v4 is flexible, v5 answers an error message per topic (KIP-599), v6 each topic's id. Kafka 4.0 removed
v0 from its brokers.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..primitives import Int16, Int32, Uuid
from ._versioned import array, nullable_string, register_api, since, string, struct, until

KEY = 20
VERSIONS = range(7)
FIRST_FLEXIBLE = 4


@dataclass(frozen=True, slots=True)
class DeleteTopicState:
    name: str | None = None
    topic_id: bytes = bytes(16)
    tags: dict[int, bytes] | None = None  # v4+


@dataclass(frozen=True, slots=True)
class DeleteTopicsRequest:
    topics: tuple[DeleteTopicState, ...] = ()  # v6+
    topic_names: tuple[str, ...] = ()  # v0-v5
    timeout_ms: int = 0
    tags: dict[int, bytes] | None = None  # v4+


@dataclass(frozen=True, slots=True)
class DeletableTopicResult:
    name: str | None
    topic_id: bytes = bytes(16)  # v6+
    error_code: int = 0
    error_message: str | None = None  # v5+
    tags: dict[int, bytes] | None = None  # v4+


@dataclass(frozen=True, slots=True)
class DeleteTopicsResponse:
    throttle_time_ms: int = 0  # v1+
    responses: tuple[DeletableTopicResult, ...] = ()
    tags: dict[int, bytes] | None = None  # v4+


def _request(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    delete_topic_state = struct(flex, "name" / nullable_string(flex), "topic_id" / Uuid)
    return struct(
        flex,
        *since(v, 6, "topics" / array(flex, delete_topic_state)),  # v6
        *until(v, 5, "topic_names" / array(flex, string(flex))),  # v0-v5
        "timeout_ms" / Int32,
    )


def _response(v: int) -> c.Construct:
    flex = v >= FIRST_FLEXIBLE
    result = struct(
        flex,
        "name" / (nullable_string(flex) if v >= 6 else string(flex)),  # v6: nullable
        *since(v, 6, "topic_id" / Uuid),  # v6
        "error_code" / Int16,
        *since(v, 5, "error_message" / nullable_string(flex)),  # v5
    )
    return struct(
        flex,
        *since(v, 1, "throttle_time_ms" / Int32),  # v1
        "responses" / array(flex, result),
    )


SPEC = register_api(
    key=KEY,
    name="DeleteTopics",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=DeleteTopicsRequest,
    request_schema=_request,
    response_type=DeleteTopicsResponse,
    response_schema=_response,
)
