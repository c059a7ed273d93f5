"""One daemon per spool directory: an exclusive ``flock`` on ``DIR/lock``, held for the spool's life.

Rules:
- :func:`acquire` returns the open lock file (closing it releases the lock; so does the process's death, even by
  ``kill -9``) and writes the holder's PID into it. A directory locked by another process raises
  :class:`SpoolLocked`, naming the directory and the PID that holds it when the file says.
- The lock file is never deleted (deleting a lock file races with a second opener); an empty spool is one without
  segment files.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from bruce.wire.errors import BruceError

__all__ = ["LOCK_NAME", "SpoolLocked", "acquire"]

LOCK_NAME = "lock"


class SpoolLocked(BruceError):
    """Another process holds the spool directory."""

    reason = "SPOOL_LOCKED"


def acquire(directory: Path) -> int:
    """Lock ``directory`` (see the module rules); returns the lock file's descriptor. OSError for a disk failure."""
    fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        os.close(fd)
        who = f"process {holder}" if holder.isdigit() else "another process"
        raise SpoolLocked(
            f"spool directory {directory} is in use by {who}: one bruce per spool directory "
            "(stop the other one or give this one another --spool_dir)"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError:
        pass  # the PID is only a courtesy for the next opener's message
    return fd
