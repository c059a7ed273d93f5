"""A damaged batch journal is never taken for a complete one (bruce.producer.idempotence.journal_reader): a flipped bit
in a record's length in the middle of a file, a file cut at a record boundary or in the middle of a record, a file of
the chain deleted — each makes the journal unable to vouch (``complete`` false: the daemon's replays are possible
duplicates) and is named in one log line; records after damage in the middle are still read. A torn tail written after
the last vouched record (a crash while writing it) is the normal end of a crash and costs nothing."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bruce.producer.idempotence.journal import Journal, journal_files, read_journal


def _journal(directory: Path, batches: int = 10, **kwargs: object) -> tuple[Journal, list[int]]:
    """A journal with ``batches`` SENT records (batch i: spool sequence i), and the offsets where each record starts."""
    j = Journal(directory, **kwargs)  # type: ignore[arg-type]
    j.open()
    starts = []
    for bid in range(batches):
        starts.append(j._size)
        j.sent(bid, ("t", 0), (7, 0, bid), 1, [(bid, 1)])
    return j, starts


def _only_file(directory: Path) -> Path:
    ((_, path),) = journal_files(directory)
    return path


def test_a_flipped_bit_in_a_length_in_the_middle_is_damage_and_the_records_after_it_are_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _, starts = _journal(tmp_path)
    path = _only_file(tmp_path)
    data = bytearray(path.read_bytes())
    data[starts[4]] ^= 0x80  # the length of the fifth record now runs past the end of the file
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.ERROR, "bruce.journal"):
        state = read_journal(tmp_path)
    assert not state.complete and state.damaged == 1
    assert [e.batch_id for e in state.entries] == [0, 1, 2, 3, 5, 6, 7, 8, 9]  # resynchronised after the damage
    (line,) = [r.getMessage() for r in caplog.records]
    assert str(path) in line and f"offset {starts[4]}" in line


@pytest.mark.parametrize("where", ["at a record boundary", "in the middle of a record"])
def test_a_file_cut_short_is_damage_not_a_torn_tail(
    tmp_path: Path, where: str, caplog: pytest.LogCaptureFixture
) -> None:
    _, starts = _journal(tmp_path)
    path = _only_file(tmp_path)
    data = path.read_bytes()
    cut = starts[5] if where == "at a record boundary" else starts[5] + 7
    path.write_bytes(data[:cut])
    with caplog.at_level(logging.ERROR, "bruce.journal"):
        state = read_journal(tmp_path)
    assert not state.complete
    assert [e.batch_id for e in state.entries] == [0, 1, 2, 3, 4]
    (line,) = [r.getMessage() for r in caplog.records]
    assert str(path) in line and "cut" in line


def test_a_torn_write_after_the_last_vouched_record_is_the_end_of_a_crash(tmp_path: Path) -> None:
    """The process died while writing a record: its batch was not sent yet (``sent`` had not returned)."""
    _journal(tmp_path)
    path = _only_file(tmp_path)
    with open(path, "ab") as f:
        f.write(b"\x00\x00\x00\x40\x12\x34")  # the start of a record the crash cut
    state = read_journal(tmp_path)
    assert state.complete and state.damaged == 0 and len(state.entries) == 10


def test_a_damaged_last_record_that_was_vouched_for_is_damage(tmp_path: Path) -> None:
    _, starts = _journal(tmp_path)
    path = _only_file(tmp_path)
    data = bytearray(path.read_bytes())
    data[starts[9]] ^= 0x40  # the last record's length, written (and vouched for) before its batch went out
    path.write_bytes(bytes(data))
    state = read_journal(tmp_path)
    assert not state.complete and [e.batch_id for e in state.entries] == list(range(9))


def test_a_missing_file_of_the_chain_is_found(tmp_path: Path) -> None:
    """Files roll; one in the middle, or the newest, is deleted by someone else: the records it held are unknown."""
    j, _ = _journal(tmp_path, batches=12, file_bytes=300)
    numbers = [n for n, _ in journal_files(tmp_path)]
    assert len(numbers) >= 3
    (tmp_path / journal_files(tmp_path)[1][1].name).unlink()
    assert not read_journal(tmp_path).complete
    j.close()
    for _, path in journal_files(tmp_path):
        path.unlink()
    k, _ = _journal(tmp_path, batches=12, file_bytes=300)
    k.close()
    assert read_journal(tmp_path).complete
    journal_files(tmp_path)[-1][1].unlink()  # the newest: the file before it says another followed
    assert not read_journal(tmp_path).complete


def test_a_new_run_marks_the_last_run_s_newest_file_so_its_own_files_are_missed_if_deleted(tmp_path: Path) -> None:
    """A clean stop, then a run whose only file is deleted before a crash: the older file says a newer one followed."""
    j, _ = _journal(tmp_path, batches=3)
    j.close()
    state = read_journal(tmp_path)
    k = Journal(tmp_path, next_id=state.next_id, next_file=state.next_file)
    k.open(old=state.files)
    k.sent(3, ("t", 0), (8, 0, 0), 1, [(3, 1)])
    journal_files(tmp_path)[-1][1].unlink()
    assert not read_journal(tmp_path).complete
