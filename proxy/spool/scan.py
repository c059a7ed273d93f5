"""Reading one segment's bytes back: valid records in order, corrupt regions skipped, a torn tail found.

Rules (docs/spool.md "Recovery" is the prose version):
- :func:`scan_segment` is pure and never raises for bad bytes: any input gives a :class:`SegmentScan`.
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
  segment it is a corrupt tail counting 1 ("at least one"). A frame that runs exactly to the end of the data with a
  bad CRC is a corrupt record (counted), not a torn tail.
- A last segment shorter than its header (a crash while creating it) has ``truncate_at`` 0: it holds nothing.
- Cost: linear in the segment's size, plus the resync search, which checks a few bytes per position and a CRC only
  where the length and sequence are plausible.
"""

from __future__ import annotations

import struct
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

__all__ = ["Corrupt", "SegmentScan", "scan_segment"]

_LENGTH = struct.Struct(">I")
_PROBE = struct.Struct(">IIQ")  # length, CRC, sequence: the first 16 bytes of a frame
MIN_FRAME = FRAME_OVERHEAD + 1  # the smallest record: a one-byte topic, no key, an empty value


class Corrupt(NamedTuple):
    """A skipped region at ``offset`` holding ``count`` messages that cannot be read."""

    offset: int
    count: int
    detail: str


class SegmentScan(NamedTuple):
    base_sequence: int
    created_ms: int | None  # None when the header is not valid
    records: list[SpoolRecord]
    corrupt: list[Corrupt]
    truncate_at: int | None  # a torn tail starts here (the last segment only)
    header_ok: bool
    unreadable: str | None  # why the whole segment cannot be read (a newer format version)


def _resync(data: bytes | memoryview, bad: int, last_seq: int) -> SpoolRecord | None:
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


def scan_segment(data: bytes | memoryview, *, name_base: int, last: bool) -> SegmentScan:
    """Every readable record of a segment file's contents ``data`` (see the module rules)."""
    header = parse_header(data)
    if header is None:
        version = header_version(data)
        if version is not None:  # valid CRC and magic: a format this bruce does not know
            why = f"format version {version}" if version != FORMAT_VERSION else "unknown header flags"
            return SegmentScan(name_base, None, [], [], None, False, f"{why} (this bruce reads version 1)")
        if len(data) < HEADER_SIZE and last:
            return SegmentScan(name_base, None, [], [], 0, False, None)
    elif header.base_sequence != name_base:  # the name orders the segments: a header that disagrees is damaged
        header = None
    base = name_base
    records: list[SpoolRecord] = []
    corrupt: list[Corrupt] = []
    truncate_at = None
    last_seq = base - 1
    pos = HEADER_SIZE
    end = len(data)
    while pos < end:
        found: SpoolRecord | FrameError = decode_frame(data, pos)
        if isinstance(found, SpoolRecord) and found.sequence > last_seq:
            records.append(found)
            last_seq = found.sequence
            pos += found.size
            continue
        detail = found.detail if isinstance(found, FrameError) else f"sequence {found.sequence} not above {last_seq}"
        if isinstance(found, FrameError) and not found.short and pos + 8 + _LENGTH.unpack_from(data, pos)[0] == end:
            corrupt.append(Corrupt(pos, 1, detail))  # a whole last record, damaged in place
            break
        following = _resync(data, pos, last_seq)
        if following is not None:
            corrupt.append(Corrupt(pos, following.sequence - last_seq - 1, detail))
            pos = following.offset
        elif last:
            truncate_at = pos
            break
        else:
            corrupt.append(Corrupt(pos, 1, detail + " (and nothing readable after it)"))
            break
    return SegmentScan(base, header.created_ms if header else None, records, corrupt, truncate_at, bool(header), None)
