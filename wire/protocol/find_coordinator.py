"""FindCoordinator (API key 10), versions 0-6: which broker coordinates a consumer group, a transactional id or a share
partition.

Rules:
- v0 asks for one group's coordinator. v1 adds the key type (:data:`GROUP`, :data:`TRANSACTION`; :data:`SHARE` from
  v6, KIP-932), plus the throttle time and an error message in the answer. v2 equals v1. v3+ is flexible.
- v4+ batches keys (KIP-699): the request carries ``coordinator_keys`` instead of ``key``, and the answer one
  :class:`Coordinator` per key (each with its own error) instead of one top-level node. v5 only adds an error code
  (TRANSACTION_ABORTABLE), v6 the share key type.
- :func:`find_coordinator_request` and :meth:`FindCoordinatorResponse.by_key` hide the two shapes.
- An idempotent producer needs no coordinator; a transactional one asks for its transactional id's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import construct as c

from ..errors import UsageError
from ..primitives import Int8, Int16, Int32
from ._versioned import array, nullable_string, register_api, since, string, struct, until

KEY = 10
VERSIONS = range(7)
FIRST_FLEXIBLE = 3
BATCHED = 4  # the first version that batches keys

GROUP, TRANSACTION, SHARE = 0, 1, 2  # key types


@dataclass(frozen=True, slots=True)
class FindCoordinatorRequest:
    key: str = ""  # v0-v3
    key_type: int = GROUP  # v1+
    coordinator_keys: tuple[str, ...] = ()  # v4+
    tags: dict[int, bytes] | None = None  # v3+


def find_coordinator_request(keys: Sequence[str], *, key_type: int = GROUP, version: int) -> FindCoordinatorRequest:
    """A request for the coordinators of ``keys`` that means the same at ``version`` (before v4: exactly one key;
    v0: groups only)."""
    if not keys:
        raise UsageError("FindCoordinator needs at least one key")
    if version < BATCHED and len(keys) != 1:
        raise UsageError(f"FindCoordinator v{version} asks for one key, not {len(keys)}")
    if version == 0 and key_type != GROUP:
        raise UsageError("FindCoordinator v0 finds group coordinators only")
    if key_type == SHARE and version < 6:
        raise UsageError(f"FindCoordinator v{version} cannot find share coordinators (v6+)")
    if version >= BATCHED:
        return FindCoordinatorRequest(key_type=key_type, coordinator_keys=tuple(keys))
    return FindCoordinatorRequest(key=keys[0], key_type=key_type)


def _request(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    return struct(
        flexible,
        *until(v, 3, "key" / string(flexible)),  # v0-v3
        *since(v, 1, "key_type" / Int8),  # v1
        *since(v, 4, "coordinator_keys" / array(flexible, string(flexible))),  # v4
    )


@dataclass(frozen=True, slots=True)
class Coordinator:
    """One key's coordinator (v4+), or the single answer of v0-v3 seen the same way."""

    key: str
    node_id: int
    host: str
    port: int
    error_code: int = 0
    error_message: str | None = None
    tags: dict[int, bytes] | None = None


@dataclass(frozen=True, slots=True)
class FindCoordinatorResponse:
    throttle_time_ms: int = 0  # v1+
    error_code: int = 0  # v0-v3
    error_message: str | None = None  # v1-v3
    node_id: int = -1  # v0-v3
    host: str = ""  # v0-v3
    port: int = -1  # v0-v3
    coordinators: tuple[Coordinator, ...] = ()  # v4+
    tags: dict[int, bytes] | None = None  # v3+

    def by_key(self, request: FindCoordinatorRequest) -> dict[str, Coordinator]:
        """``{key: Coordinator}`` whatever the version: v0-v3's single answer is ``request.key``'s."""
        if self.coordinators:
            return {co.key: co for co in self.coordinators}
        if request.coordinator_keys:
            return {}
        single = Coordinator(request.key, self.node_id, self.host, self.port, self.error_code, self.error_message)
        return {request.key: single}


def _response(v: int) -> c.Construct:
    flexible = v >= FIRST_FLEXIBLE
    coordinator = struct(
        flexible,
        "key" / string(flexible),
        "node_id" / Int32,
        "host" / string(flexible),
        "port" / Int32,
        "error_code" / Int16,
        "error_message" / nullable_string(flexible),
    )
    return struct(
        flexible,
        *since(v, 1, "throttle_time_ms" / Int32),  # v1
        *until(v, 3, "error_code" / Int16),  # v0-v3
        *since(v, 1, *until(v, 3, "error_message" / nullable_string(flexible))),  # v1-v3
        *until(v, 3, "node_id" / Int32, "host" / string(flexible), "port" / Int32),  # v0-v3
        *since(v, 4, "coordinators" / array(flexible, coordinator)),  # v4
    )


SPEC = register_api(
    key=KEY,
    name="FindCoordinator",
    versions=VERSIONS,
    first_flexible=FIRST_FLEXIBLE,
    request_type=FindCoordinatorRequest,
    request_schema=_request,
    response_type=FindCoordinatorResponse,
    response_schema=_response,
)
