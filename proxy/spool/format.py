"""The spool's on-disk format: segment header and records (docs/spool.md is the prose version of this spec).

Layout (big-endian throughout):

- Segment header, :data:`HEADER_SIZE` = 28 bytes: magic ``b"BSPL"``, format version u16 (= 1), flags u16 (= 0),
  base sequence u64 (the sequence of the segment's first record), created i64 (epoch ms), CRC-32C u32 of the 24
  bytes before it.
- Record frame: length u32 (bytes of the body), CRC-32C u32 of the body, body. Body: sequence u64, timestamp i64
  (the client's, epoch ms), routing u8 (0 AnyPartition, 1 PartitionKey), partition key i32 (0 for AnyPartition),
  topic length u16 (>= 1), key length i32 (-1 = null key), value length i32 (>= 0), then topic, key and value bytes.
  The body ends exactly after the value. Only the sequence, the timestamp, the key and the value vary between
  messages of one layout (topic, routing, key and value sizes), so the encoder packs a body in one call from those
  and the layout's bytes, built once per layout and cached (:data:`LAYOUTS_MAX` layouts, cleared when full).
- Done file (``<segment>.done``, written at a clean close for a segment partly done): magic ``b"BSPD"``, version
  u16 (= 1), flags u16 (= 0), the segment's base sequence u64 and created i64, count u32 (bits), the bitmap
  (``ceil(count / 8)`` bytes, bit i = sequence base + i done), CRC-32C u32 of everything before it.

Rules:
- :data:`HEADER` and :data:`RECORD` (construct) are the spec. :func:`encode_burst` and :func:`decode_frame` are the
  hand-written hot path, proven by ``tests/proxy/spool/test_spool_format.py`` to build identical bytes and to accept and
  reject exactly what the spec does. :func:`encode_burst` runs the C encoder (``_speedups.c``, an optional
  extension built at install) when present, else :func:`encode_burst_python`; the tests prove the two byte-equal,
  and the C one hands anything but the plain form back to the Python one, so errors come from one place.
- Decoding never raises for bad bytes: :func:`decode_frame` returns a :class:`SpoolRecord`, or a :class:`FrameError`
  saying whether the frame is *short* (it runs past the end of the data: a torn write) or *bad* (CRC or field
  check failed). :func:`parse_header` returns None for a header that is not valid.
- Encoding takes :class:`SpoolMessage` tuples and raises :class:`~bruce.wire.errors.UsageError` for what cannot be
  encoded (empty or over-long topic, out-of-range integers). Pure: no I/O, no clock (the layout cache aside).
- Each record keeps a CRC of its own, so recovery tells a torn or damaged record from its neighbours. A CRC chained
  from record to record would still take one CRC-32C call per record; one CRC per burst would take fewer, but a
  damaged record would then condemn its whole burst (and the format would change).
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Callable, Sequence
from enum import IntEnum
from typing import Any, BinaryIO, NamedTuple

import construct as c
from construct import this

from bruce.wire import UsageError, crc32c

__all__ = [
    "FORMAT_VERSION",
    "FRAME_OVERHEAD",
    "HEADER",
    "HEADER_SIZE",
    "MAGIC",
    "RECORD",
    "DoneBitmap",
    "FrameError",
    "SegmentHeader",
    "SpoolFields",
    "SpoolMessage",
    "SpoolRecord",
    "decode_frame",
    "decode_frame_schema",
    "encode_burst",
    "encode_burst_python",
    "encode_burst_schema",
    "encode_done",
    "encode_header",
    "parse_done",
    "parse_header",
]

MAGIC = b"BSPL"
FORMAT_VERSION = 1
HEADER_SIZE = 28
FIXED_SIZE = 31  # sequence .. value length: the fixed part of a body
FRAME_OVERHEAD = 8 + FIXED_SIZE  # length, CRC and fixed fields: bytes of a record that are not topic, key or value
TOPIC_MAX = 2**16 - 1


class Routing(IntEnum):
    ANY_PARTITION = 0
    PARTITION_KEY = 1


# ---------------------------------------------------------------- the spec (construct)


class _Crc32cFramed(c.Subconstruct):  # type: ignore[misc]  # construct is untyped: its classes are Any
    """length u32, CRC-32C u32 of the body, then ``length`` bytes of body that ``subcon`` parses entirely."""

    def _parse(self, stream: BinaryIO, context: Any, path: str) -> Any:
        length = c.Int32ub._parsereport(stream, context, path)
        expected = c.Int32ub._parsereport(stream, context, path)
        data = c.stream_read(stream, length, path)
        actual = crc32c(data)
        if actual != expected:
            raise c.ChecksumError(f"CRC-32C is {actual:#010x}, the record says {expected:#010x}", path=path)
        try:
            return self.subcon._parsereport(io.BytesIO(data), context, path)
        except c.StreamError as e:  # the body's fields run past its length: bad, not short
            raise c.CheckError(f"the body does not fit its length: {e}", path=path) from None

    def _build(self, obj: Any, stream: BinaryIO, context: Any, path: str) -> Any:
        inner = io.BytesIO()
        self.subcon._build(obj, inner, context, path)
        data = inner.getvalue()
        c.Int32ub._build(len(data), stream, context, path)
        c.Int32ub._build(crc32c(data), stream, context, path)
        c.stream_write(stream, data, len(data), path)
        return obj


HEADER_FIELDS = c.Struct(
    "magic" / c.Const(MAGIC),
    "version" / c.Const(FORMAT_VERSION, c.Int16ub),
    "flags" / c.Const(0, c.Int16ub),  # reserved
    "base_sequence" / c.Int64ub,
    "created_ms" / c.Int64sb,
)
HEADER = c.Struct(
    "fields" / c.RawCopy(HEADER_FIELDS),
    "crc" / c.Checksum(c.Int32ub, crc32c, this.fields.data),
)

BODY = c.Struct(
    "sequence" / c.Int64ub,
    "timestamp" / c.Int64sb,
    "routing" / c.Int8ub,
    c.Check((this.routing == Routing.ANY_PARTITION) | (this.routing == Routing.PARTITION_KEY)),
    "partition_key" / c.Int32sb,
    c.Check((this.routing == Routing.PARTITION_KEY) | (this.partition_key == 0)),
    "topic_size" / c.Rebuild(c.Int16ub, c.len_(this.topic)),
    c.Check(this.topic_size >= 1),
    "key_size" / c.Rebuild(c.Int32sb, lambda ctx: -1 if ctx.key is None else len(ctx.key)),
    c.Check(this.key_size >= -1),
    "value_size" / c.Rebuild(c.Int32sb, c.len_(this.value)),
    c.Check(this.value_size >= 0),
    "topic" / c.Bytes(this.topic_size),
    "key" / c.If(this.key_size >= 0, c.Bytes(this.key_size)),
    "value" / c.Bytes(this.value_size),
    c.Terminated,
)
RECORD = _Crc32cFramed(BODY)


# ---------------------------------------------------------------- values


class SegmentHeader(NamedTuple):
    base_sequence: int
    created_ms: int


class SpoolMessage(NamedTuple):
    """A message to spool: ``partition_key`` None routes AnyPartition; ``key`` None is a null key. A plain tuple of
    the same five fields in the same order is accepted wherever a SpoolMessage is (the intake builds those: a
    NamedTuple costs more per message to create)."""

    topic: bytes
    partition_key: int | None
    key: bytes | None
    value: bytes
    timestamp: int


# What encoding accepts: a SpoolMessage, or a plain tuple of its five fields in its order (the intake's).
SpoolFields = tuple[bytes, int | None, bytes | None, bytes, int]


class SpoolRecord(NamedTuple):
    """A record read back: a :class:`SpoolMessage`'s fields, its sequence, and its frame's offset and size."""

    sequence: int
    topic: bytes
    partition_key: int | None
    key: bytes | None
    value: bytes
    timestamp: int
    offset: int
    size: int

    def message(self) -> SpoolMessage:
        return SpoolMessage(self.topic, self.partition_key, self.key, self.value, self.timestamp)


class FrameError(NamedTuple):
    """Why no record could be read at ``offset``: ``short`` when the frame runs past the end of the data."""

    offset: int
    short: bool
    detail: str


# ---------------------------------------------------------------- header


_HEADER = struct.Struct(">4sHHQq")
_U32 = struct.Struct(">I")


def encode_header(base_sequence: int, created_ms: int) -> bytes:
    """The 28-byte segment header."""
    try:
        fields = _HEADER.pack(MAGIC, FORMAT_VERSION, 0, base_sequence, created_ms)
    except struct.error as e:
        raise UsageError(f"segment header out of range: {e}") from None
    return fields + _U32.pack(crc32c(fields))


def parse_header(data: bytes | bytearray | memoryview) -> SegmentHeader | None:
    """The header at the start of ``data``, or None if it is short, has a bad CRC, magic, version or flags."""
    if len(data) < HEADER_SIZE:
        return None
    magic, version, flags, base, created = _HEADER.unpack_from(data)
    if crc32c(data[:24]) != _U32.unpack_from(data, 24)[0]:
        return None
    if magic != MAGIC or version != FORMAT_VERSION or flags:
        return None
    return SegmentHeader(base, created)


def header_version(data: bytes | bytearray | memoryview) -> int | None:
    """The format version of a header whose magic and CRC are valid (to report a newer format), else None."""
    if len(data) < HEADER_SIZE or data[:4] != MAGIC or crc32c(data[:24]) != _U32.unpack_from(data, 24)[0]:
        return None
    version: int = _HEADER.unpack_from(data)[1]
    return version


# ---------------------------------------------------------------- done file (written at a clean close)

DONE_MAGIC = b"BSPD"
DONE_FIELDS = c.Struct(
    "magic" / c.Const(DONE_MAGIC),
    "version" / c.Const(FORMAT_VERSION, c.Int16ub),
    "flags" / c.Const(0, c.Int16ub),  # reserved
    "base_sequence" / c.Int64ub,  # the segment's
    "created_ms" / c.Int64sb,  # the segment header's: a done file never applies to another segment of that name
    "count" / c.Rebuild(c.Int32ub, c.len_(this.bitmap) * 8),
    "bitmap" / c.Bytes((this.count + 7) // 8),  # bit i (LSB first in byte i // 8): sequence base + i is done
)
DONE_FILE = c.Struct(
    "fields" / c.RawCopy(DONE_FIELDS),
    "crc" / c.Checksum(c.Int32ub, crc32c, this.fields.data),
    c.Terminated,
)


class DoneBitmap(NamedTuple):
    base_sequence: int
    created_ms: int
    bitmap: bytes


def encode_done(done: DoneBitmap) -> bytes:
    """A done file (through the spec: it is written once per segment at a clean close)."""
    fields = {"base_sequence": done.base_sequence, "created_ms": done.created_ms, "bitmap": done.bitmap}
    data: bytes = DONE_FILE.build({"fields": {"value": fields}})
    return data


def parse_done(data: bytes) -> DoneBitmap | None:
    """The done file's bitmap, or None if the file is not a valid done file."""
    try:
        f = DONE_FILE.parse(data).fields.value
    except c.ConstructError:
        return None
    return DoneBitmap(f.base_sequence, f.created_ms, f.bitmap)


