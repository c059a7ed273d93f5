"""The spool on a real directory: append, roll, replay after a reopen, delete when done, fsync policy, full policy."""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bruce.proxy.spool import NOT_SPOOLED, SPOOL_FULL, FullPolicy, Spool, SpoolConfig, SpoolMessage, SpoolRecord
from bruce.proxy.spool.format import HEADER_SIZE, encode_burst


def burst(n: int, tag: str = "m", *, size: int = 20) -> list[SpoolMessage]:
    def value(i: int) -> bytes:
        return (f"{tag}{i}-".encode() * size)[:size]

    return [SpoolMessage(b"topic", i if i % 3 == 0 else None, None if i % 2 else b"key", value(i), i) for i in range(n)]


def open_spool(directory: Path, **settings) -> Spool:
    return Spool.open(SpoolConfig(directory, **settings))


def replay_all(spool: Spool, on_corrupt: Callable[[str, int, int, str], None] | None = None) -> list[SpoolRecord]:
    return [r for chunk in spool.replay(on_corrupt=on_corrupt) for r in chunk]


def segment_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.suffix == ".seg")


def test_what_was_appended_is_replayed_in_order_after_a_reopen(tmp_path: Path) -> None:
    sent = [burst(5, "a"), burst(1, "b"), burst(7, "c")]
    with open_spool(tmp_path) as spool:
        firsts = [spool.append(b) for b in sent]
        assert firsts == [0, 5, 6]
        assert spool.stats()["SpoolAppended"] == 13
        assert spool.pending == 13
    with open_spool(tmp_path, replay_burst=4) as spool:
        chunks = list(spool.replay())
        assert [len(c) for c in chunks] == [4, 4, 4, 1]
        records = [r for c in chunks for r in c]
        assert [r.message() for r in records] == [m for b in sent for m in b]
        assert [r.sequence for r in records] == list(range(13))
        assert spool.replayed == 13
        assert spool.append(burst(1)) == 13  # new input follows the replayed sequences


def test_segments_roll_by_size_and_go_when_done(tmp_path: Path) -> None:
    one = len(encode_burst(0, burst(4)))
    with open_spool(tmp_path, segment_bytes=HEADER_SIZE + 2 * one) as spool:
        firsts = [spool.append(burst(4)) for _ in range(5)]  # two bursts per segment
        assert segment_files(tmp_path) == [f"{b:020d}.seg" for b in (0, 8, 16)]
        assert spool.bytes == sum(p.stat().st_size for p in tmp_path.glob("*.seg"))
        spool.done_run(firsts[1], 4)
        assert len(segment_files(tmp_path)) == 3  # half of segment 0 is pending
        spool.done_run(firsts[0], 4)
        assert segment_files(tmp_path) == [f"{b:020d}.seg" for b in (8, 16)]
        spool.done_many(list(range(8, 20)))
        assert segment_files(tmp_path) == [f"{16:020d}.seg"]  # the active segment stays while it is written
        assert spool.stats()["SpoolSegments"] == 1
    assert segment_files(tmp_path) == []  # closed with everything done: an empty spool
    assert sorted(os.listdir(tmp_path)) == ["lock", "manifest"]


def test_a_burst_larger_than_a_segment_is_cut_across_segments(tmp_path: Path) -> None:
    with open_spool(tmp_path, segment_bytes=200) as spool:
        assert [spool.append(burst(n)) for n in (1, 20, 1)] == [0, 1, 21]
        assert len(segment_files(tmp_path)) == 11  # two records of about 65 bytes per segment
        assert max(p.stat().st_size for p in tmp_path.glob("*.seg")) <= 200
    with open_spool(tmp_path) as spool:
        assert [r.sequence for r in replay_all(spool)] == list(range(22))


def test_after_a_clean_close_only_what_is_not_done_is_replayed(tmp_path: Path) -> None:
    with open_spool(tmp_path) as spool:
        spool.append(burst(10))
        spool.done_run(2, 6)
    segment = "00000000000000000000.seg"
    assert sorted(os.listdir(tmp_path)) == [segment, segment + ".done", "lock", "manifest"]
    with open_spool(tmp_path) as spool:
        assert [r.sequence for r in replay_all(spool)] == [0, 1, 8, 9]
        assert spool.stats()["SpoolSkippedDone"] == 6
        spool.done_many([1, 8])
    with open_spool(tmp_path) as spool:  # the bitmap grows across clean restarts
        assert [r.sequence for r in replay_all(spool)] == [0, 9]
        first_new = spool.append(burst(2))
        spool.done_many([0, 9])
        # the done file went first; the tail mark stays while the spool is open
        assert sorted(os.listdir(tmp_path)) == [f"{first_new:020d}.seg", "lock", "manifest", "tail"]
        spool.done_run(first_new, 2)
    assert segment_files(tmp_path) == []


