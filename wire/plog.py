"""plog's input protocol (Airbnb's UDP/TCP → Kafka proxy): UDP packets as construct schemas (the spec), a fast parser
for the hot path, builders, and the MurmurHash3 checksum of multipart messages.

A UDP packet is one of:

- **unboxed** — the first byte is outside 0-31: the whole datagram is one message;
- **version 0, type 0, command** — ``00 00`` + four ASCII letters (case-insensitive) + an optional trailing payload;
- **version 0, type 1, fragment** — ``00 01`` + a 24-byte big-endian header (counting the two leading bytes): fragment
  count u16, fragment index u16, payload length per fragment u16, message id u32, total message length i32,
  MurmurHash3-32 (seed 0) of the whole reassembled message u32, tags length u16, 2 reserved bytes; then the tags
  (``\\0``-separated UTF-8: ``kt:<topic>``, ``pk:<key>``), then this fragment's payload.

Rules:
- :func:`parse_packet` (fast, ``struct``) and :func:`parse_packet_schema` (construct) accept and reject exactly the same
  packets, return equal values and raise :class:`MalformedInput` with the same ``reason``; a differential property test
  proves it. Every bad packet raises :class:`MalformedInput` with one of the ``PLOG_*`` reasons below, nothing else.
- The header is checked on its own: count ≥ 1, index < count, total length ≥ 0 and, for a message of several fragments,
  consistent with count x payload length per fragment. Whether a fragment's payload fits its message (its length for
  its index, the same header as its siblings, the checksum) is the reassembler's concern, not the parser's.
- Reserved bytes are ignored on input and written as zeros. Empty tags (``\\0\\0``) are skipped, as plog does.
- Builders raise :class:`UsageError` for values that do not fit the format.
- Keys: plog hands ``pk:<key>`` to Kafka's Java producer, whose default partitioner puts a keyed record in partition
  ``(murmur2(key) & 0x7fffffff) % partitions``. :func:`plog_partition_key` gives that number for a key, so the
  daemon's PartitionKey routing (key modulo all partitions) places plog's keyed messages where plog did.
- Pure: no I/O, clocks or threads.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, BinaryIO

import construct as c
import mmh3
from construct import this

from .errors import MalformedInput, UsageError
from .primitives import build

UNBOXED_MIN = 32  # a first byte >= 32 marks an unboxed message (plog: "versions are non-printable characters")
VERSION_0 = 0
TYPE_COMMAND = 0
TYPE_FRAGMENT = 1
HEADER_SIZE = 24  # the fragment header, counting the version and type bytes
COMMAND_SIZE = 6  # version, type and four letters
MAX_DATAGRAM = 65507  # the largest UDP payload over IPv4

# Reasons (reach counters and logs).
PLOG_EMPTY = "PLOG_EMPTY"  # a zero-length datagram
PLOG_INVALID_VERSION = "PLOG_INVALID_VERSION"  # first byte 1..31
PLOG_INVALID_TYPE = "PLOG_INVALID_TYPE"  # version 0 with no type byte, or a type other than 0 and 1
PLOG_BAD_COMMAND = "PLOG_BAD_COMMAND"  # a command packet shorter than its four letters
PLOG_BAD_FRAGMENT_HEADER = "PLOG_BAD_FRAGMENT_HEADER"  # truncated or self-contradictory fragment header
PLOG_BAD_TAGS = "PLOG_BAD_TAGS"  # tags that are not UTF-8

TOPIC_TAG = "kt:"
KEY_TAG = "pk:"


# ---------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class Unboxed:
    """A whole datagram that is one message for the listener's default topic."""

    message: bytes


@dataclass(frozen=True, slots=True)
class Command:
    """A four-letter command. ``name`` is upper-cased (ASCII only); ``trail`` is whatever follows the letters."""

    name: str
    trail: bytes = b""


