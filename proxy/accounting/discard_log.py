"""The discard log file (Bruce's ``--discard_log_path``, docs/bruce-compatibility.md#discard-log).

Rules:
- One line per discarded message (``DISC``) or possible duplicate (``DUP``), Bruce's format (``now``: epoch ms,
  ``ts``: the client's timestamp)::

      now: <ms> ts: <ts> event: DISC|DUP info: <reason> topic: <len>[<topic>] key: <len>[<b64>] msg: <len>[<b64>]

  Key and value are cut to ``prefix_size`` bytes *before* base64; the lengths are those of the written text (topic
  bytes, base64 characters). ``DUP`` lines carry ``info: NONE``; input discards carry ``API_KEY(n)`` / ``VERSION(n)``.
  Where a limit was broken (LONG_MSG), the line ends with `` size: <bytes> limit: <bytes>`` (our addition: a reader
  of Bruce's lines that stops after ``msg:`` still reads them).
- The path is absolute and names a file (not ending in ``/``); its directory is created (``mkdir -p``); the file is
  created with mode 0660 and opened for append.
- Rotation: when the next line would take the file past ``max_file_bytes``, the file is renamed ``<path>.<epoch ms>``
  and a new one started (an empty file is never rotated, so one oversized line cannot cause a rename storm; a name
  already taken gets the next free millisecond). After each rotation, and once at start, the archive cleaner deletes
  the oldest ``<name>.<digits>`` files until their total is at most ``max_archive_bytes``. The directory is listed
  once, at start; after that the cleaner tracks the files it rotates (Bruce rescans the directory every time).
- Any failure to create the directory, open, rename or write disables the log for the rest of the run: counted
  (``DiscardLogDisabled``) and logged once; lines it keeps from being written are counted (``DiscardLogLinesLost``).
  Discards are still counted and reported; only the file stops.
- Never blocks the event loop: the caller formats a line and appends it to an in-memory queue bounded in bytes
  (``max_queued_bytes``, 4 MiB); a writer thread drains it, writes, rotates and cleans. When the queue is full the
  line is dropped and counted (``DiscardLogLinesDropped``). Lines still queued at :meth:`DiscardLog.close` are
  written before it returns.
- Every line is accounted: ``DiscardLogLinesQueued`` (taken into the queue) = ``DiscardLogLinesWritten`` +
  ``DiscardLogLinesLost`` + the lines still queued; ``DiscardLogLinesDropped`` were never queued. A process killed
  with lines still queued never writes them: whoever plans a kill waits until queued = written + lost.
- Threads: the ``Counters`` names this module uses are created by :meth:`DiscardLog.start` on the caller's thread;
  afterwards ``DiscardLogLinesDropped`` and ``DiscardLogLinesQueued`` are only touched by the caller's thread and the
  others only by the writer.
"""

from __future__ import annotations

import logging
import operator
import os
import stat
import threading
import time
from binascii import b2a_base64
from bisect import bisect_right
from collections import deque
from collections.abc import Callable
from itertools import accumulate, repeat

from bruce.producer import Counters
from bruce.wire import UsageError

log = logging.getLogger(__name__)

DEFAULT_PREFIX_SIZE = 256
DEFAULT_MAX_FILE_BYTES = 1024 * 1024  # --discard_log_max_file_size 1024 KiB
DEFAULT_MAX_ARCHIVE_BYTES = 8192 * 1024  # --discard_log_max_archive_size 8192 KiB
DEFAULT_MAX_QUEUED_BYTES = 4 * 1024 * 1024
DEFAULT_FLUSH_INTERVAL = 0.2  # seconds between writer wake-ups when the queue is quiet

_WRITER_COUNTERS = (
    "DiscardLogDisabled",
    "DiscardLogRotate",
    "DiscardLogArchiveDelete",
    "DiscardLogLinesLost",
    "DiscardLogLinesWritten",
)


def epoch_ms() -> int:
    return time.time_ns() // 1_000_000


def topic_bytes(topic: str | bytes) -> bytes:
    """A topic's bytes: str topics from datagrams carry undecodable bytes as ``surrogateescape`` escapes; any other
    lone surrogate is kept as its (invalid) UTF-8 encoding rather than failing."""
    if not isinstance(topic, str):
        return bytes(topic)
    try:
        return topic.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return topic.encode("utf-8", "surrogatepass")


def _b64(data: bytes) -> bytes:
    return b2a_base64(data, newline=False) if data else b""


