"""Reading the batch journal back at the next start (the files of :mod:`bruce.producer.idempotence.journal_records`).

Rules:
- :func:`read_journal` reads every file, oldest first, and returns each batch's latest SENT record with its FINISHED
  offset (None: none), per partition the highest offset known as acknowledged, and whether the journal vouches for
  itself (``complete``): files exist, none says OFF, and nothing below could have hidden a SENT record.
- A torn tail is told from damage by the header's extent: unreadable bytes after the extent's ``end`` are a write the
  process died in (its batch was not sent yet: ``sent`` had not returned) and cost nothing; unreadable bytes before
  it, a file shorter than it, a header whose CRC fails, a file of version 1 (no extent) are things the journal cannot
  vouch for. So are a file missing from the chain (numbers must follow each other, and a file whose header says
  :data:`~bruce.producer.idempotence.journal_records.NEXT` must have a successor) and a file in a format this bruce does
  not read (left in place, never deleted by this bruce).
- Damage in the middle does not end a file: at an unreadable frame the reader looks for the next valid one (its kind
  byte, a length that fits, its CRC-32C, a body that decodes) and goes on from there; the records after it count as
  usual (each carries its own CRC). The region skipped is counted in ``damaged``.
- One ERROR line per file it cannot vouch for names the file, what was found and ``cost`` (the owner's words for
  what it means: the daemon's replays reported as possible duplicates, the library's batches that may be lost); a
  file of version 1 gets a WARNING. ``problems`` keeps the findings.
- Bounded: one file in memory at a time; the search for the next valid frame looks at the positions holding a kind
  byte only and checks a CRC only where a length fits.
"""

from __future__ import annotations

import logging
import re
import struct
from pathlib import Path

from bruce.wire import crc32c

from .journal_records import (
    FRAME,
    HEADER_BYTES,
    NEXT,
    OFF,
    UNREADABLE_TOP,
    V1_HEADER_BYTES,
    VERSION,
    Extent,
    JournalEntry,
    JournalState,
    decode_finished,
    decode_gap,
    decode_sent,
    file_name,
    journal_files,
    parse_header,
)

__all__ = ["read_journal"]

log = logging.getLogger("bruce.journal")

_KIND = re.compile(rb"[SFXG]")


class _File:
    """One file's records, applied to the shared maps as they are read."""

    def __init__(self, number: int, data: bytes) -> None:
        self.number = number
        self.data = data
        self.top = -1
        self.found: list[str] = []  # what makes it unvouched, for its log line
        self.damaged = 0
        self.off = False
        self.gap_top = -1

    def frame(self, at: int) -> tuple[bytes, int] | None:
        """The body of a whole frame at ``at`` whose CRC matches, and the offset after it; None: not one."""
        data = self.data
        if at + FRAME.size > len(data):
            return None
        length, crc = FRAME.unpack_from(data, at)
        end = at + FRAME.size + length
        if not length or end > len(data):
            return None
        body = data[at + FRAME.size : end]
        return (body, end) if crc32c(body) == crc else None

    def resync(self, bad: int) -> int | None:
        """The offset of the next whole, valid frame after ``bad`` (see the module rules)."""
        for match in _KIND.finditer(self.data, bad + 1 + FRAME.size):
            at = match.start() - FRAME.size
            found = self.frame(at)
            if found is not None and _decodes(found[0]):
                return at
        return None

    def walk(self, start: int, latest: dict[int, JournalEntry], finished: dict[int, int]) -> int | None:
        """Apply every readable record from ``start``; returns where unreadable bytes begin that no valid frame
        follows (None: the file ends with a whole record)."""
        at = start
        while at < len(self.data):
            found = self.frame(at)
            if found is None:
                following = self.resync(at)
                if following is None:
                    return at
                self.damaged += 1
                self.found.append(f"offset {at}: {following - at} damaged bytes skipped")
                at = following
                continue
            body, end = found
            try:
                self.apply(body, latest, finished)
            except (struct.error, ValueError, UnicodeDecodeError) as e:
                self.damaged += 1
                self.found.append(f"offset {at}: a record that does not decode ({e})")
            at = end
        return None

    def apply(self, body: bytes, latest: dict[int, JournalEntry], finished: dict[int, int]) -> None:
        kind = body[:1]
        if kind == b"S":
            entry = decode_sent(body, self.number)
            latest[entry.batch_id] = entry
            if entry.runs:
                self.top = max(self.top, entry.runs[-1][0] + entry.runs[-1][1] - 1)
        elif kind == b"F":
            bid, offset = decode_finished(body)
            finished[bid] = offset
        elif kind == b"X":
            self.off = True
        elif kind == b"G":
            self.gap_top = max(self.gap_top, decode_gap(body))
        else:
            raise ValueError(f"unknown record kind {kind!r}")


