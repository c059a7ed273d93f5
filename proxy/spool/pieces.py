"""Cutting a burst's records where segments roll (pure): the spool writes each piece with one ``write``, rolling to a
new segment first where a piece says so.

Rules: a segment holding records takes no record that would take it past ``segment_bytes``; an empty one (just its
header) takes at least one, so only a single record larger than ``segment_bytes`` makes a larger segment.
"""

from __future__ import annotations

import struct

from .format import HEADER_SIZE

__all__ = ["Piece", "cut_burst"]

Piece = tuple[int, int, int, bool]  # start, end (bytes of the burst), records, roll to a new segment first
_LENGTH = struct.Struct(">I")  # a record's length field


def cut_burst(data: bytes, n: int, active: int | None, segment_bytes: int) -> list[Piece]:
    """``data`` (``n`` whole records) cut where segments roll; ``active``: the bytes of the segment being written
    (None: there is none)."""
    if (active if active is not None else HEADER_SIZE) + len(data) <= segment_bytes:  # the common case: it fits
        return [(0, len(data), n, active is None)]
    pieces: list[Piece] = []
    used = active
    start = pos = count = 0
    roll = used is None
    unpack = _LENGTH.unpack_from
    while pos < len(data):
        size = 8 + unpack(data, pos)[0]
        if used is None or (used > HEADER_SIZE and used + size > segment_bytes):
            if count:
                pieces.append((start, pos, count, roll))
            start, count, roll, used = pos, 0, True, HEADER_SIZE
        used += size
        pos += size
        count += 1
    pieces.append((start, pos, count, roll))
    return pieces
