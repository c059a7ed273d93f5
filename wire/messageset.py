"""Kafka message sets, magic 0 and 1 (the format of Produce v0-v2 and of Fetch v0-v3).

A set is a sequence of entries: offset i64, message size i32, then the message: crc u32 (CRC-32 of the rest),
magic i8, attributes i8 (low three bits: the codec; magic 1: bit 3 = log-append time), timestamp i64 (magic 1 only),
key (i32 length, -1 = null), value (same).

Rules:
- :data:`MESSAGE_SET` (construct) is the spec of a complete set; :func:`build_message_set` and
  :func:`build_message_set_columns` are hand-written equivalents for the hot path, proven byte-identical
  (``tests/wire/test_messageset.py``). Their plain sets (and a compressed set's inner one) are written by the
  optional C encoder (:mod:`.speedups`) when it is built and the input is in its plain form, else by the Python loop;
  anything else, and every error, is the Python loop's (``tests/wire/test_wire_speedups.py``).
- Compression wraps the whole inner set, compressed, in one message (key null, attributes = codec). Inner offsets
  count from 0; the wrapper carries the last inner offset (and in magic 1 the largest inner timestamp). Reading,
  magic-1 inner offsets are relative to the wrapper (KIP-31: absolute = wrapper - last inner + inner, unless that base
  would be negative); magic-0 inner offsets are absolute. LZ4 in magic 0 uses the KAFKA-1493 frame header (read:
  either checksum); zstd is not allowed in message sets.
- Null vs empty is the caller's choice: ``None`` is written as null (-1) and ``b""`` as an empty value, unless
  ``empty_as_null=True`` (what Bruce did: an empty key or value goes out as null).
- :func:`decode_message_set` verifies every CRC, expands compressed wrappers (at most one level, same magic inside),
  and ignores a partial entry at the end (a Fetch response may cut its last message). Anything else that is wrong is
  :class:`MalformedInput`.
"""

from __future__ import annotations

import functools
import struct
import zlib
from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from typing import Any

import construct as c
from construct import this

from .compression import MAX_DECOMPRESSED_SIZE, Codec, DecompressionBudget, compress
from .errors import MalformedInput, UsageError
from .primitives import Int8, Int32, Int64, NullableBytes, UInt32
from .record import CODEC_MASK, CREATE_TIME, LOG_APPEND_TIME, TIMESTAMP_TYPE_BIT, Record, new_record
from .speedups import message_set as _message_set_c

__all__ = [
    "MESSAGE_OVERHEAD",
    "MESSAGE_SET",
    "build_message_set",
    "build_message_set_columns",
    "decode_message_set",
]

MESSAGE_OVERHEAD = {0: 26, 1: 34}
"""Bytes of one message-set entry that are not key or value (offset, size, crc, magic, attributes, [timestamp], and
the two length prefixes), by magic."""


# ---------------------------------------------------------------- the spec (construct)

_MESSAGE_BODY = c.Struct(  # what the CRC covers
    "magic" / Int8,
    c.Check((this.magic == 0) | (this.magic == 1)),
    "attributes" / Int8,
    "timestamp" / c.If(this.magic == 1, Int64),  # magic 1: + timestamp
    "key" / NullableBytes,
    "value" / NullableBytes,
)
MESSAGE = c.Struct(
    "offset" / Int64,
    "message"
    / c.Prefixed(
        Int32,
        c.Struct(
            # Lambdas, not `this` expressions: the CRC needs the body's bytes (this schema is never compiled).
            "crc" / c.Rebuild(UInt32, lambda ctx: zlib.crc32(_MESSAGE_BODY.build(ctx.body["value"]))),
            "body" / c.RawCopy(_MESSAGE_BODY),
            c.Check(lambda ctx: ctx.crc == zlib.crc32(ctx.body.data)),
            c.Terminated,
        ),
    ),
)
MESSAGE_SET = c.Struct("entries" / c.GreedyRange(MESSAGE), c.Terminated)
"""A complete message set (no partial entry at the end)."""


def spec_entry(
    offset: int, magic: int, attributes: int, key: bytes | None, value: bytes | None, timestamp: int = -1
) -> dict[str, Any]:
    """The build input of one :data:`MESSAGE` (for tests and documentation)."""
    body = {"magic": magic, "attributes": attributes, "timestamp": timestamp, "key": key, "value": value}
    return {"offset": offset, "message": {"body": {"value": body}}}