def format_discard_line(
    now_ms: int,
    ts: int,
    event: str,
    info: str,
    topic: bytes,
    key: bytes | None,
    value: bytes | None,
    prefix_size: int,
    *,
    size: int | None = None,
    limit: int | None = None,
) -> bytes:
    """One discard log line (with its newline). ``key``/``value`` are cut to ``prefix_size`` bytes, then base64;
    ``size`` and ``limit`` (both or neither) end the line when a limit was broken."""
    k = _b64(key[:prefix_size]) if key else b""
    v = _b64(value[:prefix_size]) if value else b""
    end = b"\n" if limit is None else b" size: %d limit: %d\n" % (size, limit)  # type: ignore[str-format]  # size comes with limit
    return b"now: %d ts: %d event: %s info: %s topic: %d[%s] key: %d[%s] msg: %d[%s]%s" % (
        now_ms,
        ts,
        event.encode("ascii"),
        info.encode("ascii"),
        len(topic),
        topic,
        len(k),
        k,
        len(v),
        v,
        end,
    )


def split_log_path(path: str) -> tuple[str, str]:
    """``(directory, file name)`` of a discard log path; :class:`UsageError` unless absolute and naming a file."""
    if not path:
        raise UsageError("discard log path is empty")
    if not path.startswith("/"):
        raise UsageError(f"discard log path must be absolute: {path!r}")
    if path.endswith("/"):
        raise UsageError(f"discard log path must name a file, not a directory: {path!r}")
    directory, _, name = path.rpartition("/")
    return directory.rstrip("/") or "/", name