@dataclass(frozen=True, slots=True)
class Fragment:
    """One fragment of a multipart message (a message of one fragment is complete in itself)."""

    fragment_count: int
    fragment_index: int
    fragment_size: int  # payload length of every fragment but the last
    message_id: int  # with the sender's address and port, identifies the message
    total_length: int
    checksum: int  # MurmurHash3-32 of the whole message, unsigned
    tags: tuple[str, ...] = ()
    payload: bytes = b""

    @property
    def topic(self) -> str | None:
        """The topic from the last ``kt:`` tag, if any."""
        return last_tag(self.tags, TOPIC_TAG)

    @property
    def key(self) -> str | None:
        """The partition key (Kafka record key) from the last ``pk:`` tag, if any."""
        return last_tag(self.tags, KEY_TAG)


Packet = Unboxed | Command | Fragment


def last_tag(tags: tuple[str, ...], prefix: str) -> str | None:
    """The value of the last tag starting with ``prefix`` (plog reads tags in order, the last one wins)."""
    for tag in reversed(tags):
        if tag.startswith(prefix):
            return tag[len(prefix) :]
    return None


def murmur3_32(data: bytes) -> int:
    """MurmurHash3 x86 32-bit, seed 0, as an unsigned int: plog's checksum of a whole message (tags excluded)."""
    return mmh3.hash(data, 0, signed=False)


_MURMUR2_M = 0x5BD1E995
_MASK32 = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """MurmurHash2 as Kafka's Java client computes it (``Utils.murmur2``, seed 0x9747b28c), as an unsigned int."""
    length = len(data)
    m = _MURMUR2_M
    h = (0x9747B28C ^ length) & _MASK32
    words = length // 4
    for k in struct.unpack_from(f"<{words}I", data) if words else ():
        k = (k * m) & _MASK32
        k ^= k >> 24
        k = (k * m) & _MASK32
        h = ((h * m) & _MASK32) ^ k
    tail = length & 3
    if tail:
        rest = data[length - tail :]
        if tail == 3:
            h ^= rest[2] << 16
        if tail >= 2:
            h ^= rest[1] << 8
        h ^= rest[0]
        h = (h * m) & _MASK32
    h ^= h >> 13
    h = (h * m) & _MASK32
    h ^= h >> 15
    return h


def plog_partition_key(key: bytes) -> int:
    """The partition key that places a message keyed ``key`` where plog's Java producer would: the positive murmur2
    hash (partition = this % partitions)."""
    return murmur2(key) & 0x7FFFFFFF


# ---------------------------------------------------------------- schemas (the spec)


class _Rejected(c.ConstructError):  # type: ignore[misc]  # construct is untyped: its classes are Any
    """A construct failure that already names its reason."""

    def __init__(self, message: str, reason: str, path: str | None = None) -> None:
        super().__init__(message, path=path)
        self.reason = reason


class _Reasoned(c.Subconstruct):  # type: ignore[misc]  # construct is untyped: its classes are Any
    """Any failure inside ``subcon`` that has no reason yet gets ``reason``."""

    def __init__(self, subcon: c.Construct, reason: str) -> None:
        super().__init__(subcon)
        self.reason = reason

    def _parse(self, stream: BinaryIO, context: Any, path: str) -> Any:
        try:
            return self.subcon._parsereport(stream, context, path)
        except _Rejected:
            raise
        except c.ConstructError as e:
            raise _Rejected(str(e), self.reason, path=path) from None


