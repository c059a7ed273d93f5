"""The batch journal: each idempotent batch's identity made durable before the batch is sent, so that the next process
on the same directory can settle what was in flight when this one died (docs/producer.md, "Exactly once across
restarts"; the daemon's use: docs/spool.md, "Batch journal").

Rules:
- The files' format and records: :mod:`bruce.producer.journal_records` (SENT before a batch goes out whenever
  its identity is new, FINISHED once its fate is known, OFF once batches may go out unjournaled).
- Writes are ``os.write`` on an ``O_APPEND`` descriptor: in the kernel's page cache when the call returns, so a
  process crash (``kill -9``) cannot lose a record written before a send. Power-loss durability follows ``sync_ms``
  (the daemon's ``--spool_fsync_ms``, the library's ``state_sync_ms``), as the spool's ``fsync_ms`` does: 0 —
  :meth:`Journal.sent` returns only after ``fdatasync``, so no batch is sent before its SENT record is on disk (the
  other records wait for the next sync); *n* — the owner's timer calls :meth:`Journal.tick`, which starts an
  ``fdatasync`` in a thread of its own once *n* ms have passed since the last one began, so a record is on disk at
  most *n* ms plus one sync's time after it was written. A file is synced before the next one is created (with the
  directory, so a new file's name is durable too), and at :meth:`Journal.close`.
- A file is rolled after ``file_bytes``. Files are deleted oldest first (a FINISHED record may be in a later file than
  its SENT record), never the active one, once every batch with a SENT record in the file is finished and — with
  ``held_from`` (the daemon: the lowest spool sequence still on disk) — every spool sequence the file names is below
  it: an acknowledged batch's record must outlive the spool's copy of its messages, or a crash before the spool
  saved their done marks would send them again. Earlier runs' files follow the same rule. A write error is logged
  once and turns the journal off (``broken``): the batches go on unjournaled (at-least-once after a crash).
- :func:`read_journal` (in :mod:`bruce.producer.journal_records`) reads them back at the next start.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .journal_records import (
    HEADER_BYTES,
    JournalEntry,
    JournalState,
    TopicPartition,
    encode_finished,
    encode_off,
    encode_sent,
    file_header,
    file_name,
    journal_files,
    read_journal,
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
DELETE_EVERY_S = 1.0  # how often :meth:`Journal.tick` looks for settled files to delete
CHECKING = -3  # a batch's offset while its DUPLICATE_SEQUENCE_NUMBER answer is checked: no FINISHED record yet


class Journal:
    """The writer (see the module rules). ``next_id`` and ``next_file`` continue after what :func:`read_journal`
    saw; ``held_from``: the lowest spool sequence still on disk (None: no spool); ``sync_ms``: 0 syncs each SENT
    record before :meth:`sent` returns, *n* syncs in the background every *n* ms (:meth:`tick`)."""

    def __init__(
        self,
        directory: Path,
        *,
        next_id: int = 0,
        next_file: int = 0,
        file_bytes: int = FILE_BYTES,
        held_from: Callable[[], int] | None = None,
        sync_ms: int = SYNC_MS,
    ) -> None:
        if sync_ms < 0:
            raise ValueError(f"journal sync_ms must not be negative, got {sync_ms}")
        self.directory = directory
        self.file_bytes = file_bytes
        self.sync_ms = sync_ms
        self.syncs = 0  # fdatasync calls started
        self.next_id = next_id
        self.held_from = held_from
        self.broken = ""
        self.acked: dict[TopicPartition, int] = {}
        self.written = 0  # records
        self._fd: int | None = None
        self._number = next_file
        self._active = -1
        self._size = 0
        self._open: dict[int, int] = {}  # file number -> batches with a SENT record there not yet finished
        self._top: dict[int, int] = {}  # file number -> highest spool sequence named in it
        self._batch_files: dict[int, list[int]] = {}  # open batch id -> file numbers with its SENT records
        self._dirty = False
        self._thread: ThreadPoolExecutor | None = None
        self._syncing: Future[None] | None = None
        self._last_sync = 0.0  # monotonic seconds when the last background sync began
        self._next_delete = 0.0

    def open(self, *, old: Sequence[tuple[int, int]] = ()) -> None:
        """Create the first file. ``old``: earlier runs' files (number, highest spool sequence), deleted by the same
        rule as this run's once settled."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for number, top in old:
            self._open[number] = 0
            self._top[number] = top
        self._roll()

    def _roll(self) -> None:
        if self._fd is not None:
            if self._dirty:  # synced before the next file exists: only the newest one can lose records
                self._dirty = False
                self._sync_fd(self._fd)
            os.close(self._fd)
            self._fd = None
        number = self._number
        self._number += 1
        self._fd = os.open(
            self.directory / file_name(number), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644
        )
        os.write(self._fd, file_header())
        self._sync_fd(self._fd)
        directory = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory)  # the new file's name
        finally:
            os.close(directory)
        self._size = HEADER_BYTES
        self._open[number] = 0
        self._top[number] = -1
        self._active = number

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
        if not self._write(encode_sent(entry)):
            return
        if self.sync_ms == 0:
            self.sync()
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
        if self.broken:
            return
        self._write(encode_finished(batch_id, offset))
        for number in files or ():
            self._open[number] -= 1
        if files:
            self.delete_settled()

    def off(self) -> None:
        """From here on batches may be sent unjournaled (idempotence ended): the next start must not take spooled
        messages without a journal entry for never sent."""
        if not self.broken:
            self._write(encode_off())

    def _write(self, record: bytes) -> bool:
        try:
            if self._size + len(record) > self.file_bytes and self._size > HEADER_BYTES:
                self._roll()
            assert self._fd is not None
            os.write(self._fd, record)
        except OSError as e:
            self.broken = str(e)
            log.error(
                "batch journal %s: %s; batches go on unjournaled (at-least-once after a crash)", self.directory, e
            )
            return False
        self._size += len(record)
        self.written += 1
        self._dirty = True
        return True

    def delete_settled(self) -> None:
        """Delete the oldest files that are settled (see the module rules)."""
        held = self.held_from() if self.held_from is not None else None
        for number in sorted(self._open):
            if number == self._active or self._open[number] or (held is not None and self._top[number] >= held):
                return
            del self._open[number], self._top[number]
            try:
                os.unlink(self.directory / file_name(number))
            except FileNotFoundError:
                pass
            except OSError as e:
                log.error("batch journal: cannot delete %s (%s)", file_name(number), e)
                return

    def tick(self, now: float | None = None) -> None:
        """The owner's timer (every few ms; ``now`` in ``time.monotonic()`` seconds): once ``sync_ms`` has passed
        since the last sync began, fdatasync what was written, in a background thread (at most one sync at a time, on
        a duplicate of the descriptor: the file may roll meanwhile); about once a second, delete settled files."""
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
            self._syncing = self._thread.submit(_sync_and_close, fd)
        if now >= self._next_delete:
            self._next_delete = now + DELETE_EVERY_S
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
        """Sync and close the active file (it stays: the next start knows this run journaled every send)."""
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = self._syncing = None
        if self._fd is None:
            return
        self.sync()
        os.close(self._fd)
        self._fd = None
        self._active = -1
        self.delete_settled()
        if not self._open:  # every file went: keep an empty one as the mark
            self._roll()
            os.close(self._fd)  # type: ignore[arg-type]  # _roll opened it
            self._fd = None
            self._active = -1