class DiscardLogFile:
    """The file side, used from one thread only: open, append lines with rotation, clean the archive, close."""

    def __init__(
        self,
        path: str,
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_archive_bytes: int = DEFAULT_MAX_ARCHIVE_BYTES,
        counters: Counters | None = None,
        clock_ms: Callable[[], int] = epoch_ms,
    ) -> None:
        if max_file_bytes <= 0:
            raise UsageError(f"discard log max file size must be positive, got {max_file_bytes}")
        if max_archive_bytes < 0:
            raise UsageError(f"discard log max archive size must not be negative, got {max_archive_bytes}")
        self.path = path
        self.directory, self.name = split_log_path(path)
        self.max_file_bytes = max_file_bytes
        self.max_archive_bytes = max_archive_bytes
        self.counters = counters if counters is not None else Counters()
        self.clock_ms = clock_ms
        self.enabled = False
        self.failure: str | None = None  # why the log was disabled
        self.size = 0
        self._fd = -1
        self._archives: list[tuple[int, str, int]] = []  # (epoch ms from the name, path, size)
        self._archive_paths: set[str] = set()

    def open(self) -> bool:
        """Create the directory, list the archive, open (or create, mode 0660) the file; rotate it if already too
        big."""
        try:
            os.makedirs(self.directory, exist_ok=True)
        except OSError as e:
            self.disable(f"cannot create directory {self.directory}: {e}")
            return False
        self.scan_archive()
        if self._open_fd() and self.size > self.max_file_bytes:
            self._rotate()
        return self.enabled

    def write_lines(self, lines: list[bytes]) -> None:
        """Append whole lines, rotating between lines when the next one would pass ``max_file_bytes``."""
        if self.enabled and self.size + sum(map(len, lines)) <= self.max_file_bytes:
            self._write(lines)  # the common case: everything fits
            return
        chunk: list[bytes] = []
        chunk_size = 0
        for i, line in enumerate(lines):
            if not self.enabled:
                self.counters.inc("DiscardLogLinesLost", len(lines) - i)
                return
            pending = self.size + chunk_size
            if pending and pending + len(line) > self.max_file_bytes:
                self._write(chunk)
                chunk, chunk_size = [], 0
                if self.enabled:
                    self._rotate()
                if not self.enabled:
                    self.counters.inc("DiscardLogLinesLost", len(lines) - i)  # type: ignore[unreachable]  # _rotate() may disable
                    return
            chunk.append(line)
            chunk_size += len(line)
        self._write(chunk)

    def scan_archive(self) -> None:
        """List the ``<name>.<digits>`` regular files in the directory (done by :meth:`open`)."""
        prefix = self.name + "."
        self._archives = []
        try:
            with os.scandir(self.directory) as entries:
                for entry in entries:
                    suffix = entry.name[len(prefix) :]
                    if not entry.name.startswith(prefix) or not (suffix.isascii() and suffix.isdigit()):
                        continue
                    try:
                        if entry.is_file(follow_symlinks=False):
                            size = entry.stat(follow_symlinks=False).st_size
                            self._archives.append((int(suffix), entry.path, size))
                    except FileNotFoundError:
                        continue
        except OSError as e:
            log.warning("discard log cleaner cannot list %s: %s", self.directory, e)
        self._archive_paths = {path for _, path, _ in self._archives}

    def clean_archive(self) -> int:
        """Delete the oldest archived files until their total size is within the cap; returns how many went."""
        total = sum(size for _, _, size in self._archives)
        kept: list[tuple[int, str, int]] = []
        deleted = 0
        for archive in sorted(self._archives):
            _, archive_path, size = archive
            if total <= self.max_archive_bytes:
                kept.append(archive)
                continue
            try:
                os.unlink(archive_path)
            except FileNotFoundError:
                pass
            except OSError as e:
                log.warning("discard log cleaner cannot delete %s: %s", archive_path, e)
                kept.append(archive)
                continue
            self._archive_paths.discard(archive_path)
            total -= size
            deleted += 1
        self._archives = kept
        if deleted:
            self.counters.inc("DiscardLogArchiveDelete", deleted)
        if total > self.max_archive_bytes:
            log.warning("discard log archive in %s is still %d bytes over its cap", self.directory, total)
        return deleted

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _open_fd(self) -> bool:
        flags = os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC  # O_NONBLOCK: a FIFO must not hang us
        try:
            try:
                fd = os.open(self.path, flags | os.O_CREAT | os.O_EXCL, 0o660)
                os.fchmod(fd, 0o660)  # exactly 0660 whatever the umask
                mode, size = stat.S_IFREG, 0  # we just created it
            except FileExistsError:
                fd = os.open(self.path, flags)
                st = os.fstat(fd)
                mode, size = st.st_mode, st.st_size
        except OSError as e:
            self.disable(f"cannot open {self.path} for append: {e}")
            return False
        if not stat.S_ISREG(mode):
            os.close(fd)
            self.disable(f"{self.path} is not a regular file")
            return False
        self._fd, self.size, self.enabled = fd, size, True
        return True

    def _rotate(self) -> None:
        # Few system calls on purpose: under load each one costs the writer thread a wait for the GIL.
        self.close()
        ms = self.clock_ms()
        while f"{self.path}.{ms}" in self._archive_paths:
            ms += 1
        archive_path = f"{self.path}.{ms}"
        try:
            os.rename(self.path, archive_path)
        except OSError as e:
            self.disable(f"cannot rename {self.path} for rotation: {e}")
            return
        self._archives.append((ms, archive_path, self.size))
        self._archive_paths.add(archive_path)
        self.counters.inc("DiscardLogRotate")
        if self._open_fd():
            self.clean_archive()

    def _write(self, chunk: list[bytes]) -> None:
        if not chunk:
            return
        data = memoryview(b"".join(chunk))
        written = 0
        try:
            while written < len(data):
                n = os.write(self._fd, data[written:])
                self.size += n
                written += n
        except OSError as e:
            self.disable(f"cannot write {self.path}: {e}")
            whole_lines = bisect_right(list(accumulate(map(len, chunk))), written)
            self.counters.inc("DiscardLogLinesWritten", whole_lines)
            self.counters.inc("DiscardLogLinesLost", len(chunk) - whole_lines)
            return
        self.counters.inc("DiscardLogLinesWritten", len(chunk))

    def disable(self, why: str) -> None:
        """Stop writing for the rest of the run; counted and logged the first time only."""
        self.close()
        self.enabled = False
        if self.failure is None:
            self.failure = why
            self.counters.inc("DiscardLogDisabled")
            log.error("discard log disabled for the rest of this run: %s", why)


