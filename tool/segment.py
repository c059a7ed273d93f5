"""``bruce-wire segment FILE.log``: a Kafka log segment's batches and records, its checks, and its index files.

Rules:
- The file is mapped, not read: batches are decoded a stretch at a time (:func:`bruce.tool.records.batches`), so a
  1 GiB segment costs a few MiB of memory.
- Checks: every batch's CRC (by the decoders), offsets increasing from the base offset the file is named after
  (a jump forward is noted — compaction makes them —, an offset going back is an error), a torn tail.
- ``.index`` (int32 relative offset, int32 position; 8 bytes an entry) and ``.timeindex`` (int64 timestamp, int32
  relative offset; 12 bytes) beside the segment, when present: each entry must name a batch start (``.index``) or
  an offset of the segment (``.timeindex``), in increasing order; the zero-filled tail Kafka preallocates is ignored.
- Exit status 0 when every check passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import bisect
import mmap
import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from .jsonout import JsonWriter
from .records import LogBatch, batches
from .text import TextWriter

_INDEX = struct.Struct(">ii")
_TIMEINDEX = struct.Struct(">qi")


class SegmentCheck:
    """Walks one segment, writing each batch, and collects what the checks found."""

    def __init__(self, path: Path, out: TextIO, *, json: bool) -> None:
        self.path = path
        self.out = out
        self.json = json
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.starts: list[int] = []  # byte positions of the batches
        self.firsts: list[int] = []  # their first offsets
        self.lasts: list[int] = []  # their last offsets
        self.records = 0
        self.base: int | None = int(path.stem) if path.stem.isdigit() else None  # Kafka names it after its base offset

    def run(self) -> None:
        size = self.path.stat().st_size
        with self.path.open("rb") as f:
            if size == 0:
                self._batches(b"")
            else:
                with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                    self._batches(data)
        for suffix, check in ((".index", self._index), (".timeindex", self._timeindex)):
            index = self.path.with_suffix(suffix)
            if index.exists():
                check(index.read_bytes())

    def _batches(self, data: Any) -> None:
        text = TextWriter(self.out)
        jsonw = JsonWriter(self.out)
        expected = self.base
        for batch in batches(data, topic=None, partition=None):
            self._check(batch, expected)
            if batch.error is None and not batch.partial and (batch.count or batch.control is not None):
                expected = batch.last_offset + 1
            self._write(batch, text, jsonw)

    def _check(self, b: LogBatch, expected: int | None) -> None:
        if b.partial:
            self.problems.append(f"torn tail: {b.size} bytes at byte {b.position} are not a whole batch")
            return
        if b.error is not None:
            self.problems.append(f"batch at byte {b.position}: {b.error}")
            return
        first = b.first_offset
        self.starts.append(b.position)
        self.firsts.append(first)
        self.lasts.append(b.last_offset)
        self.records += b.count
        if expected is not None and first < expected:
            self.problems.append(f"batch at byte {b.position}: offset {first} goes back (expected {expected} or more)")
        elif expected is not None and first > expected and self.starts[:-1]:
            self.notes.append(f"batch at byte {b.position}: offsets jump from {expected} to {first}")

    def _write(self, b: LogBatch, text: TextWriter, jsonw: JsonWriter) -> None:
        if self.json:
            jsonw.batch_line({"file": str(self.path)}, b)
        else:
            text.batch(b, "")

    def _index(self, raw: bytes) -> None:
        base = self.base or 0
        last = -1
        checked = 0
        for n, (relative, position) in _entries(_INDEX, raw):
            checked += 1
            offset = base + relative
            if offset <= last:
                self.problems.append(f".index entry {n}: offset {offset} not above the previous {last}")
            last = offset
            i = bisect.bisect_left(self.starts, position)
            if i == len(self.starts) or self.starts[i] != position:
                self.problems.append(f".index entry {n}: position {position} is not the start of a batch")
            elif not self.firsts[i] <= offset <= self.lasts[i]:
                self.problems.append(
                    f".index entry {n}: offset {offset} is not in the batch at {position} "
                    f"({self.firsts[i]}..{self.lasts[i]})"
                )
        self.notes.append(f".index: {checked} entries checked")

    def _timeindex(self, raw: bytes) -> None:
        base = self.base or 0
        last_ts = -1
        checked = 0
        for n, (ts, relative) in _entries(_TIMEINDEX, raw):
            checked += 1
            offset = base + relative
            i = bisect.bisect_right(self.firsts, offset) - 1
            if i < 0 or offset > self.lasts[i]:
                self.problems.append(f".timeindex entry {n}: offset {offset} is in no batch of the segment")
            if ts < last_ts:
                self.problems.append(f".timeindex entry {n}: timestamp {ts} goes back from {last_ts}")
            last_ts = max(last_ts, ts)
        self.notes.append(f".timeindex: {checked} entries checked")

    def summary(self) -> dict[str, Any]:
        return {
            "file": str(self.path),
            "batches": len(self.starts),
            "records": self.records,
            "first_offset": self.firsts[0] if self.firsts else None,
            "last_offset": self.lasts[-1] if self.lasts else None,
            "problems": self.problems,
            "notes": self.notes,
        }


def _entries(layout: struct.Struct, raw: bytes) -> Iterator[tuple[int, tuple[Any, ...]]]:
    """An index file's entries, numbered, up to its preallocated tail (an all-zero entry after the first)."""
    for n, at in enumerate(range(0, len(raw) - len(raw) % layout.size, layout.size)):
        entry = layout.unpack_from(raw, at)
        if n and not any(entry):
            return
        yield n, entry


def main(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.is_file():
        sys.stderr.write(f"bruce-wire: {path}: not a file\n")
        return 2
    check = SegmentCheck(path, sys.stdout, json=args.json)
    check.run()
    summary = check.summary()
    if args.json:
        JsonWriter(sys.stdout).line({"summary": summary})
    else:
        print(
            f"{path}: {summary['batches']} batches, {summary['records']} records, offsets "
            f"{summary['first_offset']}..{summary['last_offset']}"
        )
        for note in check.notes:
            print(f"  {note}")
        for problem in check.problems:
            print(f"  ! {problem}")
    return 1 if check.problems else 0
