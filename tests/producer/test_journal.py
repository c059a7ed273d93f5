"""The batch journal (bruce.producer.idempotence.journal): records read back as written, a torn tail and a damaged
record, the deletion rule (oldest first, every batch finished, and with a spool: its messages gone), the OFF mark, and
when records reach the disk (sync_ms; the library's state_sync_ms)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from bruce.producer.config import ProducerConfig
from bruce.producer.errors import ConfigError
from bruce.producer.idempotence.journal import FILE_BYTES, Journal, JournalEntry, journal_files, read_journal, runs_of
from bruce.producer.idempotence.journal_records import HEADER_BYTES, encode_sent
from bruce.producer.idempotence.state_path import ProducerState


def _journal(directory: Path, **kwargs: object) -> Journal:
    journal = Journal(directory, **kwargs)  # type: ignore[arg-type]
    journal.open()
    return journal


def test_runs_of_groups_consecutive_sequences_and_leaves_out_unspooled_ones() -> None:
    assert runs_of([5, 6, 7, -1, 9, 10, 3]) == [(5, 3), (9, 2), (3, 1)]
    assert runs_of([-1, -1]) == []


def test_records_read_back_with_their_fates_and_the_offsets_acknowledged(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    j.sent(0, ("t", 0), (7, 0, 0), 3, [(100, 3)])
    j.sent(1, ("t", 0), (7, 0, 3), 2, [(103, 2)])
    j.sent(2, ("t", 1), (7, 0, 0), 1, [(105, 1)], b"payload")
    j.finished(0, ("t", 0), 40)
    j.finished(2, ("t", 1), -1)
    state = read_journal(tmp_path)
    assert [(e.batch_id, e.finished) for e in state.entries] == [(0, 40), (1, None), (2, -1)]
    second = state.entries[1]
    assert (second.producer_id, second.producer_epoch, second.base_sequence, second.count) == (7, 0, 3, 2)
    assert second.known_offset == -1 and list(second.sequences()) == [103, 104]  # sent before 0's acknowledgement
    assert state.entries[2].payload == b"payload" and not state.entries[2].acknowledged
    assert state.acked == {("t", 0): 40}
    assert state.complete and state.next_id == 3 and state.next_file == 1
    j.sent(3, ("t", 0), (7, 0, 5), 1, [(106, 1)])
    assert read_journal(tmp_path).entries[-1].known_offset == 40  # it can only be stored after offset 40


def test_a_renumbered_batch_keeps_its_latest_identity(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    j.sent(0, ("t", 0), (7, 0, 5), 2, [(1, 2)])
    j.sent(0, ("t", 0), (7, 1, 0), 2, [(1, 2)])
    (entry,) = read_journal(tmp_path).entries
    assert (entry.producer_epoch, entry.base_sequence) == (1, 0)


def test_a_torn_tail_is_the_end_and_a_damaged_record_is_counted(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    for bid in range(3):
        j.sent(bid, ("t", 0), (7, 0, bid), 1, [(bid, 1)])
    (_, path) = journal_files(tmp_path)[0]
    data = path.read_bytes()
    path.write_bytes(data + encode_sent(JournalEntry(3, 7, 0, "t", 0, 3, 1, -1, [(3, 1)]))[:-5])  # cut by a crash
    state = read_journal(tmp_path)
    assert [e.batch_id for e in state.entries] == [0, 1, 2] and state.damaged == 0 and state.complete
    damaged = bytearray(data)
    damaged[HEADER_BYTES + 12] ^= 0xFF  # a flipped bit in the first record's body
    path.write_bytes(bytes(damaged))
    state = read_journal(tmp_path)
    assert [e.batch_id for e in state.entries] == [1, 2] and state.damaged == 1 and not state.complete


def test_files_go_oldest_first_once_their_batches_are_finished(tmp_path: Path) -> None:
    j = _journal(tmp_path, file_bytes=200)
    for bid in range(6):
        j.sent(bid, ("t", 0), (7, 0, bid), 1, [(bid, 1)])
    files = [n for n, _ in journal_files(tmp_path)]
    assert len(files) > 2
    j.finished(1, ("t", 0), 1)  # a batch of the first file: the file still has open ones
    assert journal_files(tmp_path)[0][0] == files[0]
    for bid in (0, 2, 3, 4, 5):
        j.finished(bid, ("t", 0), bid)
    assert [n for n, _ in journal_files(tmp_path)] == [j._active]  # only the active one is left


def test_with_a_spool_a_file_stays_until_its_messages_left_the_spool(tmp_path: Path) -> None:
    held = [0]
    j = _journal(tmp_path, file_bytes=120, held_from=lambda: held[0])
    j.sent(0, ("t", 0), (7, 0, 0), 10, [(0, 10)])
    j.sent(1, ("t", 0), (7, 0, 10), 10, [(10, 10)])
    j.finished(0, ("t", 0), 0)
    j.finished(1, ("t", 0), 10)
    first = journal_files(tmp_path)[0][0]
    assert first == 0  # finished, but the spool still holds sequences 0-9
    held[0] = 10
    j.delete_settled()
    assert journal_files(tmp_path)[0][0] != 0


def test_a_clean_close_leaves_a_mark_and_off_is_remembered(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    j.sent(0, ("t", 0), (7, 0, 0), 1, [(0, 1)])
    j.finished(0, ("t", 0), 3)
    j.close()
    state = read_journal(tmp_path)
    assert journal_files(tmp_path) and state.complete
    k = Journal(tmp_path, next_id=state.next_id, next_file=state.next_file)
    k.open(old=state.files)
    k.off()
    assert not read_journal(tmp_path).complete
    assert FILE_BYTES >= 1 << 20


def _count_syncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    synced: list[int] = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (synced.append(fd), real(fd)))
    return synced


def test_tick_syncs_in_the_background_once_sync_ms_passed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    j = _journal(tmp_path, sync_ms=100)
    synced = _count_syncs(monkeypatch)
    j.tick(1000.0)  # nothing written since the file was made (and synced): nothing to sync
    j.sent(0, ("t", 0), (7, 0, 0), 1, [(0, 1)])
    assert synced == []  # not in the caller's thread
    j.tick(1000.0)
    assert j._syncing is not None
    j._syncing.result(5)  # in the sync thread, on a duplicate descriptor
    assert len(synced) == 1
    j.sent(1, ("t", 0), (7, 0, 1), 1, [(1, 1)])
    j.tick(1000.05)  # written, but 100 ms have not passed since the last sync began
    assert len(synced) == 1 and j._syncing is None
    j.tick(1000.1)
    assert j._syncing is not None
    j._syncing.result(5)
    assert len(synced) == 2
    j.tick(1000.3)  # nothing new: reaps the finished sync, starts none
    assert j._syncing is None and len(synced) == 2
    j.close()
    assert [e.batch_id for e in read_journal(tmp_path).entries] == [0, 1]


def test_sync_ms_0_syncs_each_sent_record_before_returning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    j = _journal(tmp_path, sync_ms=0)
    synced = _count_syncs(monkeypatch)
    j.sent(0, ("t", 0), (7, 0, 0), 1, [(0, 1)])
    assert len(synced) == 1  # on disk before the batch goes out
    j.finished(0, ("t", 0), 5)
    assert len(synced) == 1  # a FINISHED record waits: losing it costs a look at the log, not a duplicate
    j.sent(1, ("t", 0), (7, 0, 1), 1, [(1, 1)])
    assert len(synced) == 2
    j.close()
    with pytest.raises(ValueError, match="sync_ms"):
        Journal(tmp_path, sync_ms=-1)


def test_a_file_is_synced_before_the_next_one_is_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    j = _journal(tmp_path, file_bytes=200, sync_ms=10_000)
    synced = _count_syncs(monkeypatch)
    fsynced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsynced.append(fd), real_fsync(fd)))
    for n in range(6):
        j.sent(n, ("t", 0), (7, 0, n), 1, [(n, 1)])
    files = len(journal_files(tmp_path))
    assert files >= 2
    # each roll: the full file, the new file's header, and the directory (the new name)
    assert len(synced) == 2 * (files - 1) and len(fsynced) == files - 1
    j.close()


def test_the_library_state_syncs_its_journal_every_state_sync_ms(tmp_path: Path) -> None:
    """ProducerState's timer (a task of the producer's): a record written is synced within ``state_sync_ms``."""

    async def run() -> int:
        state = ProducerState(str(tmp_path), sync_ms=20)
        task = asyncio.get_running_loop().create_task(state.sync_loop())
        syncs = state.journal.syncs
        state.journal.sent(0, ("t", 0), (7, 0, 0), 1, [], b"batch")
        assert state.journal.syncs == syncs  # not in the caller's thread
        await asyncio.sleep(0.3)
        done = state.journal.syncs - syncs
        task.cancel()
        state.close()
        return done

    assert asyncio.run(run()) == 1
    with pytest.raises(ConfigError, match="state_sync_ms"):
        ProducerConfig(state_sync_ms=-1)
