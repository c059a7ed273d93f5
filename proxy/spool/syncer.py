"""Syncing segment files to disk: now, in the caller's thread, or in the background in the spool's one sync thread.

Rules:
- :meth:`Syncer.now` runs ``fdatasync`` in the caller's thread (``fsync_ms`` = 0, a roll, the close) and raises its
  OSError. :meth:`Syncer.start` hands a *duplicate* of the descriptor to the sync thread (so the caller may close its
  own meanwhile); at most one background sync runs, and :meth:`Syncer.reap` collects its result — raising the
  OSError it met, in the caller's thread.
- Every sync counts: ``fsyncs``, and the duration of the last and the longest (µs).
- The thread touches nothing but its descriptor and returns a duration; it is created on the first background sync.
  :meth:`Syncer.close` waits a bounded time for a sync still running, then lets the thread go.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout

__all__ = ["Syncer"]


class Syncer:
    """See the module rules. ``fdatasync`` is replaceable, to inject failures."""

    def __init__(self, fdatasync: Callable[[int], None] = os.fdatasync) -> None:
        self.fdatasync = fdatasync
        self.fsyncs = 0
        self.last_us = 0
        self.max_us = 0
        self._thread: ThreadPoolExecutor | None = None
        self._running: Future[float] | None = None

    @property
    def busy(self) -> bool:
        """A background sync is running (or done and not yet reaped)."""
        return self._running is not None

    def now(self, fd: int) -> None:
        """fdatasync ``fd`` in the caller's thread."""
        start = time.perf_counter()
        self.fdatasync(fd)
        self._count(time.perf_counter() - start)

    def start(self, fd: int) -> None:
        """fdatasync a duplicate of ``fd`` in the sync thread (only when not :attr:`busy`)."""
        assert self._running is None, "one background sync at a time"
        own = os.dup(fd)
        if self._thread is None:
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bruce-spool-sync")
        self._running = self._thread.submit(self._timed, own)

    def _timed(self, fd: int) -> float:
        """In the sync thread: fdatasync ``fd`` and close it; the seconds it took."""
        try:
            start = time.perf_counter()
            self.fdatasync(fd)
            return time.perf_counter() - start
        finally:
            os.close(fd)

    def reap(self, timeout: float | None = 0) -> None:
        """Collect the background sync if it has finished (waiting up to ``timeout`` s; None: until it does)."""
        running = self._running
        if running is None:
            return
        try:
            took = running.result(timeout)
        except FuturesTimeout:
            return
        finally:
            if running.done():
                self._running = None
        self._count(took)

    def close(self, timeout: float) -> None:
        """Collect a running sync (waiting up to ``timeout`` s) and let the thread go; raises the sync's OSError."""
        try:
            self.reap(timeout)
        finally:
            if self._thread is not None:
                self._thread.shutdown(wait=False)  # a sync stuck on a dead disk must not hold the shutdown
                self._thread = None

    def _count(self, took: float) -> None:
        self.fsyncs += 1
        self.last_us = int(took * 1e6)
        self.max_us = max(self.max_us, self.last_us)
