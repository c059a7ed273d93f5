"""Recovery at open: what earlier runs left in the spool directory, checked against the manifest, replayed
(docs/spool.md "Recovery" and "The manifest"). :class:`Recovery` is owned by the :class:`~.spool.Spool`, which hands
it the tracker and manifest they share, how to delete segments that became fully done, and where losses go.

Rules:
- :meth:`Recovery.load` lists the segments in base order, compares them with the manifest (:mod:`.manifest`: a
  listed segment whose file is gone is *missing*), loads the done files, reads the newest segment at once (a torn
  tail is truncated there) and continues the sequence after the highest one ever used — never the sequences of a
  lost record or segment again. It saves the manifest (synced).
- :meth:`Recovery.replay` reports the missing segments first (their sequences less those their done file marked
  done: "at least one" when their end is not known), then reads one segment at a time and hands its records out.
  Every loss is counted in ``corrupt``, logged (ERROR, file, offset, sequences) and given to the replay's
  ``on_corrupt`` (the daemon discards them as SPOOL_CORRUPT): damaged regions, a segment that ends before the
  manifest's end for it (cut short), the newest segment ending before its tail mark's end (:mod:`.tail`: cut short
  or damaged at its end, every message counted), a torn write after the mark (at least one message: one read from
  the socket whose write the crash cut). A count leaves out what a done file marks done and what ``skip`` says was
  settled (the batch journal's verdict): it is exactly the messages lost. A damaged segment header is logged
  (WARNING) and counted in ``bad_headers``; its records are read anyway.
- :meth:`Recovery.peek` reads the records of some sequences before replay, and which of them cannot be read.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from .donefile import DONE_SUFFIX, is_done, load_done, remove_orphans
from .format import HEADER_SIZE, SpoolRecord, parse_header
from .manifest import Lost, Manifest, missing_segments
from .scan import Corrupt, TornTail, read_head, walk_segment
from .settings import SpoolConfig
from .tail import Tail
from .tracker import Segment, Tracker

__all__ = ["SEGMENT_NAME", "Recovery"]

log = logging.getLogger("bruce.spool")

SEGMENT_NAME = re.compile(r"^(\d{20})\.seg$")


Skip = Callable[[int], bool]  # a sequence settled elsewhere (delivered): not lost
Report = Callable[[Path, Corrupt], None]  # a loss found while replaying: (segment file, the region lost)


def _not_done(bitmap: bytes, base: int, first: int, end: int, skip: Skip | None = None) -> int:
    """How many of the sequences [first, end) of the segment at ``base`` are neither marked done by its done bitmap
    nor ``skip``ped."""
    return sum(not is_done(bitmap, seq - base) and not (skip and skip(seq)) for seq in range(first, end))


class Recovery:
    """What earlier runs left in a spool's directory: found by :meth:`load`, handed out once by :meth:`replay` (see
    the module rules)."""

    def __init__(
        self,
        config: SpoolConfig,
        tracker: Tracker,
        manifest: Manifest,
        *,
        unlink: Callable[[list[Segment]], None],
    ) -> None:
        self.directory = Path(config.directory)
        self.config = config
        self._tracker = tracker
        self._manifest = manifest
        self._unlink = unlink  # the spool's: deletes segments that became fully done
        self._missing: list[Lost] = []  # listed segments found gone, reported by replay()
        self._torn: Corrupt | None = None  # the newest segment's torn tail, cut at load, reported by replay()
        self._to_replay: list[Segment] = []
        self._done_files: dict[str, bytes] = {}  # segment name -> done bitmap from the last clean close
        self._last_name: str | None = None  # the newest segment found (the only one that may be torn)
        self._tail: Tail | None = None  # the tail mark the last run left
        self.next_sequence = 0  # after the highest sequence earlier runs used
        self.bytes = 0  # the size of the segment files found
        self.left_in_place = 0  # segment files that could not be read: not replayed, not tracked
        self.replayed = 0
        self.skipped_done = 0
        self.bad_headers = 0

    def load(self, tail: Tail | None = None) -> None:
        """What earlier runs left (see the module rules); ``tail``: the tail mark they left."""
        self._tail = tail
        names = os.listdir(self.directory)
        found = sorted((int(m.group(1)), m.group(0)) for m in map(SEGMENT_NAME.match, names) if m)
        listed = self._manifest.load()
        if listed is None and found:
            log.warning("spool: %s has no manifest (an older bruce?): missing segments cannot be found", self.directory)
        self._missing = [
            lost._replace(end=tail.end) if lost.end is None and tail is not None and tail.base == lost.first else lost
            for lost in missing_segments(listed or {}, [base for base, _ in found])
        ]  # the segment being written has no end in the manifest: the tail mark knows it
        for lost in self._missing:
            self.next_sequence = max(self.next_sequence, lost.first + 1, lost.end or 0)
            if lost.name + DONE_SUFFIX in names:  # what the lost segment had delivered is not lost
                self._done_files[lost.name] = load_done(self.directory, lost.name, lost.first, None, gone=True)
        remove_orphans(self.directory, names, {name for _, name in found})
        for base, name in found:
            path = self.directory / name
            with open(path, "rb") as f:
                head = f.read(HEADER_SIZE)
                nbytes = os.fstat(f.fileno()).st_size
            header = parse_header(head)
            segment = self._tracker.add(name, base, header.created_ms if header else int(os.path.getmtime(path) * 1e3))
            if name + DONE_SUFFIX in names:
                self._done_files[name] = load_done(self.directory, name, base, header)
            segment.nbytes = nbytes
            self.bytes += nbytes
            segment.awaiting_replay = True
            self._to_replay.append(segment)
            end = (listed or {}).get(base)
            self._manifest.segments[base] = end
            self.next_sequence = max(self.next_sequence, base + 1, end or 0)
        if found:
            self._last_name = found[-1][1]
            newest = self._to_replay[-1]
            end = self._check_newest(newest)
            self.next_sequence = max(self.next_sequence, end)
            if self._manifest.segments[newest.base] is None:  # it was being written: its records say where it ends
                self._manifest.segments[newest.base] = end
        self._manifest.save(os.fdatasync)

    def _check_newest(self, segment: Segment) -> int:
        """Truncate the newest segment's torn tail (reported at replay); the sequence after its last record (its base
        when it holds none) or, when the tail mark says more were written whole, after those: where the sequence
        continues (a lost sequence is never given again)."""
        path = self.directory / segment.name
        data = path.read_bytes()
        end = segment.base
        if read_head(data, name_base=segment.base).unreadable:
            return end  # reported by replay
        torn = None
        for item in walk_segment(data, name_base=segment.base, last=True):
            if isinstance(item, SpoolRecord):
                end = item.sequence + 1
            elif isinstance(item, TornTail) and item.offset < len(data):
                torn = item.offset
        if torn is not None:
            os.truncate(path, torn)
            self.bytes -= segment.nbytes - torn
            segment.nbytes = torn
        mark = self._tail
        if mark is not None and mark.base == segment.base and mark.end > end:
            at = len(data) if torn is None else torn
            if len(data) < mark.size:
                what = f"cut short: {len(data)} bytes where {mark.size} were written"
            else:
                what = f"damaged from offset {at} (its last whole burst ended at {mark.size})"
            self._torn = Corrupt(at, 0, what)  # counted at replay from the end the mark gives
            return mark.end
        if torn is not None and torn >= HEADER_SIZE:  # else a crash while creating it: nothing was written to it
            self._torn = Corrupt(torn, 1, f"a torn write ({len(data) - torn} bytes cut: a crash while writing)")
        return end

    def replay(self, report: Report, skip: Skip | None = None) -> Iterator[list[SpoolRecord]]:
        """Every record left by earlier runs, oldest first, in bursts of up to ``replay_burst``, one segment in
        memory at a time. Each one is pending until :meth:`done_many` names it. Missing segments and corrupt
        records are counted (less what ``skip`` says was settled) and given to ``report`` (the spool's); records a
        done file marks done are skipped."""
        for lost in self._missing:
            bitmap = self._done_files.pop(lost.name, b"")
            count = 1 if lost.end is None else _not_done(bitmap, lost.first, lost.first, lost.end, skip)
            span = f"{lost.first}-{lost.end - 1}" if lost.end is not None else f"{lost.first} on"
            report(self.directory / lost.name, Corrupt(0, count, f"the segment is missing (sequences {span})"))
        self._missing = []
        while self._to_replay:
            segment = self._to_replay.pop(0)
            yield from self._replay_segment(segment, skip, report)

    def _replay_segment(self, segment: Segment, skip: Skip | None, report: Report) -> Iterator[list[SpoolRecord]]:
        path = self.directory / segment.name
        why: str | None
        try:
            data = path.read_bytes()
        except OSError as e:
            data, why = b"", str(e)
            head = None
        else:
            head = read_head(data, name_base=segment.base)
            why = head.unreadable
        if why:
            log.error("spool: %s cannot be read (%s); it is left in place and not replayed", path, why)
            self.left_in_place += 1
            self._tracker.forget(segment)
            return
        if head is not None and not head.header_ok:
            self.bad_headers += 1
            log.warning("spool: %s has a damaged header; its records are read anyway (from byte 28)", path)
        bitmap = self._done_files.pop(segment.name, b"")
        burst = self.config.replay_burst
        chunk: list[SpoolRecord] = []
        end = segment.base
        tail: Corrupt | None = None  # the last region skipped, reported once a record follows it (else: the tail)
        for item in walk_segment(data, name_base=segment.base, last=segment.name == self._last_name):
            if isinstance(item, SpoolRecord):
                if tail is not None:
                    report(path, tail)
                    tail = None
                end = item.sequence + 1
                if bitmap and is_done(bitmap, item.sequence - segment.base):
                    self.skipped_done += 1  # delivered before the last clean close
                    continue
                if len(chunk) == burst:  # handed out only once more follows: the last chunk comes after the seal
                    yield self._hand_out(segment, chunk)
                    chunk = []
                chunk.append(item)
            elif isinstance(item, Corrupt):
                if tail is not None:
                    report(path, tail)
                if item.first >= 0:
                    item = item._replace(
                        count=_not_done(bitmap, segment.base, item.first, item.first + item.count, skip)
                    )
                tail = item
        if segment.name == self._last_name and self._torn is not None:
            tail, self._torn = self._torn, None
        listed = self._manifest.segments.get(segment.base)
        if listed is not None and listed > end:  # records the manifest says it held are gone (cut or damaged)
            count = _not_done(bitmap, segment.base, end, listed, skip)
            detail = f"{tail.detail}; " if tail else ""
            tail = Corrupt(tail.offset if tail else len(data), count, f"{detail}it ends at {end - 1}, not {listed - 1}")
            end = listed
        if tail is not None:
            report(path, tail)
        self._tracker.extend(segment, (r.sequence for r in chunk), end=end)
        segment.awaiting_replay = False
        self._unlink(self._tracker.seal(segment))
        if chunk:
            self.replayed += len(chunk)
            yield chunk

    def peek(self, wanted: set[int]) -> tuple[dict[int, SpoolRecord], set[int]]:
        """The records of ``wanted`` sequences still to be replayed and not marked done by a done file, read without
        changing anything (the batch journal's settling, before :meth:`replay`); and the ``wanted`` sequences, not
        marked done, whose records are lost (a missing segment, a damaged region, a cut end)."""
        found: dict[int, SpoolRecord] = {}
        lost: set[int] = set()
        for gone in self._missing:
            bitmap = self._done_files.get(gone.name, b"")
            lost |= _undone(wanted, bitmap, gone.first, gone.first, gone.end)
        bases = [segment.base for segment in self._to_replay]
        for i, segment in enumerate(self._to_replay):
            end = bases[i + 1] if i + 1 < len(bases) else self.next_sequence
            if not any(segment.base <= s < end for s in wanted):
                continue
            try:
                data = (self.directory / segment.name).read_bytes()
            except OSError:
                continue
            bitmap = self._done_files.get(segment.name, b"")
            for item in walk_segment(data, name_base=segment.base, last=segment.name == self._last_name):
                if (
                    isinstance(item, SpoolRecord)
                    and item.sequence in wanted
                    and not (bitmap and is_done(bitmap, item.sequence - segment.base))
                ):
                    found[item.sequence] = item
            lost |= _undone(wanted, bitmap, segment.base, segment.base, end) - found.keys()
        return found, lost

    def _hand_out(self, segment: Segment, chunk: list[SpoolRecord]) -> list[SpoolRecord]:
        self._tracker.extend(segment, (r.sequence for r in chunk))
        self.replayed += len(chunk)
        return chunk


def _undone(wanted: Iterable[int], bitmap: bytes, base: int, first: int, end: int | None) -> set[int]:
    """The ``wanted`` sequences in [first, end) (end None: no end) that ``bitmap`` (of the segment at ``base``) does
    not mark done."""
    return {s for s in wanted if first <= s and (end is None or s < end) and not is_done(bitmap, s - base)}
