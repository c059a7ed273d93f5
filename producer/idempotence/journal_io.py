"""The batch journal's file operations (:mod:`bruce.producer.idempotence.journal` decides when and what an error costs):
a file created with its header and synced with its directory, bytes written at an offset, an earlier run's newest file
made to say NEXT, a sync in a thread of its own.

Rules: every function raises ``OSError`` but :func:`say_next`, which logs a failure and goes on (a NEXT mark not
written only hides the deletion of a later file from the next start).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
from collections.abc import Callable
from pathlib import Path

from .journal_records import EXTENT_AT, HEADER_BYTES, NEXT, encode_extent, parse_header

log = logging.getLogger("bruce.journal")


def why(error: OSError) -> str:
    """``ENOSPC: No space left on device``: an error as the journal's log lines give it."""
    name = errno.errorcode.get(error.errno or 0, "error")
    return f"{name}: {error.strerror or error}"


def create_file(path: Path, header: bytes, sync: Callable[[int], None]) -> int:
    """``path`` created (never over an existing file) with ``header``, synced (``sync``) with its directory (the new
    name); its descriptor. A failure removes what it made."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        pwrite_all(fd, header, 0)
        sync(fd)
        directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    except OSError:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    return fd


def pwrite_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n


def say_next(path: Path) -> None:
    """Make an earlier run's newest file say NEXT (its header rewritten in place; nothing when it cannot be)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return
    try:
        parsed = parse_header(os.pread(fd, HEADER_BYTES, 0))
        if parsed is not None and parsed[1] is not None:
            extent = parsed[1]
            os.pwrite(fd, encode_extent(extent.end, extent.outstanding, extent.state | NEXT), EXTENT_AT)
    except OSError as e:
        log.warning("batch journal: cannot mark %s as followed (%s)", path, why(e))
    finally:
        os.close(fd)


def sync_and_close(fd: int) -> None:
    try:
        os.fdatasync(fd)
    finally:
        os.close(fd)