def _crash(spool: Spool) -> None:
    """Let go of the spool as a killed process would: no sync, no close, no done files."""
    if spool._fd is not None:
        os.close(spool._fd)
    spool._tail.close()
    assert spool._lock_fd is not None
    os.close(spool._lock_fd)


def test_after_a_crash_a_partly_done_segment_is_replayed_whole(tmp_path: Path) -> None:
    spool = open_spool(tmp_path)
    spool.append(burst(10))
    spool.done_run(0, 6)
    _crash(spool)
    with open_spool(tmp_path) as spool:
        records = replay_all(spool)
        assert [r.sequence for r in records] == list(range(10))  # at-least-once: 0-5 come again
        spool.done_many([r.sequence for r in records])
    assert segment_files(tmp_path) == []


def test_a_done_file_applies_only_to_its_own_segment(tmp_path: Path) -> None:
    now = [1000]
    spool = Spool.open(SpoolConfig(tmp_path), wall_ms=lambda: now[0])
    spool.append(burst(4))
    spool.done_run(0, 2)
    spool.close()
    done = (tmp_path / "00000000000000000000.seg.done").read_bytes()
    with open_spool(tmp_path) as spool:
        spool.done_many([r.sequence for r in replay_all(spool)])
    now[0] = 2000
    spool = Spool.open(SpoolConfig(tmp_path), wall_ms=lambda: now[0])  # empty again: sequences start at 0 again
    spool.append(burst(4))
    _crash(spool)
    (tmp_path / "00000000000000000000.seg.done").write_bytes(done)  # a done file of the earlier segment 0
    with open_spool(tmp_path) as spool:
        assert [r.sequence for r in replay_all(spool)] == [0, 1, 2, 3]


def test_damaged_and_orphaned_done_files_are_not_used(tmp_path: Path) -> None:
    with open_spool(tmp_path) as spool:
        spool.append(burst(4))
        spool.done_run(0, 2)
    path = tmp_path / "00000000000000000000.seg.done"
    data = bytearray(path.read_bytes())
    data[-6] ^= 0x01
    path.write_bytes(bytes(data))
    (tmp_path / f"{500:020d}.seg.done").write_bytes(b"orphan")
    (tmp_path / f"{600:020d}.seg.done.tmp").write_bytes(b"unfinished")
    with open_spool(tmp_path) as spool:
        assert sorted(os.listdir(tmp_path)) == ["00000000000000000000.seg", "lock", "manifest"]
        assert [r.sequence for r in replay_all(spool)] == [0, 1, 2, 3]


def test_fsync_every_burst_with_zero(tmp_path: Path) -> None:
    with open_spool(tmp_path, fsync_ms=0) as spool:
        for _ in range(3):
            spool.append(burst(2))
        assert spool.syncer.fsyncs == 3
        assert spool.stats()["SpoolFsyncMaxUs"] >= spool.stats()["SpoolFsyncLastUs"] >= 0


def test_fsync_on_the_timer_otherwise_in_the_sync_thread(tmp_path: Path) -> None:
    calls: list[str] = []
    with open_spool(tmp_path, fsync_ms=100) as spool:
        real = spool.syncer.fdatasync

        def recording(fd: int) -> None:
            calls.append(threading.current_thread().name)
            real(fd)

        spool.syncer.fdatasync = recording
        spool.append(burst(2))
        spool.append(burst(2))
        start = spool._last_sync
        spool.tick(start + 0.05)
        assert calls == [] and not spool.syncer.busy
        spool.tick(start + 0.1)
        spool.syncer.reap(timeout=None)
        assert len(calls) == 1 and calls[0].startswith("bruce-spool-sync")
        assert spool.syncer.fsyncs == 1
        spool.tick(start + 10)  # nothing new written: no sync
        assert not spool.syncer.busy and len(calls) == 1
        spool.append(burst(1))
    assert len(calls) == 2 and calls[1] == threading.current_thread().name  # close syncs what is left, itself


def test_an_error_in_the_sync_thread_degrades_on_the_next_tick(tmp_path: Path) -> None:
    with open_spool(tmp_path, fsync_ms=1) as spool:

        def eio(fd: int) -> None:
            raise OSError(errno.EIO, os.strerror(errno.EIO))

        spool.syncer.fdatasync = eio
        spool.append(burst(2))
        spool.tick(spool._last_sync + 1)
        assert spool.syncer.busy
        assert spool.syncer._running is not None
        spool.syncer._running.exception(timeout=10)
        spool.tick()
        assert spool.degraded is not None and "EIO" in spool.degraded
        assert spool.append(burst(1)) == NOT_SPOOLED