class _Reject(c.Construct):  # type: ignore[misc]  # construct is untyped: its classes are Any
    """Always fails with ``reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason

    def _parse(self, stream: BinaryIO, context: Any, path: str) -> Any:
        raise _Rejected(self.reason, self.reason, path=path)

    def _build(self, obj: Any, stream: BinaryIO, context: Any, path: str) -> Any:
        raise c.ConstructError(f"cannot build a {self.reason} packet", path=path)


class _FirstByte(c.Construct):  # type: ignore[misc]  # construct is untyped: its classes are Any
    """The first byte, left in the stream (an unboxed message starts with it)."""

    def _parse(self, stream: BinaryIO, context: Any, path: str) -> Any:
        data = c.stream_read(stream, 1, path)
        c.stream_seek(stream, -1, 1, path)
        return data[0]

    def _build(self, obj: Any, stream: BinaryIO, context: Any, path: str) -> Any:
        return obj


class _Tags(c.Adapter):  # type: ignore[misc]  # construct is untyped: its classes are Any
    """``\\0``-separated UTF-8 tags; empty ones are skipped."""

    def _decode(self, obj: Any, context: Any, path: str) -> Any:
        try:
            text = obj.decode("utf-8")
        except UnicodeDecodeError as e:
            raise _Rejected(f"tags are not UTF-8: {e}", PLOG_BAD_TAGS, path=path) from None
        return tuple(t for t in text.split("\0") if t)

    def _encode(self, obj: Any, context: Any, path: str) -> Any:
        return "\0".join(obj).encode("utf-8")


COMMAND = c.Struct(
    "name" / c.Bytes(4),
    "trail" / c.GreedyBytes,
)

FRAGMENT_HEADER = c.Struct(
    "fragment_count" / c.Int16ub,
    c.Check(this.fragment_count >= 1),
    "fragment_index" / c.Int16ub,
    c.Check(this.fragment_index < this.fragment_count),
    "fragment_size" / c.Int16ub,
    "message_id" / c.Int32ub,
    "total_length" / c.Int32sb,
    c.Check(this.total_length >= 0),
    # Several fragments: every fragment but the last carries fragment_size bytes, the last at most that many.
    c.Check(
        (this.fragment_count == 1)
        | (
            ((this.fragment_count - 1) * this.fragment_size <= this.total_length)
            & (this.total_length <= this.fragment_count * this.fragment_size)
        )
    ),
    "checksum" / c.Int32ub,
    "tags_length" / c.Int16ub,
    "reserved" / c.Default(c.Bytes(2), b"\0\0"),
)

FRAGMENT = c.Struct(
    "header" / _Reasoned(FRAGMENT_HEADER, PLOG_BAD_FRAGMENT_HEADER),
    "tags" / _Reasoned(_Tags(c.Bytes(this.header.tags_length)), PLOG_BAD_FRAGMENT_HEADER),
    "payload" / c.GreedyBytes,
)

VERSION_0_BODY = c.Struct(
    c.Const(bytes([VERSION_0])),
    "type" / _Reasoned(c.Int8ub, PLOG_INVALID_TYPE),
    "body"
    / c.Switch(
        this.type,
        {TYPE_COMMAND: _Reasoned(COMMAND, PLOG_BAD_COMMAND), TYPE_FRAGMENT: FRAGMENT},
        _Reject(PLOG_INVALID_TYPE),
    ),
)

PACKET = c.Struct(
    "first" / _Reasoned(_FirstByte(), PLOG_EMPTY),
    "packet"
    / c.IfThenElse(
        this.first >= UNBOXED_MIN,
        c.Struct("message" / c.GreedyBytes),
        c.Switch(this.first, {VERSION_0: VERSION_0_BODY}, _Reject(PLOG_INVALID_VERSION)),
    ),
)


def parse_packet_schema(data: bytes) -> Packet:
    """Parse one UDP packet with the construct schema (the reference for :func:`parse_packet`)."""
    try:
        parsed = PACKET.parse(data).packet
    except _Rejected as e:
        raise MalformedInput(f"malformed plog packet: {e}", reason=e.reason) from None
    if "message" in parsed:
        return Unboxed(parsed.message)
    body = parsed.body
    if parsed.type == TYPE_COMMAND:
        return Command(body.name.upper().decode("latin-1"), body.trail)
    h = body.header
    return Fragment(
        h.fragment_count,
        h.fragment_index,
        h.fragment_size,
        h.message_id,
        h.total_length,
        h.checksum,
        body.tags,
        body.payload,
    )


def build_packet_schema(packet: Packet) -> bytes:
    """Build one UDP packet with the construct schema (the reference for :func:`build_packet`)."""
    if isinstance(packet, Unboxed):
        first = packet.message[0] if packet.message else -1
        return build(PACKET, {"first": first, "packet": {"message": packet.message}}, "plog packet")
    if isinstance(packet, Command):
        body: dict[str, Any] = {"name": packet.name.encode("latin-1"), "trail": packet.trail}
        kind = TYPE_COMMAND
    else:
        header = {
            "fragment_count": packet.fragment_count,
            "fragment_index": packet.fragment_index,
            "fragment_size": packet.fragment_size,
            "message_id": packet.message_id,
            "total_length": packet.total_length,
            "checksum": packet.checksum,
            "tags_length": len(_encode_tags(packet.tags)),
        }
        body = {"header": header, "tags": packet.tags, "payload": packet.payload}
        kind = TYPE_FRAGMENT
    return build(PACKET, {"first": VERSION_0, "packet": {"type": kind, "body": body}}, "plog packet")


# ---------------------------------------------------------------- fast parser (hot path)

_HEADER = struct.Struct(">HHHIiIH")  # after the version and type bytes, before the 2 reserved bytes


def _bad_header(message: str) -> MalformedInput:
    return MalformedInput(f"malformed plog packet: {message}", reason=PLOG_BAD_FRAGMENT_HEADER)


def parse_packet(data: bytes) -> Packet:
    """Parse one UDP packet: :class:`Unboxed`, :class:`Command` or :class:`Fragment`.

    Raises :class:`MalformedInput` (``reason`` one of the ``PLOG_*`` names) for anything else.
    """
    if not data:
        raise MalformedInput("malformed plog packet: empty datagram", reason=PLOG_EMPTY)
    first = data[0]
    if first >= UNBOXED_MIN:
        return Unboxed(bytes(data))
    if first != VERSION_0:
        raise MalformedInput(f"malformed plog packet: unknown version {first}", reason=PLOG_INVALID_VERSION)
    if len(data) < 2:
        raise MalformedInput("malformed plog packet: no packet type", reason=PLOG_INVALID_TYPE)
    kind = data[1]
    if kind == TYPE_COMMAND:
        if len(data) < COMMAND_SIZE:
            raise MalformedInput(f"malformed plog packet: command of {len(data)} bytes", reason=PLOG_BAD_COMMAND)
        return Command(data[2:6].upper().decode("latin-1"), bytes(data[6:]))
    if kind != TYPE_FRAGMENT:
        raise MalformedInput(f"malformed plog packet: unknown packet type {kind}", reason=PLOG_INVALID_TYPE)
    return _parse_fragment(data)


def _parse_fragment(data: bytes) -> Fragment:
    if len(data) < HEADER_SIZE:
        raise _bad_header(f"fragment of {len(data)} bytes, shorter than its {HEADER_SIZE}-byte header")
    count, index, size, message_id, total, checksum, tags_length = _HEADER.unpack_from(data, 2)
    if count == 0:
        raise _bad_header("fragment count 0")
    if index >= count:
        raise _bad_header(f"fragment index {index} not below the count {count}")
    if total < 0:
        raise _bad_header(f"negative total length {total}")
    if count > 1 and not (count - 1) * size <= total <= count * size:
        raise _bad_header(f"total length {total} does not fit {count} fragments of {size} bytes")
    end = HEADER_SIZE + tags_length
    if end > len(data):
        raise _bad_header(f"tags of {tags_length} bytes overrun the {len(data)}-byte packet")
    tags: tuple[str, ...] = ()
    if tags_length:
        try:
            text = data[HEADER_SIZE:end].decode("utf-8")
        except UnicodeDecodeError as e:
            raise MalformedInput(f"malformed plog packet: tags are not UTF-8: {e}", reason=PLOG_BAD_TAGS) from None
        tags = tuple(t for t in text.split("\0") if t)
    return Fragment(count, index, size, message_id, total, checksum, tags, bytes(data[end:]))


# ---------------------------------------------------------------- builders


def _encode_tags(tags: tuple[str, ...]) -> bytes:
    for tag in tags:
        if not tag or "\0" in tag:
            raise UsageError(f"plog tag {tag!r} is empty or contains NUL")
    try:
        return "\0".join(tags).encode("utf-8")
    except UnicodeEncodeError as e:
        raise UsageError(f"plog tags must be encodable as UTF-8: {e}") from None


def build_packet(packet: Packet) -> bytes:
    """Encode one packet. Raises :class:`UsageError` when a value does not fit the format."""
    if isinstance(packet, Unboxed):
        return build_unboxed(packet.message)
    if isinstance(packet, Command):
        return build_command(packet.name, packet.trail)
    return build_fragment(packet)


def build_unboxed(message: bytes) -> bytes:
    """An unboxed message: the datagram is the message, whose first byte must be >= 32 (printable)."""
    if not message or message[0] < UNBOXED_MIN:
        raise UsageError("an unboxed plog message must be non-empty and start with a byte >= 32")
    return bytes(message)


def build_command(name: str, trail: bytes = b"") -> bytes:
    """A command packet, e.g. ``build_command("PING", b"token")``. ``name`` is four characters (Latin-1, as parsed)."""
    try:
        raw = name.encode("latin-1")
    except UnicodeEncodeError:
        raw = b""
    if len(raw) != 4:
        raise UsageError(f"a plog command is four letters, not {name!r}")
    return bytes([VERSION_0, TYPE_COMMAND]) + raw + bytes(trail)


def build_fragment(fragment: Fragment) -> bytes:
    """One fragment packet. Its header must pass the parser's checks; whether the payload fits it is not checked."""
    tags = _encode_tags(fragment.tags)
    count, index, size, total = (
        fragment.fragment_count,
        fragment.fragment_index,
        fragment.fragment_size,
        fragment.total_length,
    )
    if not (0 <= index < count and total >= 0 and (count == 1 or (count - 1) * size <= total <= count * size)):
        raise UsageError(f"inconsistent plog fragment header: index {index}, count {count}, size {size}, total {total}")
    try:
        header = _HEADER.pack(count, index, size, fragment.message_id, total, fragment.checksum, len(tags))
    except struct.error as e:
        raise UsageError(f"cannot encode plog fragment header: {e}") from None
    return b"".join((bytes([VERSION_0, TYPE_FRAGMENT]), header, b"\0\0", tags, fragment.payload))


