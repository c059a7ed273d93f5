"""Kafka's primitive types as construct building blocks.

Rules:
- Every length or count prefix is checked against the bytes that remain *before* anything is read or allocated; a
  prefix that does not fit is a construct error, which :func:`parse` turns into :class:`MalformedInput`.
- Nullable types use ``None`` for Kafka's null (-1 length, or 0 for compact types).
- Strings are UTF-8 ``str``; bytes are ``bytes``. Invalid UTF-8 is malformed input.
- Classic types (int16/int32 prefixes) serve non-flexible versions; ``Compact*`` and :data:`TaggedFields` serve the
  flexible versions (KIP-482): unsigned-varint length + 1, and a tagged-field section.
- Pure: no I/O, no clocks.
"""

from __future__ import annotations

import io
from typing import Any, BinaryIO

import construct as c

from .errors import MalformedInput, UsageError

Int8 = c.Int8sb
Int16 = c.Int16sb
Int32 = c.Int32sb
Int64 = c.Int64sb
UInt16 = c.Int16ub
UInt32 = c.Int32ub
Float64 = c.Float64b
Boolean = c.Flag
Uuid = c.Bytes(16)


def _remaining(stream: Any) -> int:
    """Bytes left in a seekable stream (construct always parses from BytesIO here)."""
    pos: int = stream.tell()
    end: int = stream.seek(0, io.SEEK_END)
    stream.seek(pos)
    return end - pos


# ---------------------------------------------------------------- varints