# ---------------------------------------------------------------- building (hot path)

_ENTRY_HEAD = struct.Struct(">qiI")  # offset, size, crc
_INT32 = struct.Struct(">i").pack
_V1_PREFIX = struct.Struct(">bbq").pack  # magic, attributes, timestamp
_V0_PLAIN = b"\x00\x00"  # magic 0, attributes 0
_NULL = b"\xff\xff\xff\xff"
_crc32 = zlib.crc32
_UNSET = object()  # no layout built yet


@functools.lru_cache(maxsize=512)
def _head_and(prefix_size: int) -> Callable[..., bytes]:
    """``pack(offset, size, crc, prefix)``: an entry's head followed by ``prefix_size`` bytes."""
    return struct.Struct(f">qiI{prefix_size}s").pack


def build_message_set(
    messages: Sequence[tuple[bytes | None, bytes | None] | tuple[bytes | None, bytes | None, int]],
    *,
    magic: int,
    codec: Codec | int = Codec.NONE,
    timestamp: int = -1,
    empty_as_null: bool = False,
    base_offset: int = 0,
) -> bytes:
    """A message set of ``(key, value)`` or ``(key, value, timestamp)`` tuples, compressed with ``codec``.

    ``timestamp`` (epoch ms) is used for magic-1 messages given without one. Offsets count from ``base_offset``
    (brokers assign the real ones). Raises :class:`UsageError` for a bad magic or codec, or a field out of range.
    """
    if magic not in (0, 1):
        raise UsageError(f"message sets have magic 0 or 1, not {magic!r}")
    codec = _legacy_codec(codec)
    try:
        keys = [m[0] for m in messages]
        values = [m[1] for m in messages]
    except TypeError as e:
        raise UsageError(f"cannot encode message set: {e}") from None
    stamps = [m[2] if len(m) > 2 else timestamp for m in messages] if magic else None
    return _encode(keys, values, stamps, magic, codec, empty_as_null, base_offset, timestamp)


def build_message_set_columns(
    keys: Sequence[bytes | None],
    values: Sequence[bytes | None],
    timestamps: Sequence[int] | None,
    *,
    magic: int,
    codec: Codec | int = Codec.NONE,
    empty_as_null: bool = False,
) -> bytes:
    """:func:`build_message_set` of ``zip(keys, values, timestamps)`` (offsets from 0), from columns: the daemon's
    batches are read into three lists (C-speed comprehensions) instead of one tuple per message. ``timestamps`` is
    needed for magic 1 only. The same bytes as :func:`build_message_set` (``tests/wire/test_messageset.py``)."""
    if magic not in (0, 1):
        raise UsageError(f"message sets have magic 0 or 1, not {magic!r}")
    if magic and (timestamps is None or len(timestamps) != len(values)):
        raise UsageError("magic 1 needs a timestamp per message")
    if len(keys) != len(values):
        raise UsageError("a message set needs as many keys as values")
    codec = _legacy_codec(codec)
    return _encode(keys, values, timestamps if magic else None, magic, codec, empty_as_null, 0, -1)


def _legacy_codec(codec: Codec | int) -> Codec:
    """``codec`` as a :class:`Codec` a message set can carry (no zstd), or :class:`UsageError`."""
    try:
        codec = Codec(codec)
    except ValueError:
        raise UsageError(f"unknown compression codec {codec!r}") from None
    if codec is Codec.ZSTD:
        raise UsageError("zstd needs RecordBatch v2 (magic 2)")
    return codec


def _encode(
    keys: Sequence[bytes | None],
    values: Sequence[bytes | None],
    stamps: Sequence[int] | None,
    magic: int,
    codec: Codec,
    empty_as_null: bool,
    base_offset: int,
    empty_timestamp: int,
) -> bytes:
    """The message set of the columns (``stamps`` None for magic 0): plain, or one wrapper entry around the
    compressed inner set (its offset the last one, its timestamp the largest, ``empty_timestamp`` when empty)."""
    try:
        if codec is Codec.NONE:
            return _build_columns(keys, values, stamps, magic, empty_as_null, base_offset)
        inner = _build_columns(keys, values, stamps, magic, empty_as_null, 0)
        wrapper_ts = max(stamps, default=empty_timestamp) if stamps is not None else -1
        value = compress(codec, inner, legacy_lz4=magic == 0)
        return _entry(base_offset + max(len(values) - 1, 0), magic, int(codec), wrapper_ts, None, value)
    except (struct.error, TypeError) as e:
        raise UsageError(f"cannot encode message set: {e}") from None