class DiscardLog:
    """Discard log front end for the event loop: ``start()``, ``discard()`` / ``duplicate()`` per event, ``close()``.

    ``discard``/``duplicate`` cost one attribute check when the log is off, and formatting plus a deque append when on.
    """

    def __init__(
        self,
        path: str,
        *,
        prefix_size: int = DEFAULT_PREFIX_SIZE,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_archive_bytes: int = DEFAULT_MAX_ARCHIVE_BYTES,
        counters: Counters | None = None,
        max_queued_bytes: int = DEFAULT_MAX_QUEUED_BYTES,
        flush_interval: float = DEFAULT_FLUSH_INTERVAL,
        clock_ms: Callable[[], int] = epoch_ms,
    ) -> None:
        if prefix_size < 0:
            raise UsageError(f"discard log prefix size must not be negative, got {prefix_size}")
        if max_queued_bytes < 1:
            raise UsageError(f"max_queued_bytes must be at least 1, got {max_queued_bytes}")
        self.counters = counters if counters is not None else Counters()
        self.file = DiscardLogFile(
            path,
            max_file_bytes=max_file_bytes,
            max_archive_bytes=max_archive_bytes,
            counters=self.counters,
            clock_ms=clock_ms,
        )
        self.prefix_size = prefix_size
        self.clock_ms = clock_ms
        self.max_queued_bytes = max_queued_bytes
        self.flush_interval = flush_interval
        self._queue: deque[bytes] = deque()
        self._wake_at = max(1, max_queued_bytes // 4)
        # Queued bytes = appended - taken; each counter has a single writer thread, so no lock is needed.
        self._appended = 0  # by the caller's thread
        self._taken = 0  # by whoever drains (the writer thread)
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        """True while lines are being written (started, and no failure has disabled the file)."""
        return self.file.enabled and not self._stopping

    @property
    def queued(self) -> int:
        """Lines waiting for the writer."""
        return len(self._queue)

    @property
    def queued_bytes(self) -> int:
        return self._appended - self._taken

    def start(self) -> bool:
        """Open the file and start the writer thread. Returns ``enabled`` (False: the failure is logged and counted)."""
        if self._thread is not None:
            raise UsageError("discard log already started")
        for name in (*_WRITER_COUNTERS, "DiscardLogLinesDropped", "DiscardLogLinesQueued"):
            self.counters.inc(name, 0)
        if not self.file.open():
            return False
        self._thread = threading.Thread(target=self._run, name="bruce-discard-log", daemon=True)
        self._thread.start()
        return True

    def discard(
        self,
        info: str,
        topic: str | bytes,
        key: bytes | None,
        value: bytes | None,
        ts: int | None,
        *,
        size: int | None = None,
        limit: int | None = None,
    ) -> None:
        """Log a discarded message. ``info`` is the reason text (``RATE_LIMIT``, ``API_KEY(300)``, ...); ``ts`` None
        (input discards) means now; ``size`` and ``limit`` where a limit was broken (LONG_MSG)."""
        if self.file.enabled and not self._stopping:
            self._put("DISC", info, topic, key, value, ts, size, limit)

    def duplicate(self, topic: str | bytes, key: bytes | None, value: bytes | None, ts: int) -> None:
        """Log a possible duplicate (a message sent again after its broker failed before acknowledging it)."""
        if self.file.enabled and not self._stopping:
            self._put("DUP", "NONE", topic, key, value, ts)

    def close(self, timeout: float = 10.0) -> None:
        """Stop taking lines, write what is queued, close the file. Blocks up to ``timeout`` seconds (call it from a
        thread, e.g. ``asyncio.to_thread``, if the loop must stay responsive during shutdown)."""
        self._stopping = True
        thread, self._thread = self._thread, None
        if thread is not None:
            self._wake.set()
            thread.join(timeout)
            if thread.is_alive():
                log.error("discard log writer did not finish within %.1f s; %d lines unwritten", timeout, self.queued)
        else:
            self.file.close()

    def _put(
        self,
        event: str,
        info: str,
        topic: str | bytes,
        key: bytes | None,
        value: bytes | None,
        ts: int | None,
        size: int | None = None,
        limit: int | None = None,
    ) -> None:
        if self._appended - self._taken >= self.max_queued_bytes:
            self.counters.inc("DiscardLogLinesDropped")
            return
        now = self.clock_ms()
        raw = topic.encode() if type(topic) is str and topic.isascii() else topic_bytes(topic)
        ts = now if ts is None else ts
        line = format_discard_line(now, ts, event, info, raw, key, value, self.prefix_size, size=size, limit=limit)
        self._queue.append(line)
        self._appended += len(line)
        self.counters.inc("DiscardLogLinesQueued")
        if self._appended - self._taken >= self._wake_at and not self._wake.is_set():
            self._wake.set()

    def _run(self) -> None:
        try:
            self.file.clean_archive()
            while True:
                self._wake.wait(self.flush_interval)
                self._wake.clear()
                stopping = self._stopping
                self.drain()
                if stopping:
                    break
        except Exception:
            log.exception("discard log writer failed")
            self.file.disable("writer failed (see the traceback above)")
        finally:
            self.file.close()

    def drain(self) -> None:
        """Write every queued line now, on the calling thread. The writer thread does this; so may a caller that
        opened ``file`` without :meth:`start` (tests)."""
        queue = self._queue
        while queue:
            # Pop in C (no bytecode per line) so the event loop's thread gets the GIL back quickly.
            batch = list(map(operator.call, repeat(queue.popleft, len(queue))))
            self._taken += sum(map(len, batch))
            self.file.write_lines(batch)