class _UnsignedVarint(c.Construct):  # type: ignore[misc]  # construct is untyped: its classes are Any
    """Unsigned LEB128, at most ``max_bytes`` bytes (5 for 32-bit, 10 for 64-bit values)."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__()
        self.max_bytes = max_bytes
        self.limit = 1 << (32 if max_bytes == 5 else 64)

    def _parse(self, stream: BinaryIO, context: Any, path: str) -> Any:
        result = 0
        shift = 0
        for _ in range(self.max_bytes):
            b = c.stream_read(stream, 1, path)[0]
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                if result >= self.limit:
                    raise c.ValidationError(f"varint {result} out of range", path=path)
                return result
            shift += 7
        raise c.ValidationError(f"varint longer than {self.max_bytes} bytes", path=path)

    def _build(self, obj: Any, stream: BinaryIO, context: Any, path: str) -> Any:
        if not isinstance(obj, int) or obj < 0 or obj >= self.limit:
            raise c.IntegerError(f"value {obj!r} does not fit an unsigned varint", path=path)
        data = encode_unsigned_varint(obj)
        c.stream_write(stream, data, len(data), path)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise c.SizeofError("varints have a variable size", path=path)


class _ZigZag(c.Adapter):  # type: ignore[misc]  # construct is untyped: its classes are Any
    def __init__(self, subcon: c.Construct, bits: int) -> None:
        super().__init__(subcon)
        self.bits = bits

    def _decode(self, obj: Any, context: Any, path: str) -> Any:
        return (obj >> 1) ^ -(obj & 1)

    def _encode(self, obj: Any, context: Any, path: str) -> Any:
        if not isinstance(obj, int) or not -(1 << (self.bits - 1)) <= obj < (1 << (self.bits - 1)):
            raise c.IntegerError(f"value {obj!r} does not fit a {self.bits}-bit signed varint", path=path)
        return (obj << 1) ^ (obj >> (self.bits - 1))


UnsignedVarint = _UnsignedVarint(5)
UnsignedVarlong = _UnsignedVarint(10)
Varint = _ZigZag(_UnsignedVarint(5), 32)
Varlong = _ZigZag(_UnsignedVarint(10), 64)


def encode_unsigned_varint(value: int) -> bytes:
    """Encode a non-negative int as unsigned LEB128."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """Encode a signed int as zigzag LEB128 (Kafka's varint/varlong)."""
    return encode_unsigned_varint((value << 1) ^ (value >> 63))


# ---------------------------------------------------------------- strings, bytes and arrays


class _LengthPrefixed(c.Construct):  # type: ignore[misc]  # construct is untyped: its classes are Any
    """What strings, bytes and arrays share: a length (or count) prefix, checked against the bytes that remain before
    anything is read. ``compact`` prefixes hold length + 1; null is -1 (compact: 0) and allowed when ``nullable``."""

    def __init__(self, prefix: c.Construct, *, compact: bool, nullable: bool) -> None:
        super().__init__()
        self.prefix = prefix
        self.compact = compact
        self.nullable = nullable

    def _parse_length(self, stream: BinaryIO, context: Any, path: str) -> int | None:
        """The length that follows, or None for null. Every element takes at least one byte, so a length above the
        remaining bytes is rejected here."""
        n: int = self.prefix._parsereport(stream, context, path)
        if self.compact:
            n -= 1
        if n < 0:
            if n == -1 and self.nullable:
                return None
            raise c.ValidationError(f"invalid length {n}", path=path)
        if n > _remaining(stream):
            raise c.StreamError(f"length {n} exceeds the remaining bytes", path=path)
        return n

    def _build_length(self, n: int | None, stream: BinaryIO, context: Any, path: str) -> None:
        if n is None:
            if not self.nullable:
                raise c.ConstructError("null is not allowed here", path=path)
            n = -1
        self.prefix._build(n + 1 if self.compact else n, stream, context, path)

    def _sizeof(self, context: Any, path: str) -> int:
        raise c.SizeofError("variable size", path=path)


class _Sized(_LengthPrefixed):
    """A length-prefixed string (``text``: UTF-8 ``str``) or byte field."""

    def __init__(self, prefix: c.Construct, *, compact: bool, nullable: bool, text: bool) -> None:
        super().__init__(prefix, compact=compact, nullable=nullable)
        self.text = text

    def _parse(self, stream: BinaryIO, context: Any, path: str) -> Any:
        n = self._parse_length(stream, context, path)
        if n is None:
            return None
        data = c.stream_read(stream, n, path)
        if not self.text:
            return data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise c.ValidationError(f"invalid UTF-8: {e}", path=path) from None

    def _build(self, obj: Any, stream: BinaryIO, context: Any, path: str) -> Any:
        if obj is None:
            data = None
        elif self.text and isinstance(obj, str):
            data = obj.encode("utf-8")
        elif not self.text and isinstance(obj, (bytes, bytearray, memoryview)):
            data = bytes(obj)
        else:  # a str for bytes, bytes for a str, or bytes(5), which would silently write five zero bytes
            raise c.ConstructError(f"expected {'str' if self.text else 'bytes'}, got {type(obj).__name__}", path=path)
        self._build_length(None if data is None else len(data), stream, context, path)
        if data:
            c.stream_write(stream, data, len(data), path)
        return obj


class _Array(_LengthPrefixed):
    """A count-prefixed array of ``subcon``; null parses as ``None`` when ``nullable``."""

    def __init__(self, subcon: c.Construct, prefix: c.Construct, *, compact: bool, nullable: bool) -> None:
        super().__init__(prefix, compact=compact, nullable=nullable)
        self.subcon = subcon

    def _parse(self, stream: BinaryIO, context: Any, path: str) -> Any:
        n = self._parse_length(stream, context, path)
        if n is None:
            return None
        return c.ListContainer(self.subcon._parsereport(stream, context, f"{path} -> [{i}]") for i in range(n))

    def _build(self, obj: Any, stream: BinaryIO, context: Any, path: str) -> Any:
        self._build_length(None if obj is None else len(obj), stream, context, path)
        for i, item in enumerate(obj or ()):
            self.subcon._build(item, stream, context, f"{path} -> [{i}]")
        return obj


String = _Sized(Int16, compact=False, nullable=False, text=True)
NullableString = _Sized(Int16, compact=False, nullable=True, text=True)
Bytes = _Sized(Int32, compact=False, nullable=False, text=False)
NullableBytes = _Sized(Int32, compact=False, nullable=True, text=False)
CompactString = _Sized(UnsignedVarint, compact=True, nullable=False, text=True)
CompactNullableString = _Sized(UnsignedVarint, compact=True, nullable=True, text=True)
CompactBytes = _Sized(UnsignedVarint, compact=True, nullable=False, text=False)
CompactNullableBytes = _Sized(UnsignedVarint, compact=True, nullable=True, text=False)
# Inside RecordBatch v2 records: a zigzag varint length, -1 = null.
VarintString = _Sized(Varint, compact=False, nullable=False, text=True)
VarintNullableBytes = _Sized(Varint, compact=False, nullable=True, text=False)


def Array(subcon: c.Construct) -> c.Construct:
    """Classic array: int32 count."""
    return _Array(subcon, Int32, compact=False, nullable=False)


def NullableArray(subcon: c.Construct) -> c.Construct:
    """Classic array whose count may be -1 (null)."""
    return _Array(subcon, Int32, compact=False, nullable=True)


def CompactArray(subcon: c.Construct) -> c.Construct:
    """Flexible-version array: unsigned varint count + 1."""
    return _Array(subcon, UnsignedVarint, compact=True, nullable=False)


def CompactNullableArray(subcon: c.Construct) -> c.Construct:
    """Flexible-version array whose count may be null (encoded 0)."""
    return _Array(subcon, UnsignedVarint, compact=True, nullable=True)


def VarintArray(subcon: c.Construct) -> c.Construct:
    """An array inside RecordBatch v2 records (record headers): zigzag varint count."""
    return _Array(subcon, Varint, compact=False, nullable=False)


# ---------------------------------------------------------------- tagged fields


class _TaggedFields(c.Construct):  # type: ignore[misc]  # construct is untyped: its classes are Any
    """KIP-482 tagged fields: unsigned varint count, then (tag, size, bytes) with strictly increasing tags.

    Parsed as ``{tag: raw bytes}``, or ``None`` when there are none (the dataclasses' default, so round trips are
    exact); unknown tags are kept raw so they survive a round trip. Builds from a dict or ``None`` (= no tagged fields).
    """

    def _parse(self, stream: BinaryIO, context: Any, path: str) -> Any:
        count = UnsignedVarint._parsereport(stream, context, path)
        if count > _remaining(stream):
            raise c.StreamError(f"tagged field count {count} exceeds the remaining bytes", path=path)
        fields: dict[int, bytes] = {}
        last = -1
        for _ in range(count):
            tag = UnsignedVarint._parsereport(stream, context, path)
            if tag <= last:
                raise c.ValidationError(f"tagged field {tag} out of order", path=path)
            last = tag
            size = UnsignedVarint._parsereport(stream, context, path)
            if size > _remaining(stream):
                raise c.StreamError(f"tagged field {tag} of {size} bytes exceeds the remaining bytes", path=path)
            fields[tag] = c.stream_read(stream, size, path)
        return fields or None

    def _build(self, obj: Any, stream: BinaryIO, context: Any, path: str) -> Any:
        fields = dict(sorted((obj or {}).items()))
        out = bytearray(encode_unsigned_varint(len(fields)))
        for tag, raw in fields.items():
            if not isinstance(tag, int) or tag < 0 or not isinstance(raw, (bytes, bytearray, memoryview)):
                raise c.ConstructError(f"tagged field {tag!r}: expected an int tag and bytes", path=path)
            out += encode_unsigned_varint(tag) + encode_unsigned_varint(len(raw)) + bytes(raw)
        c.stream_write(stream, bytes(out), len(out), path)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise c.SizeofError("variable size", path=path)


TaggedFields = _TaggedFields()


class _TaggedStruct(c.Adapter):  # type: ignore[misc]  # construct is untyped: its classes are Any
    """A flexible-version struct whose *known* tagged fields are decoded into named fields; unknown tags stay raw in
    ``tags``. An absent tagged field parses as ``None``, and ``None`` is not written (Kafka omits default values)."""

    def __init__(self, struct: c.Struct, tagged: dict[int, tuple[str, c.Construct]]) -> None:
        super().__init__(struct)
        self.tagged = tagged
        self._exact = {tag: c.FocusedSeq("value", "value" / sub, c.Terminated) for tag, (_, sub) in tagged.items()}

    def _decode(self, obj: Any, context: Any, path: str) -> Any:
        tags = dict(obj.tags or {})
        for tag, (name, _) in self.tagged.items():
            raw = tags.pop(tag, None)
            obj[name] = None if raw is None else self._exact[tag].parse(raw)
        obj.tags = tags or None
        return obj

    def _encode(self, obj: Any, context: Any, path: str) -> Any:
        obj = dict(obj)
        tags = dict(obj.get("tags") or {})
        for tag, (name, _) in self.tagged.items():
            value = obj.pop(name, None)
            if value is not None:
                tags[tag] = self._exact[tag].build(value)
        obj["tags"] = tags or None
        return obj


def TaggedStruct(*subcons: c.Construct, tagged: dict[int, tuple[str, c.Construct]]) -> c.Construct:
    """``c.Struct(*subcons, "tags" / TaggedFields)`` with the tagged fields ``{tag: (name, schema)}`` decoded by name
    (e.g. Produce v10's ``current_leader``, tag 0)."""
    return _TaggedStruct(c.Struct(*subcons, "tags" / TaggedFields), tagged)


class _NullableStruct(c.Construct):  # type: ignore[misc]  # construct is untyped: its classes are Any
    """A struct field that may be null: an int8 marker (-1: null, else present; written as 1), then the struct."""

    def __init__(self, subcon: c.Construct) -> None:
        super().__init__()
        self.subcon = subcon

    def _parse(self, stream: BinaryIO, context: Any, path: str) -> Any:
        if Int8._parsereport(stream, context, path) < 0:
            return None
        return self.subcon._parsereport(stream, context, path)

    def _build(self, obj: Any, stream: BinaryIO, context: Any, path: str) -> Any:
        Int8._build(-1 if obj is None else 1, stream, context, path)
        if obj is not None:
            self.subcon._build(obj, stream, context, path)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise c.SizeofError("variable size", path=path)


def NullableStruct(subcon: c.Construct) -> c.Construct:
    """A struct field that may be null (e.g. ConsumerGroupHeartbeat's assignment): int8 -1 for null, 1 then the
    struct when present."""
    return _NullableStruct(subcon)


# ---------------------------------------------------------------- entry points


def parse(schema: c.Construct, data: bytes, what: str) -> Any:
    """Parse ``data`` with ``schema``; any construct failure becomes :class:`MalformedInput` naming ``what`` (and, in
    its ``path``, the field where parsing stopped).

    The schema is responsible for rejecting trailing bytes (end it with ``c.Terminated``) where that matters.
    """
    try:
        return schema.parse(data)
    except c.ConstructError as e:
        path = (e.path or "").removeprefix("(parsing)").removeprefix(" -> ") or None
        raise MalformedInput(f"malformed {what}: {e}", path=path) from None
    except (UnicodeDecodeError, OverflowError, ValueError) as e:
        raise MalformedInput(f"malformed {what}: {e}") from None


def build(schema: c.Construct, obj: Any, what: str) -> bytes:
    """Build ``obj`` with ``schema``; a value that does not fit is the caller's :class:`UsageError`."""
    try:
        data: bytes = schema.build(obj)
    except (c.ConstructError, UnicodeEncodeError, OverflowError, TypeError, KeyError) as e:
        raise UsageError(f"cannot encode {what}: {e}") from None
    return data