def _build_columns(
    keys: Sequence[bytes | None],
    values: Sequence[bytes | None],
    stamps: Sequence[int] | None,
    magic: int,
    empty_as_null: bool,
    offset: int = 0,
) -> bytes:
    """The uncompressed set of the columns (``stamps`` None for magic 0): by the C encoder when it is built and the
    input is in its plain form, else by :func:`_build_columns_python`."""
    if _message_set_c is not None:
        try:
            return _message_set_c(keys, values, stamps, magic, empty_as_null, offset)
        except ValueError:
            pass  # not the plain form: the Python builder builds it or says why not
    return _build_columns_python(keys, values, repeat(-1) if stamps is None else stamps, magic, empty_as_null, offset)


def _build_columns_python(
    keys: Sequence[bytes | None],
    values: Sequence[bytes | None],
    stamps: Iterable[int],
    magic: int,
    empty_as_null: bool,
    offset: int = 0,
) -> bytes:
    """One pass, one CRC call per message: a message's bytes before its value (magic, attributes, [timestamp], key,
    value length) depend only on its key, value length and timestamp, which repeat from one message to the next, so
    they are built, CRC'd and given a ``struct`` (entry head + those bytes) once per change of layout; each message
    then costs the CRC of its value (continued from the prefix's) and one ``pack``. ``stamps``: -1 each for magic 0."""
    parts: list[bytes] = []
    append = parts.append
    crc32 = _crc32
    last_key: object = _UNSET
    last_size = last_ts = -2
    prefix, prefix_crc, entry_size, pack = b"", 0, 0, _head_and(0)
    for key, value, ts in zip(keys, values, stamps, strict=False):  # stamps: repeat(-1) for magic 0
        if empty_as_null:
            key = key or None
            value = value or None
        size = -1 if value is None else len(value)
        if size != last_size or ts != last_ts or key != last_key:
            last_key, last_size, last_ts = key, size, ts
            prefix = (_V1_PREFIX(1, 0, ts) if magic else _V0_PLAIN) + (_NULL if key is None else _INT32(len(key)) + key)
            prefix += _INT32(size)
            prefix_crc = crc32(prefix)
            entry_size = len(prefix) + 4 + max(size, 0)
            pack = _head_and(len(prefix))
        if value is None:
            append(pack(offset, entry_size, prefix_crc, prefix))
        else:
            append(pack(offset, entry_size, crc32(value, prefix_crc), prefix))
            append(value)
        offset += 1
    return b"".join(parts)


def _entry(offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None) -> bytes:
    body = bytearray(_V1_PREFIX(1, attributes, timestamp) if magic else bytes((0, attributes)))
    for field in (key, value):
        if field is None:
            body += _NULL
        else:
            body += _INT32(len(field))
            body += field
    return _ENTRY_HEAD.pack(offset, len(body) + 4, _crc32(body)) + body


# ---------------------------------------------------------------- decoding

_OFFSET_SIZE = struct.Struct(">qi")
_CRC_MAGIC_ATTR = struct.Struct(">Ibb")
_INT64 = struct.Struct(">q")
_LENGTH = struct.Struct(">i")


def decode_message_set(
    data: bytes | memoryview, *, max_decompressed_size: int | DecompressionBudget = MAX_DECOMPRESSED_SIZE
) -> list[Record]:
    """Every record in a fetched message set (magic 0/1), compressed wrappers expanded, a partial tail ignored.

    Its compressed wrappers may expand to ``max_decompressed_size`` bytes in all (or draw from a shared budget).
    """
    budget = DecompressionBudget.of(max_decompressed_size)
    return _decode(bytes(data), partial_tail=True, wrapper=None, budget=budget)