# ---------------------------------------------------------------- records: the fast path


def _c_encoder() -> Callable[[int, Sequence[SpoolFields]], bytes] | None:
    """The C encoder (``_speedups.c``), built at install where a C compiler is found; BRUCE_NO_EXTENSIONS=1 (any
    non-empty value) leaves it out."""
    if os.environ.get("BRUCE_NO_EXTENSIONS"):
        return None
    try:
        from ._speedups import encode_burst
    except ImportError:  # built without a compiler: the Python encoder does it all
        return None
    return encode_burst


_encode_burst_c = _c_encoder()

_FRAME = struct.Struct(">II")
_FIXED = struct.Struct(">QqBiHii")
_HEAD = struct.Struct(">BiHii")  # the fixed fields after the timestamp: routing, partition key, the three sizes
_U64_MAX = 2**64 - 1
LAYOUTS_MAX = 4096  # record layouts kept by encode_burst (cleared when full)

# (topic, partition key, key size, value size) -> (the body's bytes from routing to the end of the topic, the body's
# pack, the body's length): the part of a record that only depends on the message's layout, built once per layout.
_layouts: dict[tuple[bytes, int | None, int, int], tuple[bytes, Any, int]] = {}


def _layout(topic: bytes, partition_key: int | None, key_size: int, value_size: int) -> tuple[bytes, Any, int]:
    """The cached parts of a record of this layout (see ``_layouts``)."""
    if not topic:
        raise UsageError("a spooled message needs a topic")
    head = _HEAD.pack(partition_key is not None, partition_key or 0, len(topic), key_size, value_size) + topic
    sizes = f"{len(head)}s{key_size}s{value_size}s" if key_size >= 0 else f"{len(head)}s{value_size}s"
    layout = (head, struct.Struct(">Qq" + sizes).pack, 16 + len(head) + max(key_size, 0) + value_size)
    if len(_layouts) >= LAYOUTS_MAX:
        _layouts.clear()
    _layouts[topic, partition_key, key_size, value_size] = layout
    return layout


