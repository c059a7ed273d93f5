"""Completion tracking: which spooled messages are done (delivered or discarded), and which segments may go.

Rules:
- Each tracked segment covers the dense sequence range [base, base + size) and keeps a bitmap of the messages done
  and a count of those pending. A sequence maps to its segment by bisect over the bases; marking it done is O(log S)
  for S segments (a handful), O(1) in the message count.
- Marking a message done twice, or a sequence no tracked segment holds (a message that was never spooled, or whose
  segment was already removed), changes nothing and is counted in ``unknown``: a double fate can never delete a
  segment that still holds undelivered messages.
- A segment is *removable* when it is sealed (no more appends: not the active segment) and nothing in it is pending.
  :meth:`Tracker.done_many` and :meth:`Tracker.seal` return the segments that just became removable; the caller
  unlinks their files. Records skipped as corrupt (or done before a clean close) in a replayed segment are never
  pending. :meth:`Tracker.done_run` marks a contiguous run its whole bitmap bytes at once (and the partial bytes at
  its ends a byte at a time), with the same outcome as :meth:`Tracker.done_many` over it.
- Pure: no I/O, no clock. The bitmaps are saved by the spool's done files (periodically and at a clean close).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator

__all__ = ["Segment", "Tracker"]

_FULL = b"\xff"  # a bitmap byte whose 8 sequences are all done


class Segment:
    """One segment's completion state."""

    __slots__ = (
        "awaiting_replay",
        "base",
        "created_ms",
        "done",
        "name",
        "nbytes",
        "pending",
        "saved",
        "sealed",
        "size",
    )

    def __init__(self, name: str, base: int, created_ms: int) -> None:
        self.name = name
        self.base = base
        self.created_ms = created_ms
        self.size = 0  # sequences [base, base + size) belong here
        self.pending = 0
        self.done = bytearray()  # bit i set: base + i is done (or was never a record)
        self.sealed = False
        self.nbytes = 0  # the file's size, kept by the spool
        self.awaiting_replay = False  # on disk from an earlier run, not read yet: its messages are all pending
        self.saved = 0  # messages done (size - pending) when its done file was last written, kept by the spool

    @property
    def removable(self) -> bool:
        return self.sealed and self.pending == 0


