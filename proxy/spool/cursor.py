"""Reading back the records the daemon holds on disk only: the spool's cursor (docs/spool.md, "Held on disk only").

Rules:
- The cursor covers the sequences ``[start, spool.next_sequence)``: records appended in this run that the daemon
  keeps no copy of. :meth:`Cursor.hold` starts it at a record just appended when it is caught up; every later append
  is then behind it by itself (the caller sends later input to disk too, so arrival order holds). It is caught up
  (``held`` = 0, ``start`` None) once every record was taken.
- :meth:`Cursor.peek` gives the record at ``start``, reading the segment files — sealed or the active one, which the
  spool only ever appends whole bursts to — with ``pread``, :data:`CHUNK` bytes at a time (a larger record: its own
  size); :meth:`Cursor.take` moves past it. At most one chunk's records are decoded ahead: bounded memory.
- Damage (a record that does not decode, a read error): the sequences up to the next readable record (found as at
  recovery, :func:`~.scan.resync`) or to the segment's end are *lost*: logged with file and offset, counted in the
  spool's ``corrupt``, marked done, and reported to :meth:`Cursor.peek`'s ``on_lost(count)`` (the daemon discards
  them as SPOOL_CORRUPT) when the cursor reaches them, so each has exactly one fate.
- For the event loop's thread, like the spool; one descriptor open while behind, closed when caught up.
"""

from __future__ import annotations

import logging
import os
import struct
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple, Protocol

from .format import HEADER_SIZE, FrameError, SpoolRecord, decode_frame
from .scan import resync
from .tracker import Segment

__all__ = ["CHUNK", "Cursor"]

log = logging.getLogger("bruce.spool")

CHUNK = 64 * 1024  # bytes read at a time (~430 records of 100-byte values)
_LENGTH = struct.Struct(">I")


class _Lost(NamedTuple):
    first: int
    count: int  # type: ignore[assignment]  # the field shadows tuple.count, which nothing here calls


class SpoolView(Protocol):
    """What the cursor reads and updates of the spool that owns it (:class:`~.spool.Spool`)."""

    directory: Path
    next_sequence: int
    corrupt: int
    last_burst: tuple[int, int]  # the last burst appended: its first sequence and its offset in its segment

    def segment_of(self, seq: int) -> Segment | None: ...

    def done_run(self, first: int, count: int) -> None: ...


