"""The tail mark: ``DIR/tail`` says where the segment being written ended after its last whole burst, so that the next
start tells a cut newest segment (records missing before the mark: each one counted) from a torn write (bytes after
it: the burst the crash cut) (docs/spool.md "The tail mark").

Rules:
- Format (big-endian, 36 bytes, rewritten in place): magic ``b"BSPT"``, version u16 (= 1), flags u16 (= 0), the
  segment's base sequence u64, its *end* u64 (the sequence after its last whole record), its *size* u64 (its bytes up
  to there), then CRC-32C u32 of the 32 bytes before it. :data:`TAIL` (construct) is the spec; :func:`encode_tail`
  the fast path (one ``struct`` pack), proven equal to it by the tests.
- :meth:`TailMark.write` is one ``pwrite`` after each burst written whole (and after a roll), not synced: it only ever
  says less than the segment holds (a process crash between the segment's write and the mark's leaves the mark one
  burst behind: that burst counts as written); after a power loss a mark that reached the disk before the segment's
  bytes says what the loss took — which is what was lost.
- :meth:`TailMark.load` is None for a missing or invalid mark (an older bruce, a damaged file): the start then falls
  back to the manifest and the torn-tail rule. A mark that cannot be written is logged once and deleted, so a stale
  one never claims more than it knows. A clean close deletes it: the manifest then says where every segment ends.
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
from pathlib import Path
from typing import NamedTuple

import construct as c
from construct import this

from bruce.wire import crc32c

__all__ = ["TAIL", "TAIL_NAME", "Tail", "TailMark", "encode_tail", "parse_tail"]

log = logging.getLogger("bruce.spool")

TAIL_NAME = "tail"
TAIL_FIELDS = c.Struct(
    "magic" / c.Const(b"BSPT"),
    "version" / c.Const(1, c.Int16ub),
    "flags" / c.Const(0, c.Int16ub),  # reserved
    "base" / c.Int64ub,  # the segment's base sequence
    "end" / c.Int64ub,  # the sequence after its last whole record
    "size" / c.Int64ub,  # its bytes up to there
)
TAIL = c.Struct(
    "fields" / c.RawCopy(TAIL_FIELDS),
    "crc" / c.Checksum(c.Int32ub, crc32c, this.fields.data),
    c.Terminated,
)
_FIELDS = struct.Struct(">4sHHQQQ")
_CRC = struct.Struct(">I")


class Tail(NamedTuple):
    base: int
    end: int
    size: int


def encode_tail(tail: Tail) -> bytes:
    """The mark's 36 bytes (the fast path of :data:`TAIL`)."""
    fields = _FIELDS.pack(b"BSPT", 1, 0, *tail)
    return fields + _CRC.pack(crc32c(fields))


def parse_tail(data: bytes) -> Tail | None:
    """The mark, or None when ``data`` is not a valid one."""
    try:
        f = TAIL.parse(data).fields.value
    except c.ConstructError:
        return None
    return Tail(f.base, f.end, f.size)


class TailMark:
    """``DIR/tail`` (see the module rules): :meth:`load` what the last run left, then :meth:`write` after each burst."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / TAIL_NAME
        self._fd: int | None = None
        self._failed = False

    def load(self) -> Tail | None:
        try:
            return parse_tail(self.path.read_bytes())
        except OSError:
            return None

    def write(self, tail: Tail) -> None:
        """Say ``tail`` (never raises: a failure is logged once and the mark deleted)."""
        if self._failed:
            return
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
            os.pwrite(self._fd, encode_tail(tail), 0)
        except OSError as e:
            self._failed = True
            log.error("spool: cannot write %s (%s); a cut newest segment will count as one torn write", self.path, e)
            with contextlib.suppress(OSError):
                os.unlink(self.path)

    def close(self, *, remove: bool = False) -> None:
        """Close the mark; ``remove`` it too (a clean close: the manifest knows where every segment ends)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        if remove:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
