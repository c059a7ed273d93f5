"""The manifest: which segments the spool holds and the sequences each one covers, so a segment deleted or cut
short by anything but the spool is found at the next start (docs/spool.md "The manifest").

Rules:
- ``DIR/manifest`` lists every segment the spool holds: its base sequence and its *end* (the sequence after its
  last record), or no end for the segment being written (a crash leaves its end unknown: its tail is checked as a
  torn write instead). Sequences are dense across segments, so a listed end is exact.
- The spool rewrites it (``manifest.tmp``, renamed over it) whenever that list changes: at open, when a segment is
  created (synced, with the roll's directory sync), *before* a done segment is unlinked (not synced), and at a clean
  close (synced). So a listed segment is never one the spool deleted: a listed segment whose file is gone was lost.
  A segment file the manifest does not list (a crash between creating it and saving the list, or between saving
  the list and unlinking it) is replayed as usual: duplicates, never losses.
- A missing or damaged manifest (an older bruce, a disk error) disables the checks for that start (logged); a
  manifest that cannot be written is deleted (logged once), so a stale one never reports a deleted segment as lost.
- Format (big-endian): magic ``b"BSPM"``, version u16 (= 1), flags u16 (= 0), count u32, then per segment its base
  u64 and end u64 (2**64 - 1: not known), then CRC-32C u32 of everything before it. Written through the construct
  spec :data:`MANIFEST`: it is small and written once per segment created or deleted.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import construct as c
from construct import this

from bruce.wire import crc32c

from .format import FORMAT_VERSION

__all__ = ["MANIFEST", "MANIFEST_NAME", "Lost", "Manifest", "missing_segments"]

log = logging.getLogger("bruce.spool")

MANIFEST_NAME = "manifest"
OPEN_END = 2**64 - 1
MANIFEST_FIELDS = c.Struct(
    "magic" / c.Const(b"BSPM"),
    "version" / c.Const(FORMAT_VERSION, c.Int16ub),
    "flags" / c.Const(0, c.Int16ub),  # reserved
    "count" / c.Rebuild(c.Int32ub, c.len_(this.segments)),
    "segments" / c.Array(this.count, c.Struct("base" / c.Int64ub, "end" / c.Int64ub)),
)
MANIFEST = c.Struct(
    "fields" / c.RawCopy(MANIFEST_FIELDS),
    "crc" / c.Checksum(c.Int32ub, crc32c, this.fields.data),
    c.Terminated,
)


class Lost(NamedTuple):
    """Sequences ``[first, end)`` of a listed segment whose file is gone (``end`` None: not known)."""

    name: str
    first: int
    end: int | None


class Manifest:
    """The spool's list of segments: base -> end (None while written, or not known). See the module rules."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / MANIFEST_NAME
        self.segments: dict[int, int | None] = {}
        self._failed = False

    def load(self) -> dict[int, int | None] | None:
        """The list the last run saved, or None when there is none or it is not valid (logged)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as e:
            log.warning("spool: %s cannot be read (%s): missing segments cannot be found this time", self.path, e)
            return None
        try:
            listed = MANIFEST.parse(data).fields.value.segments
        except c.ConstructError:
            log.warning("spool: %s is damaged: missing segments cannot be found this time", self.path)
            return None
        return {s.base: None if s.end == OPEN_END else s.end for s in listed}

    def save(self, fdatasync: Callable[[int], None] | None = None) -> None:
        """Write the list (synced, with the directory, when ``fdatasync`` is given). Never raises."""
        if self._failed:
            return
        listed = [{"base": b, "end": OPEN_END if e is None else e} for b, e in sorted(self.segments.items())]
        temporary = self.path.with_name(MANIFEST_NAME + ".tmp")
        try:
            with open(temporary, "wb") as f:
                f.write(MANIFEST.build({"fields": {"value": {"segments": listed}}}))
                f.flush()
                if fdatasync is not None:
                    fdatasync(f.fileno())
            os.replace(temporary, self.path)
        except OSError as e:
            self._failed = True
            log.error("spool: cannot write %s (%s); missing segments will not be found at the next start", self.path, e)
            with contextlib.suppress(OSError):
                os.unlink(self.path)


def missing_segments(listed: dict[int, int | None], found: list[int]) -> list[Lost]:
    """The listed segments whose file is not among ``found`` (bases), with the sequences they covered: a listed end,
    else the next segment's base (listed or found), else not known."""
    present = set(found)
    bases = sorted(set(listed) | present)
    lost = []
    for i, base in enumerate(bases):
        if base in present:
            continue
        end = listed[base]
        if end is None and i + 1 < len(bases):
            end = bases[i + 1]
        lost.append(Lost(f"{base:020d}.seg", base, end))
    return lost
