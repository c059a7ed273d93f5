"""The batch journal when its files fail under it (bruce.producer.idempotence.journal): a disk that becomes unwritable
mid-run (``ENOSPC``: appends fail, rewriting allocated bytes works; an immutable directory: no new file; a read-only
file system: nothing), and files deleted or replaced while it runs. The journal never raises, says it in one log line
naming the file and the cost, and — where anything can still be written — records it before the batch that met the
error goes out, so the next start cannot take what followed for journaled."""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from bruce.producer.idempotence.journal import Journal, journal_files, read_journal

Broken = Callable[[], None]


def _fail_when(monkeypatch: pytest.MonkeyPatch, *, appends: int, creates: int, rewrites: int) -> Broken:
    """From the returned switch on, the file system refuses: writes that would make a file longer (``appends``),
    new files (``creates``), writes inside a file's bytes (``rewrites``) — each an errno, 0 for allowed."""
    on = [False]
    real_write, real_pwrite, real_open = os.write, os.pwrite, os.open

    def refuse(code: int) -> None:
        if on[0] and code:
            raise OSError(code, os.strerror(code))

    def write(fd: int, data: bytes) -> int:
        refuse(appends)
        return real_write(fd, data)

    def pwrite(fd: int, data: bytes, offset: int) -> int:
        refuse(appends if offset + len(data) > os.fstat(fd).st_size else rewrites)
        return real_pwrite(fd, data, offset)

    def open_(path: object, flags: int, *args: int) -> int:
        if flags & os.O_CREAT:
            refuse(creates)
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "write", write)
    monkeypatch.setattr(os, "pwrite", pwrite)
    monkeypatch.setattr(os, "open", open_)
    return lambda: on.__setitem__(0, True)


def _send(j: Journal, bids: range) -> None:
    for bid in bids:
        j.sent(bid, ("t", 0), (7, 0, bid), 1, [(bid, 1)])


def test_a_full_disk_turns_the_journal_off_and_its_header_says_so_before_the_batch_goes_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    j = Journal(tmp_path)
    j.open()
    _send(j, range(3))
    _fail_when(monkeypatch, appends=errno.ENOSPC, creates=errno.ENOSPC, rewrites=0)()
    with caplog.at_level(logging.ERROR, "bruce.journal"):
        j.sent(3, ("t", 0), (7, 0, 3), 1, [(3, 1)])  # its batch goes out unjournaled after this returns
    assert j.broken
    assert not read_journal(tmp_path).complete  # already: a crash now, and the next start knows
    _send(j, range(4, 6))
    j.finished(0, ("t", 0), 10)
    j.close()  # never raises
    (line,) = [r.getMessage() for r in caplog.records]
    assert str(journal_files(tmp_path)[0][1]) in line and "ENOSPC" in line and "the next start knows" in line


def test_an_immutable_directory_keeps_the_journal_going_in_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """No new file can be created (``chattr +i`` on the directory): the records go on past the file's size."""
    j = Journal(tmp_path, file_bytes=300)
    j.open()
    _send(j, range(2))
    _fail_when(monkeypatch, appends=0, creates=errno.EPERM, rewrites=0)()
    with caplog.at_level(logging.WARNING, "bruce.journal"):
        _send(j, range(2, 12))
        j.finished(11, ("t", 0), 30)
        j.close()  # never raises
    assert not j.broken
    state = read_journal(tmp_path)
    assert state.complete and [e.batch_id for e in state.entries] == list(range(12))
    assert len([r for r in caplog.records if "cannot create" in r.getMessage()]) == 1


def test_a_read_only_file_system_says_it_cannot_be_recorded_and_close_never_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    j = Journal(tmp_path, file_bytes=300)
    j.open()
    _send(j, range(2))
    _fail_when(monkeypatch, appends=errno.EROFS, creates=errno.EROFS, rewrites=errno.EROFS)()
    with caplog.at_level(logging.ERROR, "bruce.journal"):
        _send(j, range(2, 12))
        j.finished(0, ("t", 0), 3)
        j.close()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "EROFS" in lines[0] and "could not be recorded" in lines[0], lines


def test_the_active_file_deleted_while_running_is_noticed_and_what_follows_is_exact(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    j = Journal(tmp_path)
    j.open()
    _send(j, range(5))
    j.finished(0, ("t", 0), 1)
    j.finished(1, ("t", 0), 2)
    journal_files(tmp_path)[0][1].unlink()
    with caplog.at_level(logging.ERROR, "bruce.journal"):
        j.tick(1000.0)
    (line,) = [r.getMessage() for r in caplog.records]
    assert "deleted or replaced" in line and "3 batches not finished are journaled again" in line
    _send(j, range(5, 7))
    j.finished(5, ("t", 0), 6)
    state = read_journal(tmp_path)
    assert [(e.batch_id, e.finished) for e in state.entries] == [(2, None), (3, None), (4, None), (5, 6), (6, None)]
    assert state.unvouched_top == 4  # spool sequences 0-4 were named by the lost file
    assert state.complete  # from the new file on, the journal is exact again


def test_the_active_file_replaced_while_running_is_noticed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    j = Journal(tmp_path)
    j.open()
    _send(j, range(3))
    ((_, path),) = journal_files(tmp_path)
    copy = tmp_path / "copy"
    copy.write_bytes(path.read_bytes()[:40])
    copy.replace(path)  # an older copy restored over it
    with caplog.at_level(logging.ERROR, "bruce.journal"):
        j.tick(1000.0)
    assert any("deleted or replaced" in r.getMessage() for r in caplog.records)
    assert {e.batch_id for e in read_journal(tmp_path).entries} == {0, 1, 2}
