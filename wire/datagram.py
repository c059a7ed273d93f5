"""Bruce's input datagrams: what local clients write to the daemon's UNIX socket (docs/datagrams.md).

Formats (big-endian; ``Size`` counts the whole datagram, itself included):

- AnyPartition v0 (API key 256): Size i32, ApiKey i16, ApiVersion i16, Flags i16 = 0, TopicSize i16, Topic,
  Timestamp i64, KeySize i32, Key, ValueSize i32, Value.
- PartitionKey v0 (API key 257): as AnyPartition, with PartitionKey i32 between Flags and TopicSize.
- Legacy "old v0" (auto-detected when bytes 4-5 are not 0x01xx): Size i32, Version i8 = 0, Timestamp i64,
  TopicSize i8, Topic, ValueSize i32, Value. It has no key.

Rules:
- :data:`DATAGRAM` (construct) is the spec; :func:`parse_datagram` is a hand-written equivalent for the hot path,
  proven to accept and reject exactly the same inputs (``tests/wire/test_datagram.py``).
- Validation follows Bruce's order and outcome classes: fewer than 8 bytes, or Size not equal to the datagram's
  length, is :class:`MalformedInput`; a legacy version other than 0 is :class:`UnsupportedVersion` (``api_key`` None);
  an API key 0x01xx other than 256/257 is :class:`UnsupportedApiKey`; an API version other than 0 is
  :class:`UnsupportedVersion`; then any field that does not fit, Flags not 0, TopicSize <= 0 (old v0: < 0), a negative
  key or value size, or a value that does not end exactly at the end of the datagram is :class:`MalformedInput`.
  Timestamps are not validated; an empty key or value is valid.
- The parser is exact about the bytes it is given; limits on a datagram's size belong to the daemon.
- :func:`any_partition_layout` serves bursts of datagrams that repeat a layout (the daemon's intake): from one valid
  AnyPartition datagram, a prefix and one precompiled unpacker that parse any datagram of the same length, header,
  topic, key size and value size in one C call; its acceptance rule is proven equal to :func:`parse_datagram`'s
  (``tests/wire/test_datagram.py``). Unpackers are cached by layout, at most :data:`UNPACKER_CACHE_SIZE`.
- Builders raise :class:`UsageError` for what cannot be encoded (empty or over-long topic, sizes over INT32_MAX,
  out-of-range integers). Pure: no clock, so the caller passes the timestamp (epoch milliseconds).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from enum import IntEnum
from typing import NamedTuple

import construct as c
from construct import this

from .errors import MalformedInput, UnsupportedApiKey, UnsupportedVersion, UsageError
from .primitives import Int8, Int16, Int32, Int64, build, parse

__all__ = [
    "DATAGRAM",
    "OVERHEAD",
    "Datagram",
    "DatagramKind",
    "Layout",
    "any_partition_layout",
    "build_any_partition",
    "build_datagram_schema",
    "build_old_v0",
    "build_partition_key",
    "datagram_size",
    "parse_datagram",
    "parse_datagram_schema",
]

INT32_MAX = 2**31 - 1
TOPIC_MAX = 2**15 - 1  # AnyPartition / PartitionKey topic length limit
OLD_V0_TOPIC_MAX = 2**7 - 1


class DatagramKind(IntEnum):
    """The format a datagram came in (the API key; 0 for the legacy format)."""

    OLD_V0 = 0
    ANY_PARTITION = 256
    PARTITION_KEY = 257


OVERHEAD = {DatagramKind.ANY_PARTITION: 28, DatagramKind.PARTITION_KEY: 32, DatagramKind.OLD_V0: 18}
"""Bytes of a datagram that are not topic, key or value."""


class Datagram(NamedTuple):
    """A parsed input datagram (a tuple, for speed). ``key`` is ``b""`` for old v0; ``partition_key`` is None unless
    ``kind`` is PARTITION_KEY."""

    kind: DatagramKind
    topic: bytes
    timestamp: int
    key: bytes
    value: bytes
    partition_key: int | None = None


# ---------------------------------------------------------------- the spec (construct)


def _sized(name: str, prefix: c.Construct, *, minimum: int) -> list[c.Construct]:
    """``<name>_size`` then ``<name>``: a length-prefixed byte field whose length must be at least ``minimum``."""
    size = f"{name}_size"
    return [
        size / c.Rebuild(prefix, c.len_(this[name])),
        c.Check(this[size] >= minimum),
        name / c.Bytes(this[size]),
    ]


_MESSAGE_FIELDS = [
    *_sized("topic", Int16, minimum=1),
    "timestamp" / Int64,
    *_sized("key", Int32, minimum=0),
    *_sized("value", Int32, minimum=0),
    c.Terminated,  # the value ends exactly at the end of the datagram
]
ANY_PARTITION_V0 = c.Struct(
    "kind" / c.Computed(DatagramKind.ANY_PARTITION), "flags" / c.Const(0, Int16), *_MESSAGE_FIELDS
)
PARTITION_KEY_V0 = c.Struct(
    "kind" / c.Computed(DatagramKind.PARTITION_KEY),
    "flags" / c.Const(0, Int16),
    "partition_key" / Int32,
    *_MESSAGE_FIELDS,
)
OLD_V0 = c.Struct(
    "kind" / c.Computed(DatagramKind.OLD_V0),
    "timestamp" / Int64,
    *_sized("topic", Int8, minimum=0),
    *_sized("value", Int32, minimum=0),
    c.Terminated,
)
_UNSUPPORTED_VERSION = c.Struct("unsupported_version" / c.Computed(this._.api_version))
_UNSUPPORTED_API_KEY = c.Struct("unsupported_api_key" / c.Computed(this._.api_key))

_KEYED = c.Struct(  # bytes 4-5 are 0x01xx: an API key and version follow
    "api_key" / Int16,
    "api_version" / Int16,
    "message"
    / c.Switch(
        this.api_key,
        {
            256: c.Switch(this.api_version, {0: ANY_PARTITION_V0}, default=_UNSUPPORTED_VERSION),
            257: c.Switch(this.api_version, {0: PARTITION_KEY_V0}, default=_UNSUPPORTED_VERSION),
        },
        default=_UNSUPPORTED_API_KEY,
    ),
)
_LEGACY = c.Struct(  # otherwise byte 4 is a legacy format version
    "version" / Int8,
    "message"
    / c.Switch(
        this.version,
        {0: OLD_V0},
        default=c.Struct(c.Bytes(3), "unsupported_version" / c.Computed(this._.version)),  # 8 bytes at least
    ),
)

DATAGRAM = c.Struct(
    "datagram"
    / c.Prefixed(
        Int32,  # Size: the whole datagram
        c.Struct(
            "first_byte" / c.Peek(Int8),  # 1 for API-keyed datagrams; a build passes it explicitly
            "body" / c.IfThenElse(this.first_byte == 1, _KEYED, _LEGACY),
        ),
        includelength=True,
    ),
    c.Terminated,
)
"""Any input datagram, parsed in Bruce's validation order (see :func:`parse_datagram_schema`)."""