class Tracker:
    """The segments on disk, oldest first, with their pending counts. See the module rules."""

    def __init__(self) -> None:
        self._bases: list[int] = []
        self._segments: list[Segment] = []
        self.unknown = 0

    def __len__(self) -> int:
        return len(self._segments)

    def __iter__(self) -> Iterator[Segment]:
        return iter(self._segments)

    def add(self, name: str, base: int, created_ms: int) -> Segment:
        """Track a new segment starting at ``base``, above every tracked one."""
        if self._segments and base < self._bases[-1] + self._segments[-1].size:
            raise ValueError(f"segment base {base} overlaps the segment at {self._bases[-1]}")
        segment = Segment(name, base, created_ms)
        self._bases.append(base)
        self._segments.append(segment)
        return segment

    def extend(self, segment: Segment, sequences: Iterable[int], *, end: int = 0) -> None:
        """Record that ``sequences`` (increasing, from ``segment.base`` on) are pending in ``segment``; the gaps
        between them (corrupt records, or records already done), and up to ``end`` (exclusive), are marked done."""
        done = segment.done
        for seq in sequences:
            self._gap(segment, seq - segment.base)
            segment.size += 1
            segment.pending += 1
        if end > segment.base + segment.size:
            self._gap(segment, end - segment.base - 1)
            segment.size += 1
            done[segment.size - 1 >> 3] |= 1 << (segment.size - 1 & 7)

    @staticmethod
    def _gap(segment: Segment, index: int) -> None:
        """Mark [size, index) done and make room for ``index``: the next record is at ``index``."""
        if index < segment.size:
            raise ValueError(f"sequence {segment.base + index} is not above the segment's last one")
        done = segment.done
        need = (index >> 3) + 1 - len(done)
        if need > 0:
            done.extend(bytes(need))
        for gap in range(segment.size, index):  # never a record, or done already: nothing to wait for
            done[gap >> 3] |= 1 << (gap & 7)
        segment.size = index

    def append_run(self, segment: Segment, first: int, count: int) -> None:
        """``count`` new pending messages with sequences ``first`` … (``first`` = the segment's next sequence)."""
        if first != segment.base + segment.size:
            raise ValueError(f"sequence {first} does not follow the segment's last one")
        segment.size += count
        need = ((segment.size + 7) >> 3) - len(segment.done)
        if need > 0:
            segment.done.extend(bytes(need))
        segment.pending += count

    def done_many(self, sequences: Iterable[int]) -> list[Segment]:
        """Mark messages done; the segments that became removable (and are no longer tracked)."""
        bases = self._bases
        segments = self._segments
        touched: list[Segment] = []
        segment = None
        low = high = 0
        for seq in sequences:
            if not low <= seq < high:
                i = bisect_right(bases, seq) - 1
                if i < 0:
                    self.unknown += 1
                    continue
                segment = segments[i]
                low = segment.base
                high = low + segment.size
                if not low <= seq < high:
                    self.unknown += 1
                    continue
            assert segment is not None
            index = seq - low
            bit = 1 << (index & 7)
            byte = segment.done[index >> 3]
            if byte & bit:
                self.unknown += 1
                continue
            segment.done[index >> 3] = byte | bit
            segment.pending -= 1
            if segment.pending == 0 and segment.sealed:
                touched.append(segment)
        return self._drop([s for s in touched if s.removable])

    def done_run(self, first: int, count: int) -> list[Segment]:
        """Mark ``count`` consecutive sequences from ``first`` done, like :meth:`done_many`, whole bytes at once."""
        bases = self._bases
        touched: list[Segment] = []
        end = first + count
        seq = first
        while seq < end:
            i = bisect_right(bases, seq) - 1
            segment = self._segments[i] if i >= 0 else None
            if segment is None or seq >= segment.base + segment.size:  # not tracked: up to the next segment
                stop = min(end, bases[i + 1] if i + 1 < len(bases) else end)
                self.unknown += stop - seq
                seq = stop
                continue
            stop = min(end, segment.base + segment.size)
            done = segment.done
            newly = 0
            index, last = seq - segment.base, stop - segment.base
            while index < last:
                if not index & 7 and last - index >= 8:  # whole bytes: counted and set in one step each
                    low, high = index >> 3, last >> 3
                    newly += (high - low) * 8 - int.from_bytes(done[low:high], "big").bit_count()
                    done[low:high] = _FULL * (high - low)
                    index = high << 3
                    continue
                upto = min(last, (index | 7) + 1)  # to the end of this byte, or of the run
                mask = ((1 << (upto - index)) - 1) << (index & 7)
                old = done[index >> 3]
                newly += (mask & ~old).bit_count()
                done[index >> 3] = old | mask
                index = upto
            self.unknown += (stop - seq) - newly
            segment.pending -= newly
            if newly and segment.pending == 0 and segment.sealed:
                touched.append(segment)
            seq = stop
        return self._drop(touched)

    def seal(self, segment: Segment) -> list[Segment]:
        """No more appends to ``segment``; if nothing in it is pending, it is returned (and no longer tracked)."""
        segment.sealed = True
        return self._drop([segment] if segment.removable else [])

    def forget(self, segment: Segment) -> None:
        """Stop tracking ``segment`` without it being done (a segment left on disk unread)."""
        self._drop([segment])

    def pending(self) -> int:
        return sum(s.pending for s in self._segments)

    def find(self, seq: int) -> Segment | None:
        """The tracked segment that holds ``seq``, or None."""
        i = bisect_right(self._bases, seq) - 1
        if i < 0:
            return None
        segment = self._segments[i]
        return segment if seq < segment.base + segment.size else None

    def oldest_pending(self) -> Segment | None:
        """The oldest segment that still holds a pending message."""
        return next((s for s in self._segments if s.pending or s.awaiting_replay), None)

    def _drop(self, gone: list[Segment]) -> list[Segment]:
        for segment in gone:
            i = self._segments.index(segment)
            del self._segments[i]
            del self._bases[i]
        return gone
