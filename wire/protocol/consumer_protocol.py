"""The consumer protocol of classic groups: what a consumer puts in JoinGroup's protocol ``metadata`` (its
subscription) and what the leader hands out in SyncGroup's ``assignment``, versions 0-3. Not an API: bytes inside
the group APIs' bodies (and DescribeGroups' ``member_metadata`` / ``member_assignment``), when the protocol type is
``consumer``.

Rules:
- Both start with an int16 version; then classic (non-flexible) fields. Subscription: topics; user data (nullable
  bytes); v1 owned partitions; v2 generation id; v3 rack id. Assignment: assigned partitions and user data (v1-v3
  add nothing to its layout).
- A version newer than 3 is read with version 3's fields and what follows them is ignored (newer versions only add
  fields at the end); up to version 3 the bytes must end with the last field.
- Bad bytes raise :class:`~bruce.wire.errors.MalformedInput`, like every parser of this library.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as c

from ..errors import MalformedInput, UsageError
from ..primitives import Array, Int16, Int32, NullableBytes, NullableString, String, build, parse
from ._versioned import since
from .base import from_container, to_buildable

LATEST = 3


@dataclass(frozen=True, slots=True)
class ConsumerTopicPartitions:
    topic: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ConsumerSubscription:
    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[ConsumerTopicPartitions, ...] = ()  # v1+
    generation_id: int = -1  # v2+
    rack_id: str | None = None  # v3+


@dataclass(frozen=True, slots=True)
class ConsumerAssignment:
    version: int
    assigned_partitions: tuple[ConsumerTopicPartitions, ...]
    user_data: bytes | None = None


_TOPIC_PARTITIONS = c.Struct("topic" / String, "partitions" / Array(Int32))


def _subscription(v: int) -> c.Construct:
    return c.Struct(
        "version" / Int16,
        "topics" / Array(String),
        "user_data" / NullableBytes,
        *since(v, 1, "owned_partitions" / Array(_TOPIC_PARTITIONS)),  # v1
        *since(v, 2, "generation_id" / Int32),  # v2
        *since(v, 3, "rack_id" / NullableString),  # v3
    )


def _assignment(v: int) -> c.Construct:
    return c.Struct("version" / Int16, "assigned_partitions" / Array(_TOPIC_PARTITIONS), "user_data" / NullableBytes)


SUBSCRIPTION_SCHEMAS = {v: _subscription(v) for v in range(LATEST + 1)}  # by version: the fields each has
ASSIGNMENT_SCHEMAS = {v: _assignment(v) for v in range(LATEST + 1)}


def _schema(table: dict[int, c.Construct], data: bytes, what: str) -> c.Construct:
    version = parse(Int16, data[:2], f"{what} version")
    if version < 0:
        raise MalformedInput(f"malformed {what}: version {version}")
    schema = table[min(version, LATEST)]
    return schema if version > LATEST else c.Struct(*schema.subcons, c.Terminated)


def decode_subscription(data: bytes) -> ConsumerSubscription:
    """A consumer's subscription (JoinGroup protocol metadata)."""
    what = "consumer subscription"
    parsed = parse(_schema(SUBSCRIPTION_SCHEMAS, data, what), data, what)
    found: ConsumerSubscription = from_container(ConsumerSubscription, parsed)
    return found


def decode_assignment(data: bytes) -> ConsumerAssignment:
    """A consumer's assignment (SyncGroup assignment)."""
    what = "consumer assignment"
    parsed = parse(_schema(ASSIGNMENT_SCHEMAS, data, what), data, what)
    found: ConsumerAssignment = from_container(ConsumerAssignment, parsed)
    return found


def encode_subscription(value: ConsumerSubscription) -> bytes:
    """The bytes of a subscription at ``value.version`` (0-3)."""
    if value.version not in SUBSCRIPTION_SCHEMAS:
        raise UsageError(f"consumer subscription version {value.version} is not 0-{LATEST}")
    return build(SUBSCRIPTION_SCHEMAS[value.version], to_buildable(value), "consumer subscription")


def encode_assignment(value: ConsumerAssignment) -> bytes:
    """The bytes of an assignment at ``value.version`` (0-3)."""
    if value.version not in ASSIGNMENT_SCHEMAS:
        raise UsageError(f"consumer assignment version {value.version} is not 0-{LATEST}")
    return build(ASSIGNMENT_SCHEMAS[value.version], to_buildable(value), "consumer assignment")
