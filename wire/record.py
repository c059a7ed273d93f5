"""A record as read back from Kafka, whatever its on-wire format, and the log-entry framing both formats share.

Rules:
- A decoded record is a frozen :class:`Record`; timestamps are epoch milliseconds (-1 when the format has none).
  Decoders create records with :func:`new_record`, which gives the same object as ``Record(...)`` in a quarter of
  the time (reading is bound by it).
- Both formats (message set magic 0/1, RecordBatch v2) share one framing per log entry: offset (int64), size (int32),
  then ``size`` bytes whose fifth byte (absolute position 16) is the magic. :func:`entry_spans` walks that framing; an
  incomplete entry at the end of the buffer is a *partial tail* (a Fetch response may cut its last batch) and is
  ignored, not an error.
- Decompression is bounded for the whole buffer, not per entry (:func:`decompression_limit`): a Fetch response of
  many small compressed batches cannot expand without limit.
- The decoders of each format import this module; it imports neither (:mod:`bruce.wire.records` dispatches to them).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .compression import MAX_DECOMPRESSED_SIZE
from .errors import MalformedInput

CREATE_TIME = 0
LOG_APPEND_TIME = 1
CODEC_MASK = 0x07  # attribute bits of magic 1 and 2: the codec
TIMESTAMP_TYPE_BIT = 0x08  # and the timestamp type (LOG_APPEND_TIME when set)

ENTRY_HEADER_SIZE = 12  # offset int64 + size int32
MAGIC_POSITION = 16  # offset int64 + size int32 + (crc int32 | partition leader epoch int32)
EXPANSION_LIMIT = 64  # see decompression_limit
_SIZE = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class Record:
    """One record: its absolute offset, timestamp, key, value and headers, and the format it came in."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_type: int = CREATE_TIME
    magic: int = 2


class _RecordUnderConstruction:
    """A :class:`Record` being created: the same slots, without the frozen dataclass's ``__setattr__``. Its
    ``__init__`` assigns the fields directly, then makes the object a Record (``__class__`` assignment, allowed
    between classes of identical layout). The result is an ordinary Record: same type, equality, hash and
    immutability; ``Record(...)`` would set each field through ``object.__setattr__``, which is slower."""

    __slots__ = Record.__slots__

    def __init__(
        self,
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[tuple[str, bytes | None], ...],
        timestamp_type: int,
        magic: int,
    ) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers
        self.timestamp_type = timestamp_type
        self.magic = magic
        self.__class__ = Record  # type: ignore[assignment]  # the same slots: allowed at run time


new_record: Callable[[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...], int, int], Record] = (
    _RecordUnderConstruction  # type: ignore[assignment]  # its __init__ makes the object a Record (see the class)
)
"""``new_record(offset, timestamp, key, value, headers, timestamp_type, magic)``: ``Record(...)`` with every field
given positionally, for decoders' loops."""


def entry_spans(data: bytes) -> Iterator[tuple[int, int, int]]:
    """Yield ``(start, end, magic)`` for each complete log entry in ``data``; stop quietly at a partial tail.

    Raises :class:`MalformedInput` for an entry whose size is negative or too small to hold a magic byte.
    """
    pos, total = 0, len(data)
    while total - pos >= ENTRY_HEADER_SIZE:
        (size,) = _SIZE.unpack_from(data, pos + 8)
        if size < MAGIC_POSITION - ENTRY_HEADER_SIZE + 1:
            raise MalformedInput(f"log entry at byte {pos} declares size {size}, too small for a magic byte")
        end = pos + ENTRY_HEADER_SIZE + size
        if end > total:
            return  # partial tail
        yield pos, end, data[pos + MAGIC_POSITION]
        pos = end


def decompression_limit(data: bytes) -> int:
    """The default bound on what the compressed entries of ``data`` may expand to, all together: 64 MiB, or 64 times
    the input when that is more (a bound per entry alone grows with the number of entries)."""
    return max(MAX_DECOMPRESSED_SIZE, EXPANSION_LIMIT * len(data))