def parse_datagram_schema(data: bytes) -> Datagram:
    """Parse with the construct spec: the reference :func:`parse_datagram` is proven against (slow)."""
    body = parse(DATAGRAM, data, "input datagram").datagram.body
    m = body.message
    if "unsupported_api_key" in m:
        raise UnsupportedApiKey(m.unsupported_api_key)
    if "unsupported_version" in m:
        raise UnsupportedVersion(m.unsupported_version, api_key=body.get("api_key"))
    if m.kind == DatagramKind.OLD_V0:
        return Datagram(DatagramKind.OLD_V0, m.topic, m.timestamp, b"", m.value)
    return Datagram(DatagramKind(m.kind), m.topic, m.timestamp, m.key, m.value, m.get("partition_key"))


# ---------------------------------------------------------------- fast parser

_HEADER = struct.Struct(">ihh")  # size, api key, api version
_FLAGS_TOPIC = struct.Struct(">hh")
_FLAGS_PKEY_TOPIC = struct.Struct(">hih")
_TS_KEY = struct.Struct(">qi")
_INT32 = struct.Struct(">i")
_OLD_TS_TOPIC = struct.Struct(">qb")
_new = tuple.__new__
_ANY = DatagramKind.ANY_PARTITION
_PKEY = DatagramKind.PARTITION_KEY
_OLD = DatagramKind.OLD_V0


def _malformed(why: str) -> MalformedInput:
    return MalformedInput(f"malformed input datagram: {why}")


