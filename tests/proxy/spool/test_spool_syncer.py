"""The sync thread: one sync at a time, its result collected by the caller, a bounded wait at close."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from bruce.proxy.spool.syncer import Syncer


def test_a_background_sync_syncs_a_duplicate_and_closes_it(tmp_path: Path) -> None:
    seen: list[int] = []
    syncer = Syncer(lambda fd: seen.append(fd))
    with open(tmp_path / "f", "wb") as f:
        syncer.start(f.fileno())
        assert syncer.busy
        syncer.reap(timeout=None)
        assert not syncer.busy and syncer.fsyncs == 1
        assert seen and seen[0] != f.fileno()  # its own descriptor ...
        with pytest.raises(OSError):
            os.fstat(seen[0])  # ... closed by the thread
    syncer.close(timeout=1)


def test_the_sync_error_reaches_the_caller_once(tmp_path: Path) -> None:
    def eio(fd: int) -> None:
        raise OSError(errno.EIO, "I/O error")

    syncer = Syncer(eio)
    with open(tmp_path / "f", "wb") as f:
        syncer.start(f.fileno())
        with pytest.raises(OSError, match="I/O error"):
            syncer.reap(timeout=None)
        assert not syncer.busy
        syncer.reap()  # nothing more to report
        with pytest.raises(OSError):
            syncer.now(f.fileno())
    assert syncer.fsyncs == 0
    syncer.close(timeout=1)


def test_close_waits_a_bounded_time_for_a_stuck_sync(tmp_path: Path) -> None:
    release = threading.Event()
    syncer = Syncer(lambda fd: release.wait(10))
    with open(tmp_path / "f", "wb") as f:
        syncer.start(f.fileno())
        syncer.close(timeout=0.05)  # returns although the sync has not finished
        assert syncer.busy
    release.set()