def encode_burst(first_sequence: int, messages: Sequence[SpoolFields]) -> bytes:
    """The records of ``messages`` with sequences ``first_sequence``, ``first_sequence + 1``, …, as one ``bytes``.

    Through the C encoder when it is built (``_speedups``; docs/benchmarks.md, "The durable spool") and takes the
    burst, else :func:`encode_burst_python`, which also gives the error for a burst that cannot be spooled."""
    if _encode_burst_c is not None:
        try:
            return _encode_burst_c(first_sequence, messages)
        except ValueError:
            pass  # not the plain form the C encoder takes: the Python encoder builds it or says why not
    return encode_burst_python(first_sequence, messages)


def encode_burst_python(first_sequence: int, messages: Sequence[SpoolFields]) -> bytes:
    """:func:`encode_burst` in Python: the fallback without a C compiler, and what the C encoder is proven against.

    Per record, one ``pack`` builds the body (sequence, timestamp, then the layout's cached bytes, key and value) and
    one the frame (length, CRC-32C of the body). A layout is looked up only when it differs from the previous
    message's: a burst usually repeats one."""
    out: list[bytes] = []
    append = out.append
    frame = _FRAME.pack
    layout_of = _layouts.get
    seq = first_sequence
    last_topic: bytes | None = None  # the previous message's layout, compared field by field (no tuple per message)
    last_pk: int | None = None
    last_ks = last_vs = -2
    try:
        for topic, partition_key, key, value, timestamp in messages:
            if key is None:
                if len(value) != last_vs or last_ks != -1 or topic != last_topic or partition_key != last_pk:
                    last_topic, last_pk, last_ks, last_vs = this = (topic, partition_key, -1, len(value))
                    head, pack, length = layout_of(this) or _layout(*this)
                body = pack(seq, timestamp, head, value)
            else:
                if len(value) != last_vs or len(key) != last_ks or topic != last_topic or partition_key != last_pk:
                    last_topic, last_pk, last_ks, last_vs = this = (topic, partition_key, len(key), len(value))
                    head, pack, length = layout_of(this) or _layout(*this)
                body = pack(seq, timestamp, head, key, value)
            append(frame(length, crc32c(body)))
            append(body)
            seq += 1
    except (struct.error, TypeError) as e:
        raise UsageError(f"message {seq - first_sequence} cannot be spooled: {e}") from None
    if seq > _U64_MAX + 1:
        raise UsageError("spool sequence beyond 2**64")
    return b"".join(out)


