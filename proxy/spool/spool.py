"""The durable spool: a locked directory of append-only segment files, written a burst at a time, replayed at start,
each segment deleted once every message in it is done (docs/spool.md).

Rules:
- :meth:`Spool.open` creates and locks the directory (:class:`~.lock.SpoolLocked` if another process holds it: the
  daemon must refuse to start), then recovers what earlier runs left (:mod:`.recovery`: the manifest's check for
  missing or cut segments, the newest segment checked against the tail mark (:mod:`.tail`) and its torn tail
  truncated) for :meth:`Spool.replay`. New messages always go to a new segment: a segment is never appended to
  across runs and never rewritten in place (the one exception is the torn-tail truncation).
- :meth:`Spool.append` writes a burst with one ``write`` and returns the burst's first sequence (the others follow
  consecutively), or :data:`NOT_SPOOLED` (hold the burst in memory only) or :data:`SPOOL_FULL` (discard it with
  reason ``SPOOL_FULL``) — never raises. A segment holding records never takes one that would take it past
  ``segment_bytes``: a burst that does not fit is cut at a record boundary and goes on in a new segment (one
  ``write`` per piece); only a record larger than ``segment_bytes`` makes a segment larger (it is alone in it).
  After each burst (and each roll) the tail mark says where the active segment ends: one ``pwrite``, not synced.
- Durability: with ``fsync_ms`` = 0, ``append`` returns only after ``fdatasync``; otherwise the caller's timer calls
  :meth:`Spool.tick`, which starts an ``fdatasync`` in the sync thread (:mod:`.syncer`) once ``fsync_ms`` has passed
  since the last one began, so data is on disk at most ``fsync_ms`` + one sync's time after it was written and the
  caller never waits for the timer's syncs; the next tick collects the result (an error degrades the spool). A
  rolled segment is synced in the caller's thread before the next one is created, so only the newest segment can
  have a torn tail after a power loss.
- Full (``max_bytes`` counts every segment file): the burst is not written; ``full_policy`` "memory" (the default)
  returns NOT_SPOOLED, "discard" returns SPOOL_FULL.
- A disk error (ENOSPC, EIO, EROFS, …) while creating, writing or syncing never raises: the spool *degrades* —
  ``degraded`` holds the error, one ERROR line is logged, and every later burst is NOT_SPOOLED until restart. A
  write that failed part-way is cut back to the last whole burst, and so are the pieces of a burst already written
  when its next segment could not be made (the burst goes on in memory only: replayed, it would be delivered twice).
  Deleting a done segment that fails is logged once and retried never: it is replayed at the next start (duplicates,
  not losses).
- :meth:`Spool.replay` reads one segment at a time and hands its records out as it walks them (bounded memory).
- :meth:`Spool.done_many` marks messages done (delivered or discarded — but not ``SERVER_SHUTDOWN``, which must
  stay for the next start) and unlinks segments that became fully done. :meth:`Spool.close` syncs, deletes the
  active segment when all of it is done, and writes a done file (:mod:`.donefile`) for each segment partly done; a
  clean shutdown after full delivery leaves no segment files. :meth:`Spool.tick` also writes the done files of the
  segments whose done set grew, every ``done_every_ms`` (unsynced), which bounds what a crash replays again.
- The manifest (:mod:`.manifest`) is saved whenever the list of segments changes: a roll (synced), before a done
  segment is unlinked (not synced), at a clean close (synced).
- For one thread (the event loop's); every file operation is one system call per burst or per segment. The only
  other thread is the sync thread, which touches nothing but its own descriptor.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from bruce.wire import UsageError

from .cursor import Cursor
from .donefile import DONE_SUFFIX, sync_directory, write_done_files
from .format import HEADER_SIZE, SpoolFields, SpoolRecord, encode_burst, encode_header
from .lock import acquire
from .manifest import Manifest
from .pieces import Piece, cut_burst
from .recovery import Recovery
from .scan import Corrupt
from .settings import FullPolicy, SpoolConfig
from .syncer import Syncer
from .tail import Tail, TailMark
from .tracker import Segment, Tracker

__all__ = ["NOT_SPOOLED", "SPOOL_FULL", "FullPolicy", "Spool", "SpoolConfig"]

log = logging.getLogger("bruce.spool")
OnCorrupt = Callable[[str, int, int, str], None]  # a loss found by the replay: (file, offset, messages, detail)

NOT_SPOOLED = -1
SPOOL_FULL = -2
CLOSE_SYNC_WAIT_S = 5.0  # how long close() waits for a sync still running in the thread


def segment_name(base: int) -> str:
    return f"{base:020d}.seg"


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


class Spool:
    """See the module rules. Create with :meth:`open`."""

    def __init__(
        self,
        config: SpoolConfig,
        *,
        wall_ms: Callable[[], int] = _wall_ms,
        on_behind: Callable[[], None] | None = None,
    ) -> None:
        """``on_behind``: the cursor's (:class:`~.cursor.Cursor`), called when it stops being caught up."""
        self.config = config
        self.directory = Path(config.directory)
        self._wall_ms = wall_ms
        self._tracker = Tracker()
        self._lock_fd: int | None = None
        self._fd: int | None = None  # the active segment's
        self._active: Segment | None = None
        self._bytes = 0  # every segment file's size
        self._left_in_place = 0  # segment files not tracked: unreadable, or their deletion failed
        self._dirty = False
        self._last_sync = time.monotonic()
        self._next_done_save = self._last_sync + config.done_every_ms / 1000
        self._saving_done = config.done_every_ms > 0  # off after a failed write (logged once)
        self._unlink_failed = False
        self.next_sequence = 0
        self.degraded: str | None = None
        self.appended = self.corrupt = self.not_spooled = self.full = 0  # counters
        self.syncer = Syncer()  # its fdatasync is replaceable, to inject failures
        self._write = os.write  # replaceable, to inject failures
        self.last_burst = (0, HEADER_SIZE)  # the last burst appended: its first sequence and its offset in its segment
        self.cursor = Cursor(self, on_behind=on_behind)  # the records held on disk only (:mod:`.cursor`)
        self._manifest = Manifest(self.directory)
        self._tail = TailMark(self.directory)
        self._recovery = Recovery(config, self._tracker, self._manifest, unlink=self._unlink)

    # -------------------------------------------------------------------------------------------------- opening

    @classmethod
    def open(
        cls, config: SpoolConfig, *, wall_ms: Callable[[], int] = _wall_ms, on_behind: Callable[[], None] | None = None
    ) -> Spool:
        """Create or reopen the spool; raises only :class:`~.lock.SpoolLocked` (a disk error degrades it).
        ``on_behind``: told when the cursor stops being caught up (:class:`~.cursor.Cursor`)."""
        spool = cls(config, wall_ms=wall_ms, on_behind=on_behind)
        try:
            spool.directory.mkdir(parents=True, exist_ok=True)
            spool._lock_fd = acquire(spool.directory)
            spool._load()
        except OSError as e:
            spool._degrade(e, "opening the spool")
        return spool

    def _load(self) -> None:
        """What earlier runs left (:class:`~.recovery.Recovery`); the sequence continues after theirs."""
        try:
            self._recovery.load(self._tail.load())
        finally:
            self.next_sequence = max(self.next_sequence, self._recovery.next_sequence)
            self._bytes += self._recovery.bytes

    def replay(
        self, skip: Callable[[int], bool] | None = None, on_corrupt: OnCorrupt | None = None
    ) -> Iterator[list[SpoolRecord]]:
        """Every record left by earlier runs, oldest first; losses counted less what ``skip`` says was settled
        (:meth:`.recovery.Recovery.replay`), logged and handed to ``on_corrupt``."""
        return self._recovery.replay(functools.partial(self._report, on_corrupt=on_corrupt), skip)

    def peek(self, wanted: set[int]) -> tuple[dict[int, SpoolRecord], set[int]]:
        """Records of ``wanted`` sequences still to be replayed, read without changing anything, and those whose
        records are lost (:meth:`.recovery.Recovery.peek`)."""
        return self._recovery.peek(wanted)

    def _report(self, path: Path, region: Corrupt, *, on_corrupt: OnCorrupt | None) -> None:
        """A loss found by the replay: counted, logged, handed to the replay's ``on_corrupt``."""
        self.corrupt += region.count
        log.error(
            "spool: %s offset %d: %s; %d message(s) lost, discarded as SPOOL_CORRUPT",
            path,
            region.offset,
            region.detail,
            region.count,
        )
        if on_corrupt is not None and region.count:
            on_corrupt(str(path), region.offset, region.count, region.detail)

    def continue_after(self, sequence: int) -> None:
        """Hand out only sequences above ``sequence`` from now on (before the first append: the batch journal names
        sequences of earlier runs whose segments are gone, which must never be given to new messages)."""
        if self._active is None and sequence >= self.next_sequence:
            self.next_sequence = sequence + 1

    @property
    def held_from(self) -> int:
        """The lowest sequence still held on disk (every lower one is done and deleted)."""
        first = next(iter(self._tracker), None)
        return first.base if first is not None else self.next_sequence

    # -------------------------------------------------------------------------------------------------- writing

    def append(self, messages: Sequence[SpoolFields]) -> int:
        """Spool a burst: its first sequence, or NOT_SPOOLED / SPOOL_FULL (see the module rules). Never raises."""
        n = len(messages)
        if not n:
            return self.next_sequence
        if self.degraded is not None:
            self.not_spooled += n
            return NOT_SPOOLED
        try:
            data = encode_burst(self.next_sequence, messages)
        except UsageError as e:
            log.error("spool: a burst of %d messages cannot be encoded (%s); held in memory only", n, e)
            self.not_spooled += n
            return NOT_SPOOLED
        pieces = cut_burst(data, n, self._active.nbytes if self._active else None, self.config.segment_bytes)
        if self._over(data, pieces) and self._active is not None and not self._active.pending:
            try:  # the active segment is all done: let it go to make room
                self._seal_active()
            except OSError as e:
                self._degrade(e, f"syncing {self.directory}")
            pieces = cut_burst(data, n, None, self.config.segment_bytes)
        if self._over(data, pieces):
            self.full += n
            if self.config.full_policy is FullPolicy.DISCARD:
                return SPOOL_FULL
            self.not_spooled += n
            return NOT_SPOOLED
        first = self.next_sequence
        head = (self._active, self._active.nbytes) if self._active is not None else None
        view = memoryview(data)
        for start, end, count, roll in pieces:
            try:
                if roll or self._active is None:
                    self._roll()
                active = self._active
                assert active is not None
                self._write_all(view[start:end], active)
            except OSError as e:
                if self.next_sequence > first:  # an earlier piece is on disk: the burst goes on in memory only
                    self._take_back(first, head)
                self._degrade(e, f"writing to {self.directory}")
                self.not_spooled += n
                return NOT_SPOOLED
            seq = self.next_sequence
            self.next_sequence += count
            self._tracker.append_run(active, seq, count)
            if seq == first:
                self.last_burst = (first, active.nbytes)
            active.nbytes += end - start
            self._bytes += end - start
            self._dirty = True  # a roll syncs it
        if self._active is not None:
            self._tail.write(Tail(self._active.base, self.next_sequence, self._active.nbytes))
        self.appended += n
        if self.config.fsync_ms == 0:
            self._sync()
        return first

    def _take_back(self, first: int, head: tuple[Segment, int] | None) -> None:
        """The pieces of a burst from sequence ``first`` on are on disk, the rest could not be written: cut them off
        (``head``: the segment the burst began in and its size before it; segments made for it are deleted), so the
        next start never replays messages that went on in memory only. Where the disk refuses, they are marked done
        instead (their done file, if one can still be written, keeps them from replay)."""
        taken = self.next_sequence - first
        if self._active is not None and self._active.base >= first:  # made for this burst: let go of it first
            self._active = None
            if self._fd is not None:
                with contextlib.suppress(OSError):
                    os.close(self._fd)
                self._fd = None
        try:
            for segment in [s for s in self._tracker if s.base + s.size > first or s.base >= first]:
                if segment.base >= first:  # made for this burst
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(self.directory / segment.name)
                    self._tracker.forget(segment)
                    self._manifest.segments.pop(segment.base, None)
                    self._bytes -= segment.nbytes
                    continue
                assert head is not None and head[0] is segment
                os.truncate(self.directory / segment.name, head[1])
                self._bytes -= segment.nbytes - head[1]
                segment.nbytes = head[1]
                count = segment.base + segment.size - first
                segment.size -= count
                segment.pending -= count
                if self._manifest.segments.get(segment.base) is not None:
                    self._manifest.segments[segment.base] = first
                if segment.sealed and not segment.pending:
                    self._unlink(self._tracker.seal(segment))
        except OSError:
            self._unlink(self._tracker.done_run(first, taken))
            return
        self.next_sequence = first
        self._manifest.save(os.fdatasync)  # a roll may have saved the cut pieces' ends (one it cannot save goes)

    def _over(self, data: bytes, pieces: list[Piece]) -> bool:
        """Writing ``data`` in these pieces (a header per roll) would take the spool past ``max_bytes``."""
        rolls = sum(roll for *_, roll in pieces)
        return self._bytes + len(data) + rolls * HEADER_SIZE > self.config.max_bytes

    def _write_all(self, data: bytes | memoryview, active: Segment) -> None:
        assert self._fd is not None
        view = memoryview(data)
        written = 0
        try:
            while written < len(data):
                written += self._write(self._fd, view[written:])
        except OSError:
            if written:
                with contextlib.suppress(OSError):  # cut a partial burst off: the file ends at a whole record again
                    os.ftruncate(self._fd, active.nbytes)
            raise

    def _roll(self) -> Segment:
        """Seal the active segment (synced first) and start a new one at the next sequence."""
        self._seal_active()
        base = self.next_sequence
        name = segment_name(base)
        now = self._wall_ms()
        header = encode_header(base, now)
        fd = os.open(self.directory / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o600)
        self._fd = fd
        segment = self._tracker.add(name, base, now)
        self._active = segment
        self._write_all(header, segment)
        segment.nbytes = HEADER_SIZE
        self._bytes += HEADER_SIZE
        self._manifest.segments[base] = None  # being written
        self._manifest.save(os.fdatasync)
        sync_directory(self.directory)  # the new file's and the manifest's names survive a power loss
        self._tail.write(Tail(base, base, HEADER_SIZE))
        return segment

    def _seal_active(self) -> None:
        active, fd = self._active, self._fd
        self._active = self._fd = None
        if active is not None:
            self._manifest.segments[active.base] = active.base + active.size  # saved with the next change
        try:
            if fd is not None and self._dirty:
                self._sync_fd(fd)
        finally:
            if fd is not None:
                os.close(fd)
            if active is not None:
                self._unlink(self._tracker.seal(active))

    def tick(self, now: float | None = None) -> None:
        """The caller's timer (every few ms; ``now`` in ``time.monotonic()`` seconds): once ``fsync_ms`` has passed
        since the last sync began, sync what was written — in the sync thread, so the caller never waits for the
        disk. At most one sync runs. Every ``done_every_ms``, the done files of segments whose done set grew are
        written (not synced), so a crash replays only what was not done a moment before."""
        now = time.monotonic() if now is None else now
        try:
            self.syncer.reap()
            due = now >= self._last_sync + self.config.fsync_ms / 1000
            if due and self._dirty and self._fd is not None and not self.syncer.busy:
                self.syncer.start(self._fd)
                self._dirty = False
                self._last_sync = now
        except OSError as e:
            self._degrade(e, f"syncing {self.directory}")
        if self._saving_done and now >= self._next_done_save and self.degraded is None:
            self._next_done_save = now + self.config.done_every_ms / 1000
            self._saving_done = write_done_files(self.directory, self._tracker, None, changed_only=True)

    def _sync(self) -> None:
        if self._fd is None:
            return
        try:
            self._sync_fd(self._fd)
        except OSError as e:
            self._degrade(e, f"syncing {self.directory}")

    def _sync_fd(self, fd: int) -> None:
        """Sync ``fd`` in the caller's thread (fsync_ms = 0, a roll, the close)."""
        self.syncer.now(fd)
        self._last_sync = time.monotonic()
        self._dirty = False

    def _degrade(self, error: OSError, during: str) -> None:
        if self.degraded is None:
            name = errno.errorcode.get(error.errno or 0, "error")
            self.degraded = f"{during}: {name}: {error.strerror or error}"
            log.error("spool: %s; new messages are held in memory only until bruce restarts", self.degraded)
        if self._active is not None or self._fd is not None:
            with contextlib.suppress(OSError):
                self._seal_active()

    # -------------------------------------------------------------------------------------------------- completion

    def done_many(self, sequences: Sequence[int] | range) -> None:
        """Messages delivered or discarded (not SERVER_SHUTDOWN): segments fully done are deleted."""
        self._unlink(self._tracker.done_many(sequences))

    def done_run(self, first: int, count: int) -> None:
        """``count`` consecutive sequences from ``first`` done (a burst, or a run of one)."""
        self._unlink(self._tracker.done_run(first, count))

    def segment_of(self, seq: int) -> Segment | None:
        """The tracked segment holding ``seq`` (for the cursor)."""
        return self._tracker.find(seq)

    def _unlink(self, segments: list[Segment]) -> None:
        if not segments:
            return
        for segment in segments:  # first: a listed segment is never one the spool deleted
            self._manifest.segments.pop(segment.base, None)
        self._manifest.save()
        for segment in segments:
            try:
                with contextlib.suppress(FileNotFoundError):  # first: a done file never outlives its segment
                    os.unlink(self.directory / (segment.name + DONE_SUFFIX))
                os.unlink(self.directory / segment.name)
            except FileNotFoundError:
                pass
            except OSError as e:
                self._left_in_place += 1
                if not self._unlink_failed:
                    self._unlink_failed = True
                    log.error("spool: cannot delete %s (%s); it will be replayed at the next start", segment.name, e)
                continue
            self._bytes -= segment.nbytes

    def close(self) -> None:
        """Sync, delete the active segment if all of it is done, and release the lock. Idempotent."""
        self.cursor.close()
        try:
            self.syncer.close(CLOSE_SYNC_WAIT_S)
        except OSError as e:
            self._degrade(e, f"syncing {self.directory}")
        try:
            self._seal_active()
        except OSError as e:
            self._degrade(e, "closing the spool")
        if self._lock_fd is not None and self.degraded is None:
            self._manifest.save(os.fdatasync)
            write_done_files(self.directory, self._tracker, self.syncer.fdatasync)
        if self._lock_fd is not None:
            self._tail.close(remove=self.degraded is None)
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------------------------------------------- status

    @property
    def bytes(self) -> int:
        """Bytes of every segment file in the directory (tracked or left in place)."""
        return self._bytes

    @property
    def segments(self) -> int:
        """Segment files in the directory (tracked or left in place)."""
        return len(self._tracker) + self._left_in_place + self._recovery.left_in_place

    @property
    def replayed(self) -> int:
        """Records handed out by :meth:`replay`."""
        return self._recovery.replayed

    @property
    def skipped_done(self) -> int:
        """Records :meth:`replay` skipped: a done file marked them delivered."""
        return self._recovery.skipped_done

    @property
    def bad_headers(self) -> int:
        """Segments whose header was damaged (their records read anyway)."""
        return self._recovery.bad_headers

    @property
    def pending(self) -> int:
        """Messages spooled in this run or replayed and not yet done (unreplayed segments not counted)."""
        return self._tracker.pending()

    def oldest_age_ms(self, now_ms: int | None = None) -> int:
        """Age of the oldest segment still holding an undelivered message (0 when none): an upper bound on the oldest
        undelivered message's time in the spool."""
        segment = self._tracker.oldest_pending()
        if segment is None:
            return 0
        return max(0, (self._wall_ms() if now_ms is None else now_ms) - segment.created_ms)

    def stats(self) -> dict[str, int]:
        """The counters and gauges for the status pages and ``/metrics``."""
        return {
            "SpoolBytes": self.bytes,
            "SpoolSegments": self.segments,
            "SpoolAppended": self.appended,
            "SpoolReplayed": self.replayed,
            "SpoolSkippedDone": self.skipped_done,
            "SpoolCorrupt": self.corrupt,
            "SpoolBadHeaders": self.bad_headers,
            "SpoolFull": self.full,
            "SpoolNotSpooled": self.not_spooled,
            "SpoolPending": self.pending,
            "SpoolHeldOnDisk": self.cursor.held,
            "SpoolDiskOnly": self.cursor.held_total,
            "SpoolOldestMs": self.oldest_age_ms(),
            "SpoolFsyncs": self.syncer.fsyncs,
            "SpoolFsyncLastUs": self.syncer.last_us,
            "SpoolFsyncMaxUs": self.syncer.max_us,
            "SpoolDoneUnknown": self._tracker.unknown,
            "SpoolDegraded": int(self.degraded is not None),
        }