def build_fragments(
    message: bytes,
    *,
    message_id: int,
    fragment_size: int,
    topic: str | None = None,
    partition_key: str | None = None,
) -> list[bytes]:
    """Split ``message`` into fragment packets of ``fragment_size`` payload bytes each (the last may be shorter).

    ``topic`` and ``partition_key`` become ``kt:`` / ``pk:`` tags, carried by the last fragment (as plog's own client
    does). An empty message is one fragment with an empty payload.
    """
    if not 1 <= fragment_size <= 0xFFFF:
        raise UsageError(f"fragment_size {fragment_size} is not in 1..65535")
    tags = tuple(
        prefix + value for prefix, value in ((TOPIC_TAG, topic), (KEY_TAG, partition_key)) if value is not None
    )
    tags_length = len(_encode_tags(tags))
    count = max(1, -(-len(message) // fragment_size))
    if count > 0xFFFF or len(message) > 0x7FFFFFFF:
        raise UsageError(f"a message of {len(message)} bytes needs more than 65535 fragments of {fragment_size}")
    if HEADER_SIZE + tags_length + min(fragment_size, len(message)) > MAX_DATAGRAM:
        raise UsageError(f"fragments of {fragment_size} bytes plus tags exceed the {MAX_DATAGRAM}-byte datagram")
    checksum = murmur3_32(message)
    return [
        build_fragment(
            Fragment(
                count,
                i,
                fragment_size,
                message_id,
                len(message),
                checksum,
                tags if i == count - 1 else (),
                message[i * fragment_size : (i + 1) * fragment_size],
            )
        )
        for i in range(count)
    ]