def decode_frame(data: bytes | bytearray | memoryview, offset: int) -> SpoolRecord | FrameError:
    """The record whose frame starts at ``offset`` in ``data``, or why there is none (never raises for bad bytes)."""
    end = len(data)
    if end - offset < 8:
        return FrameError(offset, True, "frame header cut short")
    length, crc = _FRAME.unpack_from(data, offset)
    start = offset + 8
    if end - start < length:
        return FrameError(offset, True, f"length {length} runs past the end ({end - start} bytes left)")
    if length < FIXED_SIZE:
        return FrameError(offset, False, f"length {length} under {FIXED_SIZE}")
    stop = start + length
    if crc32c(data[start:stop]) != crc:
        return FrameError(offset, False, "CRC-32C mismatch")
    seq, ts, routing, pkey, topic_size, key_size, value_size = _FIXED.unpack_from(data, start)
    if routing > 1 or (routing == 0 and pkey) or not topic_size or key_size < -1 or value_size < 0:
        return FrameError(offset, False, "invalid field")
    pos = start + FIXED_SIZE
    key_end = pos + topic_size + max(key_size, 0)
    if key_end + value_size != stop:
        return FrameError(offset, False, "sizes do not match the length")
    topic = bytes(data[pos : pos + topic_size])
    key = bytes(data[pos + topic_size : key_end]) if key_size >= 0 else None
    return SpoolRecord(seq, topic, pkey if routing else None, key, bytes(data[key_end:stop]), ts, offset, 8 + length)


# ---------------------------------------------------------------- records through the spec


def encode_burst_schema(first_sequence: int, messages: Sequence[SpoolMessage]) -> bytes:
    """:func:`encode_burst` through the construct spec."""
    out = []
    for i, m in enumerate(messages):
        item = {
            "sequence": first_sequence + i,
            "timestamp": m.timestamp,
            "routing": Routing.ANY_PARTITION if m.partition_key is None else Routing.PARTITION_KEY,
            "partition_key": m.partition_key or 0,
            "topic": m.topic,
            "key": m.key,
            "value": m.value,
        }
        try:
            out.append(RECORD.build(item))
        except (c.ConstructError, TypeError) as e:
            raise UsageError(f"message {i} cannot be spooled: {e}") from None
    return b"".join(out)


def decode_frame_schema(data: bytes | bytearray | memoryview, offset: int) -> SpoolRecord | FrameError:
    """:func:`decode_frame` through the construct spec (the frame error's detail and kind come from the lengths)."""
    stream = io.BytesIO(bytes(data))
    stream.seek(offset)
    try:
        r = RECORD.parse_stream(stream)
    except c.StreamError:
        return FrameError(offset, True, "frame cut short")
    except c.ConstructError as e:
        return FrameError(offset, False, str(e))
    return SpoolRecord(
        r.sequence,
        r.topic,
        r.partition_key if r.routing else None,
        r.key,
        r.value,
        r.timestamp,
        offset,
        stream.tell() - offset,
    )
