"""Done files: ``<segment>.done`` holds a segment's done bitmap, written periodically and at a clean close, so the
next start replays only what was not done (docs/spool.md "Done files").

Rules:
- A done file is only ever a snapshot of the done set, which only grows: applied to its own segment it can never
  make a message that is not done look done. It applies only when its base sequence and created time equal those of
  the segment's (valid) header; any other done file, and one of a segment that is gone, is deleted at open.
- Every segment with a message done has one: a sealed segment partly done, and the active segment however much of it
  is done (all of it, typically, when deliveries keep up: without it a crash would replay it whole).
- Written to ``<name>.done.tmp``, synced, renamed over ``<name>.done``, then the directory is synced. Deleted
  *before* its segment. A failure to write one is logged: that segment is replayed whole (duplicates, never losses).
  The periodic save (the spool's ``tick``, every ``done_every_ms``) writes only the segments whose done set grew,
  and does not sync: a process crash keeps them (page cache); after a power loss one may be missing or damaged,
  which only means more of its segment is replayed (a damaged one fails its CRC and is ignored).
- The files are small (one bit per message) and written at most once per period, so they go through the construct
  spec :data:`~.format.DONE_FILE` directly.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from .format import DoneBitmap, SegmentHeader, encode_done, parse_done
from .tracker import Segment

__all__ = ["DONE_SUFFIX", "is_done", "load_done", "remove_orphans", "sync_directory", "write_done_files"]

log = logging.getLogger("bruce.spool")

DONE_SUFFIX = ".done"


def is_done(bitmap: bytes, index: int) -> bool:
    """Bit ``index`` of ``bitmap`` (False beyond it)."""
    return 0 <= index < len(bitmap) * 8 and bool(bitmap[index >> 3] & (1 << (index & 7)))


def remove_orphans(directory: Path, names: Iterable[str], segment_names: set[str]) -> None:
    """Delete done files whose segment is gone, and unfinished ones."""
    for name in names:
        orphan = name.endswith(DONE_SUFFIX) and name[: -len(DONE_SUFFIX)] not in segment_names
        if orphan or name.endswith(DONE_SUFFIX + ".tmp"):
            os.unlink(directory / name)


def load_done(directory: Path, name: str, base: int, header: SegmentHeader | None, *, gone: bool = False) -> bytes:
    """The done bitmap of segment ``name`` (b"" if it has no valid done file; an invalid one is deleted). ``gone``:
    the segment file is missing, its done file says only how many of its messages were not lost (base checked)."""
    path = directory / (name + DONE_SUFFIX)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return b""
    done = parse_done(data)
    if done and done.base_sequence == base and (gone or (header and done.created_ms == header.created_ms)):
        return done.bitmap
    log.warning("spool: %s does not match its segment; ignored and removed", path)
    os.unlink(path)
    return b""


def write_done_files(
    directory: Path, segments: Iterable[Segment], fdatasync: Callable[[int], None] | None, *, changed_only: bool = False
) -> bool:
    """A done file for each segment with something done and not deleted (sealed and partly done, or the active
    one, even all done: see the module rules); with ``changed_only``, only for those whose done set grew since their
    done file was written. ``fdatasync`` None: not synced (the periodic save). False if
    a write failed."""
    written = False
    ok = True
    for segment in segments:
        done = segment.size - segment.pending  # only grows: a count of it tells whether the done set grew
        if segment.awaiting_replay or not done or (segment.sealed and not segment.pending):
            continue  # nothing done, or a sealed segment all done (it is deleted, not saved)
        if changed_only and segment.saved == done:
            continue
        path = directory / (segment.name + DONE_SUFFIX)
        temporary = path.with_name(path.name + ".tmp")
        try:
            with open(temporary, "wb") as f:
                f.write(encode_done(DoneBitmap(segment.base, segment.created_ms, bytes(segment.done))))
                f.flush()
                if fdatasync is not None:
                    fdatasync(f.fileno())
            os.replace(temporary, path)
            segment.saved = done
            written = True
        except OSError as e:
            log.error("spool: cannot write %s (%s); the segment will be replayed whole", path, e)
            ok = False
            break
    if written and fdatasync is not None:
        with contextlib.suppress(OSError):
            sync_directory(directory)
    return ok


def sync_directory(directory: Path) -> None:
    """fsync the directory: the names created, renamed or deleted in it survive a power loss."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