def parse_datagram(data: bytes) -> Datagram:
    """Parse and validate one input datagram (bytes exactly as received).

    Raises :class:`MalformedInput`, :class:`UnsupportedApiKey` or :class:`UnsupportedVersion` (module rules).
    """
    if type(data) is not bytes:
        data = bytes(data)
    n = len(data)
    if n < 8:
        raise _malformed(f"{n} bytes, shorter than a header")
    size, api_key, api_version = _HEADER.unpack_from(data)
    if size != n:
        raise _malformed(f"size field {size} but {n} bytes received")
    if api_key >> 8 != 1:  # the high byte (signed) is the legacy format version
        if api_key >> 8:
            raise UnsupportedVersion(api_key >> 8)
        return _parse_old_v0(data, n)
    if api_key == 256:
        if api_version:
            raise UnsupportedVersion(api_version, api_key=256)
        if n < 12:
            raise _malformed("truncated before the topic")
        flags, topic_size = _FLAGS_TOPIC.unpack_from(data, 8)
        partition_key = None
        pos = 12
        kind = _ANY
    elif api_key == 257:
        if api_version:
            raise UnsupportedVersion(api_version, api_key=257)
        if n < 16:
            raise _malformed("truncated before the topic")
        flags, partition_key, topic_size = _FLAGS_PKEY_TOPIC.unpack_from(data, 8)
        pos = 16
        kind = _PKEY
    else:
        raise UnsupportedApiKey(api_key)
    if flags:
        raise _malformed(f"flags {flags} (must be 0)")
    if topic_size <= 0:
        raise _malformed(f"topic size {topic_size}")
    key_pos = pos + topic_size + 12
    if key_pos > n:
        raise _malformed("truncated in the topic or timestamp")
    timestamp, key_size = _TS_KEY.unpack_from(data, pos + topic_size)
    if key_size < 0:
        raise _malformed(f"key size {key_size}")
    value_pos = key_pos + key_size + 4
    if value_pos > n:
        raise _malformed("truncated in the key or value size")
    (value_size,) = _INT32.unpack_from(data, value_pos - 4)
    if value_size != n - value_pos:  # negative, too long, or trailing bytes
        raise _malformed(f"value size {value_size} but {n - value_pos} bytes remain")
    return _new(
        Datagram,
        (kind, data[pos : pos + topic_size], timestamp, data[key_pos : value_pos - 4], data[value_pos:], partition_key),
    )


def _parse_old_v0(data: bytes, n: int) -> Datagram:
    if n < 14:
        raise _malformed("legacy datagram truncated before the topic")
    timestamp, topic_size = _OLD_TS_TOPIC.unpack_from(data, 5)
    if topic_size < 0:
        raise _malformed(f"legacy topic size {topic_size}")
    value_pos = 14 + topic_size + 4
    if value_pos > n:
        raise _malformed("legacy datagram truncated in the topic or value size")
    (value_size,) = _INT32.unpack_from(data, value_pos - 4)
    if value_size != n - value_pos:
        raise _malformed(f"legacy value size {value_size} but {n - value_pos} bytes remain")
    return _new(Datagram, (_OLD, data[14 : value_pos - 4], timestamp, b"", data[value_pos:], None))


# ---------------------------------------------------------------- layouts (bursts that repeat one)

UNPACKER_CACHE_SIZE = 1024  # unpackers kept, by (topic size, key size, value size); cleared when full
_layouts: dict[tuple[int, int, int], Callable[[bytes], tuple[int, int, bytes, int, bytes]]] = {}


class Layout(NamedTuple):
    """The exact layout of one valid AnyPartition datagram (see :func:`any_partition_layout`)."""

    prefix: bytes  # Size, ApiKey, ApiVersion, Flags, TopicSize and Topic: the first 12 + topic size bytes
    unpack: Callable[[bytes], tuple[int, int, bytes, int, bytes]]  # → (timestamp, key size, key, value size, value)
    key_size: int
    value_size: int


def any_partition_layout(data: bytes, topic_size: int, key_size: int) -> Layout:
    """The layout of ``data``, a datagram :func:`parse_datagram` parsed as AnyPartition with a topic of
    ``topic_size`` bytes and a key of ``key_size`` bytes.

    A datagram ``d`` with ``len(d) == len(data)`` and ``d.startswith(prefix)``, whose ``unpack(d)`` gives
    ``(timestamp, ks, key, vs, value)`` with ``ks == key_size`` and ``vs == value_size``, is a valid AnyPartition
    datagram and ``parse_datagram(d) == (ANY_PARTITION, prefix[12:], timestamp, key, value, None)``: the prefix fixes
    Size (= the length), the API key and version, Flags and the topic; the two sizes fix the rest of the framing.
    """
    value_size = len(data) - 28 - topic_size - key_size
    shape = (topic_size, key_size, value_size)
    unpack = _layouts.get(shape)
    if unpack is None:
        if len(_layouts) >= UNPACKER_CACHE_SIZE:
            _layouts.clear()
        fmt = f">{12 + topic_size}xqi{key_size}si{value_size}s"
        unpack = _layouts[shape] = struct.Struct(fmt).unpack_from
    return Layout(data[: 12 + topic_size], unpack, key_size, value_size)


# ---------------------------------------------------------------- builders

_ANY_HEAD = struct.Struct(">ihhhh")  # size, api key, version, flags, topic size
_PKEY_HEAD = struct.Struct(">ihhhih")  # size, api key, version, flags, partition key, topic size
_OLD_HEAD = struct.Struct(">ibqb")  # size, version, timestamp, topic size
_INT64 = struct.Struct(">q")


