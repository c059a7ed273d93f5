"""Reading one segment's bytes back: valid records in order, corrupt regions skipped, a torn tail found.

Rules (docs/spool.md "Recovery" is the prose version):
- :func:`walk_segment` (records and skipped regions one at a time, for replay) and :func:`scan_segment` (all of
  them collected) are pure and never raise for bad bytes.
- The base sequence is the one in the file name (which orders the segments). A header that is not valid (short, bad
  CRC, unknown magic, another base sequence) does not stop the scan: records are read from byte 28 on. A header with
  a valid CRC and magic but another format version (or unknown flags) makes the segment *unreadable* (``unreadable``
  set, no records): it is left on disk for a newer bruce.
- Records must carry increasing sequences. At a frame that does not decode (CRC, fields, or a sequence not above the
  previous one) at offset X, the scan resyncs: it looks for the next valid frame at X + 1, X + 2, … whose sequence is
  above the last good one and no further above it than the skipped bytes could hold. Found at Y: the region [X, Y)
  is one :class:`Corrupt` entry counting ``seq(Y) - last good - 1`` messages (sequences are dense within a segment,
  so the count is exact; 0 when the region held no record, e.g. bytes inserted between records). Not found: in the
  *last* segment that is a torn tail (a crash mid-write), ``truncate_at`` = X and nothing is counted; in any other
  segment it is a corrupt tail counting 1 ("at least one"; recovery counts it exactly where the manifest or the tail
  mark knows where the segment ended). A frame that runs exactly to the end of the data with a
  bad CRC and no valid frame inside it is a corrupt record (counted), not a torn tail.
- A last segment shorter than its header (a crash while creating it) has ``truncate_at`` 0: it holds nothing.
- Cost: linear in the segment's size, plus the resync search, which checks a few bytes per position and a CRC only
  where the length and sequence are plausible.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

from .format import (
    FORMAT_VERSION,
    FRAME_OVERHEAD,
    HEADER_SIZE,
    FrameError,
    SpoolRecord,
    decode_frame,
    header_version,
    parse_header,
)

__all__ = [
    "Corrupt",
    "SegmentHead",
    "SegmentScan",
    "TornTail",
    "read_head",
    "resync",
    "scan_segment",
    "walk_segment",
]

_LENGTH = struct.Struct(">I")
_PROBE = struct.Struct(">IIQ")  # length, CRC, sequence: the first 16 bytes of a frame
MIN_FRAME = FRAME_OVERHEAD + 1  # the smallest record: a one-byte topic, no key, an empty value


class Corrupt(NamedTuple):
    """A skipped region at ``offset`` holding ``count`` messages that cannot be read, from sequence ``first`` (-1:
    not known)."""

    offset: int
    count: int  # type: ignore[assignment]  # the field shadows tuple.count, which nothing here calls
    detail: str
    first: int = -1


class TornTail(NamedTuple):
    """The newest segment's bytes from ``offset`` on are a torn write: truncate the file there."""

    offset: int


class SegmentHead(NamedTuple):
    """What the header says: the base sequence (the file name's), and whether the records can be read."""

    base_sequence: int
    created_ms: int | None  # None when the header is not valid
    header_ok: bool
    unreadable: str | None  # why the whole segment cannot be read (a newer format version)


class SegmentScan(NamedTuple):
    base_sequence: int
    created_ms: int | None  # None when the header is not valid
    records: list[SpoolRecord]
    corrupt: list[Corrupt]
    truncate_at: int | None  # a torn tail starts here (the last segment only)
    header_ok: bool
    unreadable: str | None  # why the whole segment cannot be read (a newer format version)


def resync(data: bytes | memoryview, bad: int, last_seq: int) -> SpoolRecord | None:
    """The first valid frame after ``bad`` whose sequence fits the skipped bytes, or None."""
    end = len(data)
    probe = _PROBE.unpack_from
    for pos in range(bad + 1, end - _PROBE.size + 1):
        length, _, seq = probe(data, pos)
        if seq <= last_seq or length > end - pos - 8 or seq - last_seq - 1 > (pos - bad) // MIN_FRAME:
            continue
        found = decode_frame(data, pos)
        if isinstance(found, SpoolRecord):
            return found
    return None


def read_head(data: bytes | memoryview, *, name_base: int) -> SegmentHead:
    """The segment's header checked against its name (see the module rules)."""
    header = parse_header(data)
    if header is None:
        version = header_version(data)
        if version is not None:  # valid CRC and magic: a format this bruce does not know
            why = f"format version {version}" if version != FORMAT_VERSION else "unknown header flags"
            return SegmentHead(name_base, None, False, f"{why} (this bruce reads version 1)")
    elif header.base_sequence != name_base:  # the name orders the segments: a header that disagrees is damaged
        header = None
    return SegmentHead(name_base, header.created_ms if header else None, bool(header), None)


def walk_segment(data: bytes | memoryview, *, name_base: int, last: bool) -> Iterator[SpoolRecord | Corrupt | TornTail]:
    """The records of a readable segment in order, with the regions skipped (:class:`Corrupt`) where they are, and
    a final :class:`TornTail` if the newest segment ends in a torn write (see the module rules)."""
    end = len(data)
    if end < HEADER_SIZE:
        if last:
            yield TornTail(0)
        return
    last_seq = name_base - 1
    pos = HEADER_SIZE
    while pos < end:
        found: SpoolRecord | FrameError = decode_frame(data, pos)
        if isinstance(found, SpoolRecord) and found.sequence > last_seq:
            yield found
            last_seq = found.sequence
            pos += found.size
            continue
        detail = found.detail if isinstance(found, FrameError) else f"sequence {found.sequence} not above {last_seq}"
        following = resync(data, pos, last_seq)
        if following is not None:
            yield Corrupt(pos, following.sequence - last_seq - 1, detail, last_seq + 1)
            pos = following.offset
        elif isinstance(found, FrameError) and not found.short and pos + 8 + _LENGTH.unpack_from(data, pos)[0] == end:
            yield Corrupt(pos, 1, detail, last_seq + 1)  # a whole last record, damaged in place
            return
        elif last:
            yield TornTail(pos)
            return
        else:
            yield Corrupt(pos, 1, detail + " (and nothing readable after it)")
            return


def scan_segment(data: bytes | memoryview, *, name_base: int, last: bool) -> SegmentScan:
    """Every readable record of a segment file's contents ``data``, collected (see the module rules)."""
    head = read_head(data, name_base=name_base)
    records: list[SpoolRecord] = []
    corrupt: list[Corrupt] = []
    truncate_at = None
    if not head.unreadable:
        for item in walk_segment(data, name_base=name_base, last=last):
            if isinstance(item, SpoolRecord):
                records.append(item)
            elif isinstance(item, Corrupt):
                corrupt.append(item)
            else:
                truncate_at = item.offset
    return SegmentScan(name_base, head.created_ms, records, corrupt, truncate_at, head.header_ok, head.unreadable)
