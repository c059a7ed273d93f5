"""One daemon per spool directory: an exclusive ``flock`` on the directory itself, held for the spool's life.

Rules:
- :func:`acquire` opens the directory and takes an exclusive ``flock`` on that descriptor; closing it releases the
  lock, and so does the process's death, even by ``kill -9``. The lock is on the directory's inode, not on a file's
  existence: deleting ``DIR/lock`` (or any file) while a daemon holds the spool lets no second daemon in. A
  directory locked by another process raises :class:`SpoolLocked`, naming the directory and the PID that holds it
  when ``DIR/lock`` says.
- ``DIR/lock`` holds the holder's PID, only for that message (written after the lock is taken; never trusted for
  the locking itself, never deleted).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from bruce.wire import BruceError

__all__ = ["LOCK_NAME", "SpoolLocked", "acquire"]

LOCK_NAME = "lock"


class SpoolLocked(BruceError):
    """Another process holds the spool directory."""

    reason = "SPOOL_LOCKED"


def acquire(directory: Path) -> int:
    """Lock ``directory`` (see the module rules); returns the locked descriptor. OSError for a disk failure."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        holder = _holder(directory)
        who = f"process {holder}" if holder.isdigit() else "another process"
        raise SpoolLocked(
            f"spool directory {directory} is in use by {who}: one bruce per spool directory "
            "(stop the other one or give this one another --spool_dir)"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    try:
        temporary = directory / (LOCK_NAME + ".tmp")
        temporary.write_text(f"{os.getpid()}\n")
        os.replace(temporary, directory / LOCK_NAME)
    except OSError:
        pass  # the PID is only a courtesy for the next opener's message
    return fd


def _holder(directory: Path) -> str:
    try:
        return (directory / LOCK_NAME).read_text("ascii", "replace").strip()[:32]
    except OSError:
        return ""