def _sync_and_close(fd: int) -> None:
    try:
        os.fdatasync(fd)
    finally:
        os.close(fd)


class PartJournal:
    """The producer's side of a :class:`Journal` (its dispatcher's ``journal``): ``sent`` is called with each
    idempotent batch whose identity is new, just before it is sent; ``finished`` with each batch whose fate is known.
    ``payload``: journal the encoded batch (the library, which has no spool); else the messages' ``spool_seq`` runs
    (the daemon)."""

    __slots__ = ("journal", "payload")

    def __init__(self, journal: Journal, *, payload: bool) -> None:
        self.journal = journal
        self.payload = payload

    def sent(self, part: Any, batch: Any) -> None:
        journal = self.journal
        if part.journal_id < 0:
            part.journal_id = journal.new_id()
        if self.payload:
            runs: list[tuple[int, int]] = []
            payload = part.data
        else:
            try:
                seqs = [m.spool_seq for m in part.messages]  # (faster than map(attrgetter) on slotted messages)
            except AttributeError:  # messages without a spool sequence (not the daemon's)
                seqs = [-1]
            low = min(seqs)
            one_run = low >= 0 and max(seqs) - low + 1 == len(seqs)  # distinct sequences spanning their count
            runs = [(low, len(seqs))] if one_run else runs_of(sorted(seqs))
            payload = b""
        identity = (batch.producer_id, batch.producer_epoch, batch.base_sequence)
        journal.sent(part.journal_id, batch.tp, identity, batch.count, runs, payload)

    def finished(self, batch: Any) -> None:
        part = batch.records
        if part is not None and part.journal_id >= 0 and batch.offset != CHECKING:
            self.journal.finished(part.journal_id, batch.tp, batch.offset)

    def checked(self, batch: Any, offset: int) -> None:
        """A DUPLICATE_SEQUENCE_NUMBER answer's log check ended: found at ``offset``, or -1 (sent again as new)."""
        batch.offset = offset
        self.finished(batch)

    def off(self) -> None:
        self.journal.off()