def _decode(
    data: bytes, *, partial_tail: bool, wrapper: tuple[int, int, int, int] | None, budget: DecompressionBudget
) -> list[Record]:
    records: list[Record] = []
    pos, total = 0, len(data)
    while pos < total:
        if total - pos < 12:
            if partial_tail:
                break
            raise MalformedInput(f"message set: {total - pos} stray bytes at the end of a compressed set")
        offset, size = _OFFSET_SIZE.unpack_from(data, pos)
        end = pos + 12 + size
        if size < 14:
            raise MalformedInput(f"message set: message size {size} at byte {pos} is too small")
        if end > total:
            if partial_tail:
                break
            raise MalformedInput(f"message set: message at byte {pos} runs past the end of a compressed set")
        records.extend(_decode_message(data, pos + 12, end, offset, wrapper, budget))
        pos = end
    if wrapper is not None and records:
        _relocate(records, wrapper)
    return records


def _decode_message(
    data: bytes, pos: int, end: int, offset: int, wrapper: tuple[int, int, int, int] | None, budget: DecompressionBudget
) -> list[Record]:
    crc, magic, attributes = _CRC_MAGIC_ATTR.unpack_from(data, pos)
    if crc != _crc32(memoryview(data)[pos + 4 : end]):
        raise MalformedInput(f"message set: CRC mismatch in the message at offset {offset}", reason="CRC")
    if magic not in (0, 1):
        raise MalformedInput(f"message set: unknown magic {magic} at offset {offset}", reason="MAGIC")
    if wrapper is not None and magic != wrapper[1]:
        raise MalformedInput(f"message set: magic {magic} inside a magic-{wrapper[1]} wrapper")
    pos += 6
    timestamp = -1
    if magic:
        if end - pos < 8:
            raise MalformedInput(f"message set: truncated timestamp at offset {offset}")
        (timestamp,) = _INT64.unpack_from(data, pos)
        pos += 8
    key, pos = _nullable_bytes(data, pos, end, offset)
    value, pos = _nullable_bytes(data, pos, end, offset)
    if pos != end:
        raise MalformedInput(f"message set: {end - pos} stray bytes in the message at offset {offset}")
    codec = attributes & CODEC_MASK
    timestamp_type = LOG_APPEND_TIME if magic and attributes & TIMESTAMP_TYPE_BIT else CREATE_TIME
    if not codec:
        return [new_record(offset, timestamp, key, value, (), timestamp_type, magic)]
    if wrapper is not None:
        raise MalformedInput(f"message set: nested compression at offset {offset}")
    if codec == Codec.ZSTD or codec > Codec.ZSTD:
        raise MalformedInput(f"message set: codec {codec} is not valid with magic {magic}", reason="UNKNOWN_CODEC")
    if value is None:
        raise MalformedInput(f"message set: compressed wrapper at offset {offset} has a null value")
    inner = budget.decompress(codec, value, legacy_lz4=magic == 0)
    return _decode(inner, partial_tail=False, wrapper=(offset, magic, timestamp, timestamp_type), budget=budget)


def _relocate(records: list[Record], wrapper: tuple[int, int, int, int]) -> None:
    """Give inner records of a magic-1 wrapper absolute offsets, and the wrapper's time if it is log-append time."""
    wrapper_offset, magic, wrapper_ts, wrapper_ts_type = wrapper
    if magic == 0:
        return
    shift = wrapper_offset - records[-1].offset
    if shift < 0:  # a wrapper written with offset 0 by a producer: keep the inner offsets (as Kafka's reader does)
        shift = 0
    log_append = wrapper_ts_type == LOG_APPEND_TIME
    for i, r in enumerate(records):
        timestamp, timestamp_type = (wrapper_ts, LOG_APPEND_TIME) if log_append else (r.timestamp, r.timestamp_type)
        records[i] = new_record(r.offset + shift, timestamp, r.key, r.value, (), timestamp_type, magic)


def _nullable_bytes(data: bytes, pos: int, end: int, offset: int) -> tuple[bytes | None, int]:
    if end - pos < 4:
        raise MalformedInput(f"message set: truncated length at offset {offset}")
    (n,) = _LENGTH.unpack_from(data, pos)
    pos += 4
    if n == -1:
        return None, pos
    if n < 0 or n > end - pos:
        raise MalformedInput(f"message set: length {n} does not fit the message at offset {offset}")
    return data[pos : pos + n], pos + n