@pytest.mark.parametrize("policy", list(FullPolicy))
def test_full_spool_policy(tmp_path: Path, policy: FullPolicy) -> None:
    one = len(encode_burst(0, burst(4)))
    with open_spool(tmp_path, max_bytes=HEADER_SIZE + 2 * one, full_policy=policy) as spool:
        assert spool.append(burst(4)) == 0
        assert spool.append(burst(4)) == 4
        refused = spool.append(burst(4))
        assert refused == (NOT_SPOOLED if policy is FullPolicy.MEMORY else SPOOL_FULL)
        assert spool.full == 4
        assert spool.not_spooled == (4 if policy is FullPolicy.MEMORY else 0)
        assert spool.next_sequence == 8  # nothing was consumed
        spool.done_run(0, 4)
        assert spool.append(burst(4)) == refused  # the active segment still holds a pending message
        spool.done_run(4, 4)  # all done: the active segment makes room for a new one
        assert spool.bytes == HEADER_SIZE + 2 * one
        assert spool.append(burst(4)) == 8
        assert segment_files(tmp_path) == [f"{8:020d}.seg"]


def test_oldest_undelivered_age(tmp_path: Path) -> None:
    now = [1_000_000]
    spool = Spool.open(SpoolConfig(tmp_path, segment_bytes=250), wall_ms=lambda: now[0])
    with spool:
        assert spool.oldest_age_ms() == 0
        spool.append(burst(3))  # segment created at 1_000_000
        now[0] += 5000
        spool.append(burst(3))  # rolls: a segment created at 1_005_000
        now[0] += 1000
        assert spool.oldest_age_ms() == 6000
        spool.done_run(0, 3)
        assert spool.oldest_age_ms() == 1000
        assert spool.stats()["SpoolOldestMs"] == 1000
        spool.done_run(3, 3)
        assert spool.oldest_age_ms() == 0


def test_status_counters_are_named(tmp_path: Path) -> None:
    with open_spool(tmp_path) as spool:
        assert set(spool.stats()) == {
            "SpoolBytes",
            "SpoolSegments",
            "SpoolAppended",
            "SpoolReplayed",
            "SpoolSkippedDone",
            "SpoolCorrupt",
            "SpoolBadHeaders",
            "SpoolFull",
            "SpoolNotSpooled",
            "SpoolPending",
            "SpoolOldestMs",
            "SpoolFsyncs",
            "SpoolFsyncLastUs",
            "SpoolFsyncMaxUs",
            "SpoolDoneUnknown",
            "SpoolDegraded",
            "SpoolHeldOnDisk",
            "SpoolDiskOnly",
        }
        spool.done_many([7])
        assert spool.stats()["SpoolDoneUnknown"] == 1


def test_an_empty_burst_writes_nothing(tmp_path: Path) -> None:
    with open_spool(tmp_path) as spool:
        assert spool.append([]) == 0
        assert segment_files(tmp_path) == []


def test_the_tick_saves_done_files_so_a_crash_replays_only_what_was_not_done(tmp_path: Path) -> None:
    spool = Spool.open(SpoolConfig(tmp_path, done_every_ms=1000))
    spool.append(burst(10))
    spool.done_run(0, 4)
    spool.tick(time.monotonic() + 0.5)  # not yet due
    assert not list(tmp_path.glob("*.done"))
    spool.tick(time.monotonic() + 1.5)
    done = tmp_path / "00000000000000000000.seg.done"
    written = done.stat().st_mtime_ns
    spool.tick(time.monotonic() + 3.0)  # nothing changed: not written again
    assert done.stat().st_mtime_ns == written
    spool.done_many([4, 7])
    spool.tick(time.monotonic() + 4.5)
    _crash(spool)
    with open_spool(tmp_path) as spool:
        records = replay_all(spool)
        assert [r.sequence for r in records] == [5, 6, 8, 9]
        assert spool.skipped_done == 6
        spool.done_many([r.sequence for r in records])
    assert segment_files(tmp_path) == [] and not list(tmp_path.glob("*.done"))


def test_without_periodic_done_files_a_crash_replays_partly_done_segments_whole(tmp_path: Path) -> None:
    spool = Spool.open(SpoolConfig(tmp_path, done_every_ms=0))
    spool.append(burst(5))
    spool.done_run(0, 3)
    spool.tick(time.monotonic() + 100)
    _crash(spool)
    with open_spool(tmp_path) as spool:
        assert [r.sequence for r in replay_all(spool)] == [0, 1, 2, 3, 4]


def test_a_done_file_that_cannot_be_written_stops_the_periodic_save_only(tmp_path: Path, caplog) -> None:
    spool = Spool.open(SpoolConfig(tmp_path, done_every_ms=10))
    spool.append(burst(5))
    spool.done_run(0, 2)
    blocker = tmp_path / "00000000000000000000.seg.done.tmp"
    blocker.mkdir()  # opening the temporary file fails
    spool.tick(time.monotonic() + 1)
    assert "cannot write" in caplog.text
    blocker.rmdir()
    spool.done_run(2, 1)
    spool.tick(time.monotonic() + 2)  # no more periodic saves (one error logged), the spool goes on
    assert not list(tmp_path.glob("*.done")) and spool.degraded is None
    assert spool.append(burst(1)) == 5
    spool.close()  # the clean close still writes its done file
    assert list(tmp_path.glob("*.done"))