def peek_topic(data: bytes) -> bytes | None:
    """The topic of an AnyPartition or PartitionKey datagram from its first bytes (also of one cut off, as an
    oversized datagram is read), or None when they do not show one."""
    if len(data) < _ANY_HEAD.size:
        return None
    _, api_key, _, _, n = _ANY_HEAD.unpack_from(data)
    start = _ANY_HEAD.size
    if api_key == 257 and len(data) >= _PKEY_HEAD.size:
        n, start = _PKEY_HEAD.unpack_from(data)[5], _PKEY_HEAD.size
    elif api_key != 256:
        return None
    return data[start : start + n] if 0 < n <= len(data) - start else None


def datagram_size(kind: DatagramKind, topic_len: int, key_len: int, value_len: int) -> int:
    """The exact size in bytes of a datagram of ``kind`` with these lengths (``key_len`` must be 0 for OLD_V0)."""
    if kind == DatagramKind.OLD_V0 and key_len:
        raise UsageError("legacy old v0 datagrams have no key")
    return OVERHEAD[DatagramKind(kind)] + topic_len + key_len + value_len


def _topic_bytes(topic: str | bytes, limit: int, *, allow_empty: bool = False) -> bytes:
    raw = topic.encode("utf-8") if isinstance(topic, str) else bytes(topic)
    if not raw and not allow_empty:
        raise UsageError("the topic is empty")
    if len(raw) > limit:
        raise UsageError(f"topic of {len(raw)} bytes is longer than {limit}")
    return raw


def _check_total(total: int) -> None:
    if total > INT32_MAX:
        raise UsageError(f"datagram of {total} bytes is larger than {INT32_MAX}")


def _int64(value: int, what: str) -> None:
    if not -(2**63) <= value < 2**63:
        raise UsageError(f"{what} {value} does not fit in 64 bits")


def build_any_partition(topic: str | bytes, value: bytes, key: bytes = b"", *, timestamp: int) -> bytes:
    """An AnyPartition v0 datagram (the daemon picks the partition)."""
    raw = _topic_bytes(topic, TOPIC_MAX)
    _int64(timestamp, "timestamp")
    total = 28 + len(raw) + len(key) + len(value)
    _check_total(total)
    return b"".join(
        (
            _ANY_HEAD.pack(total, 256, 0, 0, len(raw)),
            raw,
            _TS_KEY.pack(timestamp, len(key)),
            key,
            _INT32.pack(len(value)),
            value,
        )
    )


def build_partition_key(
    topic: str | bytes, value: bytes, key: bytes = b"", *, partition_key: int, timestamp: int
) -> bytes:
    """A PartitionKey v0 datagram: the daemon sends it to partition ``partition_key mod partitions`` (as uint32)."""
    raw = _topic_bytes(topic, TOPIC_MAX)
    _int64(timestamp, "timestamp")
    if not -(2**31) <= partition_key < 2**31:
        raise UsageError(f"partition key {partition_key} does not fit in 32 bits")
    total = 32 + len(raw) + len(key) + len(value)
    _check_total(total)
    return b"".join(
        (
            _PKEY_HEAD.pack(total, 257, 0, 0, partition_key, len(raw)),
            raw,
            _TS_KEY.pack(timestamp, len(key)),
            key,
            _INT32.pack(len(value)),
            value,
        )
    )


def build_old_v0(topic: str | bytes, value: bytes, *, timestamp: int) -> bytes:
    """A legacy old-v0 datagram (topic at most 127 bytes, no key). For old clients' tests; new clients use
    :func:`build_any_partition`."""
    raw = _topic_bytes(topic, OLD_V0_TOPIC_MAX, allow_empty=True)
    _int64(timestamp, "timestamp")
    total = 18 + len(raw) + len(value)
    _check_total(total)
    return b"".join((_OLD_HEAD.pack(total, 0, timestamp, len(raw)), raw, _INT32.pack(len(value)), value))


def build_datagram_schema(message: Datagram) -> bytes:
    """Build with the construct spec (the reference the fast builders are proven against)."""
    if message.kind == DatagramKind.OLD_V0:
        body = {
            "version": 0,
            "message": {"timestamp": message.timestamp, "topic": message.topic, "value": message.value},
        }
        first_byte = 0
    else:
        fields = {"timestamp": message.timestamp, "topic": message.topic, "key": message.key, "value": message.value}
        if message.kind == DatagramKind.PARTITION_KEY:
            fields["partition_key"] = message.partition_key
        body = {"api_key": int(message.kind), "api_version": 0, "message": fields}
        first_byte = 1
    return build(DATAGRAM, {"datagram": {"first_byte": first_byte, "body": body}}, "input datagram")