def _decodes(body: bytes) -> bool:
    try:
        _File(0, b"").apply(body, {}, {})
    except (struct.error, ValueError, UnicodeDecodeError):
        return False
    return True


def read_journal(directory: Path, cost: str = "") -> JournalState:
    """The journal's state after a stop or a crash (see the module rules); ``cost`` ends each damaged file's log
    line."""
    state = JournalState()
    latest: dict[int, JournalEntry] = {}
    finished: dict[int, int] = {}
    listed = journal_files(directory)
    state.complete = bool(listed)
    said_next = False  # the file before said a newer one followed
    for i, (number, path) in enumerate(listed):
        state.next_file = number + 1
        if i and number != listed[i - 1][0] + 1:
            missing = f"{file_name(listed[i - 1][0] + 1)}" + (
                f" to {file_name(number - 1)}" if number - 1 > listed[i - 1][0] + 1 else ""
            )
            _problem(state, directory / missing, f"missing from the journal (deleted?), before {path.name}", cost)
        state.complete &= _read_file(state, number, path, latest, finished, cost)
        said_next = _said_next(path)
    if said_next:
        newest = listed[-1][0]
        _problem(state, directory / file_name(newest + 1), f"missing: {file_name(newest)} says it followed", cost)
        state.outstanding = None
    for bid, entry in latest.items():
        entry.finished = finished.get(bid)
        best = max(entry.known_offset, -1 if entry.finished is None else entry.finished)
        if best >= 0:
            state.acked[entry.tp] = max(state.acked.get(entry.tp, -1), best)
    state.next_id = max(latest, default=-1) + 1
    state.next_id = max(state.next_id, max(finished, default=-1) + 1)
    state.entries = sorted(latest.values(), key=lambda e: e.batch_id)
    return state


def _said_next(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            parsed = parse_header(f.read(HEADER_BYTES))
    except OSError:
        return False
    return parsed is not None and parsed[1] is not None and bool(parsed[1].state & NEXT)


def _read_file(
    state: JournalState,
    number: int,
    path: Path,
    latest: dict[int, JournalEntry],
    finished: dict[int, int],
    cost: str,
) -> bool:
    """Read one file into ``latest`` and ``finished``; False when it cannot be vouched for (or says OFF)."""
    state.outstanding = None  # until its header says
    try:
        data = path.read_bytes()
    except OSError as e:
        state.files.append((number, UNREADABLE_TOP))
        _problem(state, path, f"cannot be read ({e}); left in place", cost)
        return False
    parsed = parse_header(data)
    if parsed is None:  # empty: a crash while it was created, or cut to nothing — which one cannot be told
        state.files.append((number, -1))
        _problem(state, path, "empty" if not data else "not a journal file (no header)", cost)
        return False
    version, extent = parsed
    state.outstanding = extent.outstanding if extent is not None else None  # the newest file's, in the end
    if version not in (1, VERSION):
        state.files.append((number, UNREADABLE_TOP))
        _problem(state, path, f"format version {version} (this bruce reads 1 and 2): not read, left in place", cost)
        return False
    file = _File(number, data)
    tail = file.walk(V1_HEADER_BYTES if version == 1 else HEADER_BYTES, latest, finished)
    state.files.append((number, file.top))
    state.damaged += file.damaged
    state.unvouched_top = max(state.unvouched_top, file.gap_top)
    vouched = not file.found
    if version == 1:
        log.warning("journal %s: written by an earlier bruce (format 1): its end cannot be checked; %s", path, cost)
        state.problems.append(f"{path}: format 1")
        vouched = False
    elif extent is None:
        file.found.append("its header is damaged: its end cannot be checked")
    else:
        vouched = vouched and _check_end(file, extent, tail)
        file.off |= bool(extent.state & OFF)
    if file.found:
        _problem(state, path, "; ".join(file.found), cost)
        vouched = False
    return vouched and not file.off


def _check_end(file: _File, extent: Extent, tail: int | None) -> bool:
    """Whether the file holds every byte its header vouches for (see the module rules); findings go to the file's."""
    size = len(file.data)
    if size < extent.end:
        readable = size if tail is None else tail
        file.found.append(f"cut short: {size} bytes, {readable} readable, where {extent.end} were written")
        return False
    if tail is not None and tail < extent.end:
        file.found.append(f"offset {tail}: damaged up to the end (its header vouches for {extent.end} bytes)")
        return False
    return True


def _problem(state: JournalState, path: Path, what: str, cost: str) -> None:
    state.complete = False
    state.problems.append(f"{path}: {what}")
    log.error("journal %s: %s; %s", path, what, cost or "the journal cannot vouch for the batches recorded there")
