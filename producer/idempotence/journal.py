"""The batch journal: each idempotent batch's identity made durable before the batch is sent, so that the next process
on the same directory can settle what was in flight when this one died (docs/producer.md, "Exactly once across
restarts"; the daemon's use: docs/spool.md, "Batch journal").

Rules:
- The files' format and records: :mod:`bruce.producer.idempotence.journal_records` (SENT before a batch goes out
  whenever its identity is new, FINISHED once its fate is known, OFF once batches may go out unjournaled, GAP when
  records were lost while it ran); :func:`read_journal` (:mod:`bruce.producer.idempotence.journal_reader`) reads them
  back.
- Writes are ``os.pwrite`` at the file's end, in the kernel's page cache when the call returns, so a process crash
  (``kill -9``) cannot lose a record written before a send. After each SENT, OFF and GAP record the header's extent
  is rewritten in place (its ``end``, the messages outstanding): the next start tells a torn tail (after it) from a
  cut or damage (before it). Power-loss durability follows ``sync_ms`` (the daemon's ``--spool_fsync_ms``, the
  library's ``state_sync_ms``), as the spool's ``fsync_ms`` does: 0 — :meth:`Journal.sent` returns only after
  ``fdatasync``, so no batch is sent before its SENT record is on disk (the other records wait for the next sync);
  *n* — the owner's timer calls :meth:`Journal.tick`, which starts an ``fdatasync`` in a thread of its own once *n*
  ms have passed since the last one began, so a record is on disk at most *n* ms plus one sync's time after it was
  written.
- A file is rolled after ``file_bytes``: synced, the next one created (synced, with the directory, so its name is
  durable too), then the full one's header says NEXT. A new run's first file makes the last run's newest file say
  NEXT too: a file deleted from the chain is found at the next start. When the next file cannot be created (an
  immutable directory), records go on in the current file, and the roll is tried again ``file_bytes`` later.
- Files are deleted oldest first (a FINISHED record may be in a later file than its SENT record), never the active
  one, once every batch with a SENT record in the file is finished and — with ``held_from`` (the daemon: the lowest
  spool sequence still on disk) — every spool sequence the file names is below it: an acknowledged batch's record
  must outlive the spool's copy of its messages, or a crash before the spool saved their done marks would send them
  again. Earlier runs' files follow the same rule.
- A write that fails (``EPERM``, ``EROFS``, ``ENOSPC``, ``EIO``, …) turns the journal off (``broken``): the batches
  go on unjournaled. Before the call that met the error returns (so before its batch goes out) the OFF state is
  written into the file's header, in place (no new block: it works on a full disk and in an immutable directory),
  so the next start knows it cannot vouch for what followed; one ERROR line names the file, the error, ``cost`` (the
  owner's words for what unjournaled batches cost) and whether the OFF state could be recorded. Nothing raises
  after :meth:`open`.
- About once a second (:meth:`tick`) and at each roll the journal checks that its files are still there: the active
  one by ``fstat`` (link count) and the inode its name leads to, the others by name. Deleted or replaced under it,
  the records they held are lost: one ERROR line says so, the next file takes a GAP record (spool sequences up to
  the highest the lost files named are no longer vouched for) and the SENT record of every batch not finished, and
  the journal goes on exact from there.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from .journal_io import create_file, pwrite_all, say_next, sync_and_close, why
from .journal_part import CHECKING, PartJournal
from .journal_reader import read_journal
from .journal_records import (
    EXTENT_AT,
    HEADER_BYTES,
    NEXT,
    OFF,
    Extent,
    JournalEntry,
    JournalState,
    TopicPartition,
    encode_extent,
    encode_finished,
    encode_gap,
    encode_off,
    encode_sent,
    file_header,
    file_name,
    journal_files,
    runs_of,
)

__all__ = [
    "CHECKING",
    "FILE_BYTES",
    "Journal",
    "JournalEntry",
    "JournalState",
    "PartJournal",
    "TopicPartition",
    "journal_files",
    "read_journal",
    "runs_of",
]

log = logging.getLogger("bruce.journal")

FILE_BYTES = 4 << 20
SYNC_MS = 100  # the spool's default fsync_ms
DELETE_EVERY_S = 1.0  # how often :meth:`Journal.tick` deletes settled files and checks that its files are there
COST = "after a crash the next start cannot settle the batches sent from now on"


class Journal:
    """The writer (see the module rules). ``next_id`` and ``next_file`` continue after what :func:`read_journal`
    saw; ``held_from``: the lowest spool sequence still on disk (None: no spool); ``sync_ms``: 0 syncs each SENT
    record before :meth:`sent` returns, *n* syncs in the background every *n* ms (:meth:`tick`); ``cost``: what
    batches sent unjournaled cost, for the log line of a write error."""

    def __init__(
        self,
        directory: Path,
        *,
        next_id: int = 0,
        next_file: int = 0,
        file_bytes: int = FILE_BYTES,
        held_from: Callable[[], int] | None = None,
        sync_ms: int = SYNC_MS,
        cost: str = COST,
    ) -> None:
        if sync_ms < 0:
            raise ValueError(f"journal sync_ms must not be negative, got {sync_ms}")
        self.directory = directory
        self.file_bytes = file_bytes
        self.sync_ms = sync_ms
        self.cost = cost
        self.syncs = 0  # fdatasync calls started
        self.next_id = next_id
        self.held_from = held_from
        self.broken = ""  # why records are no longer written ("" while they are)
        self.recorded = False  # broken, and the OFF state is in the file's header
        self.losses = 0  # times files were found deleted or replaced under the journal
        self.acked: dict[TopicPartition, int] = {}
        self.written = 0  # records
        self._fd: int | None = None
        self._identity = (0, 0)  # the active file's (device, inode)
        self._number = next_file
        self._active = -1
        self._size = 0
        self._state = 0  # the active file's header state bits
        self._roll_at = file_bytes  # the size past which the next record rolls first
        self._open: dict[int, int] = {}  # file number -> batches with a SENT record there not yet finished
        self._top: dict[int, int] = {}  # file number -> highest spool sequence named in it
        self._batch_files: dict[int, list[int]] = {}  # open batch id -> file numbers with its SENT records
        self._entries: dict[int, JournalEntry] = {}  # open batch id -> its latest SENT record (this run's)
        self._outstanding = 0  # messages of the open batches
        self._dirty = False
        self._thread: ThreadPoolExecutor | None = None
        self._syncing: Future[None] | None = None
        self._last_sync = 0.0  # monotonic seconds when the last background sync began
        self._next_check = 0.0
        self._roll_failed = False
        self._delete_failed = False

    @property
    def path(self) -> Path:  # the active file
        return self.directory / file_name(self._active)

    def open(self, *, old: Sequence[tuple[int, int]] = ()) -> None:
        """Create the first file (raises OSError when it cannot be); then the newest of ``old`` (earlier runs' files:
        number, highest spool sequence, deleted by the same rule as this run's once settled) says NEXT."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for number, top in old:
            self._open[number] = 0
            self._top[number] = top
        self._fd = self._create(self._number)
        self._start(self._fd)
        if old:
            say_next(self.directory / file_name(max(number for number, _ in old)))

    def hold(self, entries: Sequence[JournalEntry]) -> None:
        """Earlier runs' batches not finished yet: their files stay until :meth:`finished` names each of them."""
        for entry in entries:
            if entry.file in self._open and entry.batch_id not in self._batch_files:
                self._open[entry.file] += 1
                self._batch_files[entry.batch_id] = [entry.file]

    # ---------------------------------------------------------------- files

    def _create(self, number: int) -> int:
        """A new file with its header, synced with the directory; its descriptor."""
        header = file_header(Extent(HEADER_BYTES, self._outstanding, 0))
        return create_file(self.directory / file_name(number), header, self._sync_fd)

    def _start(self, fd: int) -> None:
        """``fd`` (just created as file ``_number``) becomes the active file."""
        number = self._number
        self._number += 1
        st = os.fstat(fd)
        self._fd, self._identity = fd, (st.st_dev, st.st_ino)
        self._size = HEADER_BYTES
        self._state = 0
        self._roll_at = self.file_bytes
        self._open[number] = 0
        self._top[number] = -1
        self._active = number

    def _roll(self) -> None:
        """Sync the active file, create the next one, make the full one say NEXT (see the module rules)."""
        old = self._fd
        assert old is not None
        if self._dirty:
            self._dirty = False
            self._sync_fd(old)
        try:
            fd = self._create(self._number)
        except OSError as e:
            self._roll_at = self._size + self.file_bytes
            if not self._roll_failed:
                self._roll_failed = True
                log.warning(
                    "batch journal: cannot create %s (%s); records go on in %s past its size",
                    file_name(self._number),
                    why(e),
                    self.path,
                )
            return
        with contextlib.suppress(OSError):  # a NEXT mark not written only hides a later file's deletion
            os.pwrite(old, encode_extent(self._size, self._outstanding, self._state | NEXT), EXTENT_AT)
        os.close(old)
        self._start(fd)

    # ---------------------------------------------------------------- records

    def new_id(self) -> int:
        bid = self.next_id
        self.next_id += 1
        return bid

    def sent(
        self,
        batch_id: int,
        tp: TopicPartition,
        identity: tuple[int, int, int],
        count: int,
        runs: list[tuple[int, int]],
        payload: bytes = b"",
    ) -> None:
        """A SENT record for a batch about to be sent with ``identity`` (producer id, epoch, base sequence)."""
        if self.broken:
            return
        entry = JournalEntry(
            batch_id, identity[0], identity[1], tp[0], tp[1], identity[2], count, self.acked.get(tp, -1), runs, payload
        )
        earlier = self._entries.get(batch_id)
        self._outstanding += count - (earlier.count if earlier is not None else 0)
        self._entries[batch_id] = entry
        if not self._write(encode_sent(entry), vouch=True):
            return
        if self.sync_ms == 0:
            self.sync()
        self._note_sent(batch_id, runs)

    def _note_sent(self, batch_id: int, runs: list[tuple[int, int]]) -> None:
        active = self._active
        files = self._batch_files.setdefault(batch_id, [])
        if active not in files:
            files.append(active)
            self._open[active] += 1
        if runs:
            self._top[active] = max(self._top[active], runs[-1][0] + runs[-1][1] - 1)

    def finished(self, batch_id: int, tp: TopicPartition, offset: int) -> None:
        """The batch's fate is known: acknowledged at ``offset`` (-2: offset not given), or given up (-1)."""
        if offset >= 0 and offset > self.acked.get(tp, -1):
            self.acked[tp] = offset
        files = self._batch_files.pop(batch_id, None)
        entry = self._entries.pop(batch_id, None)
        if entry is not None:
            self._outstanding -= entry.count
        if self.broken:
            return
        self._write(encode_finished(batch_id, offset), vouch=False)
        for number in files or ():
            if number in self._open:
                self._open[number] -= 1
        if files:
            self.delete_settled()

    def off(self) -> None:
        """From here on batches may be sent unjournaled (idempotence ended): the next start must not take spooled
        messages without a journal entry for never sent."""
        if not self.broken:
            self._state |= OFF
            self._write(encode_off(), vouch=True)

    def _write(self, record: bytes, *, vouch: bool) -> bool:
        """Append ``record`` (rolling first when the file is full); ``vouch``: then rewrite the header's extent.
        False when it failed (the journal is broken then)."""
        try:
            if self._size + len(record) > self._roll_at and self._size > HEADER_BYTES:
                self._check_files()
                if self.broken:
                    return False
                self._roll()
            assert self._fd is not None
            pwrite_all(self._fd, record, self._size)
            self._size += len(record)
            if vouch:
                self._mark()
        except OSError as e:
            self._break(e, "writing")
            return False
        self.written += 1
        self._dirty = True
        return True

    def _mark(self) -> None:
        assert self._fd is not None
        os.pwrite(self._fd, encode_extent(self._size, self._outstanding, self._state), EXTENT_AT)

    def _break(self, error: OSError, doing: str) -> None:
        """Records can no longer be written: record OFF in the header if that still works (see the module rules)."""
        if self.broken:
            return
        self.broken = f"{doing} {self.path}: {why(error)}"
        self._state |= OFF
        with contextlib.suppress(OSError):
            if self._fd is not None:
                self._mark()
                if self.sync_ms == 0:
                    self._sync_fd(self._fd)
                self.recorded = True
        log.error(
            "batch journal %s: %s failed (%s); batches go on unjournaled: %s (%s)",
            self.path,
            doing,
            why(error),
            self.cost,
            "recorded in the file's header: the next start knows"
            if self.recorded
            else "this could not be recorded either: the next start cannot know",
        )

    # ---------------------------------------------------------------- files lost under the journal

    def _check_files(self) -> None:
        """Find files deleted or replaced under the journal (see the module rules)."""
        if self._fd is None or self.broken:
            return
        lost = [n for n in self._open if n != self._active and not (self.directory / file_name(n)).exists()]
        try:
            st = os.fstat(self._fd)
            now = os.stat(self.path)
            gone = st.st_nlink == 0 or (now.st_dev, now.st_ino) != self._identity
        except FileNotFoundError:
            gone = True
        except OSError:
            gone = False
        if gone:
            lost.append(self._active)
        if lost:
            self._lost(sorted(lost))

    def _lost(self, numbers: list[int]) -> None:
        """Files ``numbers`` are gone: GAP and the open batches' SENT records go to a new file."""
        self.losses += 1
        top = max(self._top.get(n, -1) for n in numbers)
        for n in numbers:
            self._open.pop(n, None)
            self._top.pop(n, None)
        for files in self._batch_files.values():
            files[:] = [n for n in files if n not in numbers]
        what = ", ".join(file_name(n) for n in numbers)
        if self._active in numbers:
            assert self._fd is not None
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
            try:
                self._start(self._create(self._number))
            except OSError as e:
                self._break(e, f"replacing {what} (deleted) with")
                return
        assert self._fd is not None
        try:
            records = [encode_gap(top)] if top >= 0 else []
            records += [encode_sent(self._entries[bid]) for bid in sorted(self._entries)]
            pwrite_all(self._fd, b"".join(records), self._size)
            self._size += sum(map(len, records))
            for bid in self._entries:
                self._note_sent(bid, self._entries[bid].runs)
            self._mark()
        except OSError as e:
            self._break(e, "journaling again in")
            return
        self._dirty = True
        log.error(
            "batch journal %s: %s deleted or replaced while bruce ran: the %d batches not finished are journaled again "
            "in %s%s",
            self.directory,
            what,
            len(self._entries),
            file_name(self._active),
            f"; spool sequences up to {top} are no longer vouched for: the next start reports those it replays as "
            "possible duplicates"
            if top >= 0
            else "",
        )

    # ---------------------------------------------------------------- deletion, syncs, close

    def delete_settled(self) -> None:
        """Delete the oldest files that are settled (see the module rules)."""
        held = self.held_from() if self.held_from is not None else None
        for number in sorted(self._open):
            if number == self._active or self._open[number] or (held is not None and self._top[number] >= held):
                return
            try:
                os.unlink(self.directory / file_name(number))
            except FileNotFoundError:
                pass
            except OSError as e:  # it stays (and counts as there): tried again later, logged once
                if not self._delete_failed:
                    self._delete_failed = True
                    log.error("batch journal: cannot delete %s (%s); tried again later", file_name(number), why(e))
                return
            del self._open[number], self._top[number]

    def tick(self, now: float | None = None) -> None:
        """The owner's timer (every few ms; ``now`` in ``time.monotonic()`` seconds): once ``sync_ms`` has passed
        since the last sync began, fdatasync what was written, in a background thread (at most one sync at a time, on
        a duplicate of the descriptor: the file may roll meanwhile); about once a second, check the files are there
        and delete settled ones."""
        now = time.monotonic() if now is None else now
        if self._syncing is not None and self._syncing.done():
            error = self._syncing.exception()
            self._syncing = None
            if error is not None:
                log.error("batch journal: sync failed (%s)", error)
        due = now >= self._last_sync + self.sync_ms / 1000
        if due and self._fd is not None and self._dirty and not self.broken and self._syncing is None:
            self._dirty = False
            self._last_sync = now
            if self._thread is None:
                self._thread = ThreadPoolExecutor(1, thread_name_prefix="bruce-journal-sync")
            fd = os.dup(self._fd)
            self.syncs += 1
            self._syncing = self._thread.submit(sync_and_close, fd)
        if now >= self._next_check:
            self._next_check = now + DELETE_EVERY_S
            self._check_files()
            self.delete_settled()

    def sync(self) -> None:
        """fdatasync the active file now, in the caller's thread, if anything was written since the last sync."""
        if self._fd is not None and self._dirty and not self.broken:
            self._dirty = False
            try:
                self._sync_fd(self._fd)
            except OSError as e:
                log.error("batch journal: sync failed (%s)", e)

    def _sync_fd(self, fd: int) -> None:
        self.syncs += 1
        os.fdatasync(fd)

    def close(self) -> None:
        """Sync and close the active file (it stays: the next start knows this run journaled every send). Never
        raises: an error is one log line (the journal's OFF state recorded if it still can be)."""
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = self._syncing = None
        if self._fd is None:
            return
        if not self.broken:
            try:
                self._mark()
                self._dirty = True
                self.sync()
            except OSError as e:
                self._break(e, "closing")
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._fd = None
        self._active = -1
        if self.broken:
            return
        self.delete_settled()
        if not self._open:  # every file went: keep an empty one as the mark
            try:
                os.close(self._create(self._number))
            except OSError as e:
                log.error("batch journal: cannot leave %s (%s)", file_name(self._number), why(e))
            self._number += 1