class Cursor:
    """See the module rules. Owned by its :class:`~.spool.Spool` (``spool.cursor``)."""

    def __init__(self, spool: SpoolView, *, on_behind: Callable[[], None] | None = None) -> None:
        """``on_behind`` is called when the cursor stops being caught up (whoever reads it back wakes)."""
        self._spool = spool
        self.start: int | None = None  # the next sequence to take; None: caught up
        self.held_total = 0  # records ever held on disk only (a counter)
        self.on_behind = on_behind
        self._segment: Segment | None = None
        self._fd: int | None = None
        self._offset = 0  # file offset of the next frame to decode in _segment
        self._next = 0  # the sequence expected at _offset
        self._ahead: deque[SpoolRecord | _Lost] = deque()

    @property
    def held(self) -> int:
        """Records held on disk only: appended, not yet taken."""
        return 0 if self.start is None else self._spool.next_sequence - self.start

    def hold(self, seq: int) -> None:
        """The record ``seq``, just appended, is held on disk only (and, when the cursor is behind already, it is one
        of those it covers)."""
        self.held_total += 1
        if self.start is not None:
            return
        self.start = seq
        if self.on_behind is not None:
            self.on_behind()
        first, offset = self._spool.last_burst
        segment = self._spool.segment_of(seq)
        if segment is None:  # cannot happen for a record just appended
            self._lose_untracked()
            return
        if not segment.base <= first <= seq:
            first, offset = segment.base, HEADER_SIZE
        self._open(segment, offset, first)

    def peek(self, on_lost: Callable[[int], None] | None = None) -> SpoolRecord | None:
        """The next record held on disk only, or None when caught up; lost records met on the way are settled and
        their count given to ``on_lost``."""
        while self.start is not None:
            if not self._ahead:
                self._read()
                continue
            item = self._ahead[0]
            if isinstance(item, SpoolRecord):
                return item
            self._ahead.popleft()
            self._moved(item.first + item.count)
            if on_lost is not None:
                on_lost(item.count)
        return None

    def take(self) -> None:
        """Move past the record :meth:`peek` gave."""
        record = self._ahead.popleft()
        assert isinstance(record, SpoolRecord)
        self._moved(record.sequence + 1)

    def leave(self) -> int:
        """At a stop: stop reading back; the records held on disk only, which stay pending in the spool (the next
        start replays them)."""
        held = self.held
        self.start = None
        self.close()
        return held

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._segment = None
        self._ahead.clear()

    # ------------------------------------------------------------------------------------------------ reading

    def _moved(self, start: int) -> None:
        self.start = start
        if start >= self._spool.next_sequence:
            self.start = None
            self.close()

    def _open(self, segment: Segment, offset: int, first: int) -> None:
        self.close()
        self._segment, self._offset, self._next = segment, offset, first
        try:
            self._fd = os.open(self._spool.directory / segment.name, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as e:
            self._lose_rest(f"cannot be opened ({e})")

    def _read(self) -> None:
        """Decode the next chunk of the current segment (or go on to the next segment) into ``_ahead``."""
        assert self.start is not None
        segment = self._segment
        if segment is None or self._offset >= segment.nbytes or self._next >= segment.base + segment.size:
            following = self._spool.segment_of(max(self.start, self._next))
            if following is segment and segment is not None:  # the file ends before its records do
                self._lose_rest("ends early")
                return
            if following is None:  # cannot happen: every segment holding a held record is pending, so tracked
                self._lose_untracked()
                return
            self._open(following, HEADER_SIZE, following.base)
            return
        assert self._fd is not None
        try:
            data = os.pread(self._fd, min(CHUNK, segment.nbytes - self._offset), self._offset)
            head = decode_frame(data, 0) if len(data) >= 8 else None
            if isinstance(head, FrameError) and head.short:  # one record larger than a chunk
                need = 8 + _LENGTH.unpack_from(data)[0]
                if need <= segment.nbytes - self._offset:
                    data = os.pread(self._fd, need, self._offset)
        except OSError as e:
            self._lose_rest(f"cannot be read ({e})")
            return
        pos = 0
        while pos < len(data):
            found = decode_frame(data, pos)
            if isinstance(found, SpoolRecord) and found.sequence == self._next:
                if found.sequence >= self.start:
                    self._ahead.append(found)
                self._next += 1
                pos += found.size
            elif isinstance(found, FrameError) and found.short and pos and self._offset + len(data) < segment.nbytes:
                break  # cut by the chunk: read again from here
            else:
                self._offset += pos
                self._damaged(found.detail if not isinstance(found, SpoolRecord) else "sequence out of order")
                return
        self._offset += pos

    def _damaged(self, detail: str) -> None:
        """The frame at ``_offset`` is not the expected record: skip to the next readable one (module rules)."""
        segment, fd = self._segment, self._fd
        assert segment is not None and fd is not None
        try:
            rest = os.pread(fd, segment.nbytes - self._offset, self._offset)
        except OSError as e:
            self._lose_rest(f"cannot be read ({e})")
            return
        following = resync(rest, 0, self._next - 1)
        if following is None:
            self._lose_rest(f"damaged at offset {self._offset} ({detail})")
            return
        self._lose(following.sequence, f"damaged at offset {self._offset} ({detail})")
        self._offset += following.offset

    def _lose_untracked(self) -> None:
        """No tracked segment holds the next record: every record held is lost (a bug; never silently)."""
        assert self.start is not None
        count = self._spool.next_sequence - self.start
        self._spool.corrupt += count
        log.error("spool: no segment holds sequence %d; %d message(s) held on disk only lost", self.start, count)
        self._ahead.append(_Lost(self.start, count))

    def _lose_rest(self, why: str) -> None:
        segment = self._segment
        assert segment is not None
        self._lose(segment.base + segment.size, why)
        self._offset = segment.nbytes

    def _lose(self, upto: int, why: str) -> None:
        """The sequences from ``_next`` (or ``start``) to ``upto`` cannot be read: lost (module rules)."""
        assert self.start is not None and self._segment is not None
        first = max(self._next, self.start)
        self._next = upto
        if upto <= first:
            return
        spool = self._spool
        spool.corrupt += upto - first
        log.error(
            "spool: %s %s; %d message(s) held on disk only lost, discarded as SPOOL_CORRUPT",
            spool.directory / self._segment.name,
            why,
            upto - first,
        )
        spool.done_run(first, upto - first)
        self._ahead.append(_Lost(first, upto - first))
