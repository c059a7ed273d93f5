"""The spool under failure: disk errors degrade it (never raise), a second opener is refused, a killed writer loses
nothing it wrote, damaged segments are recovered as documented."""

from __future__ import annotations

import errno
import logging
import os
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bruce.proxy.spool import NOT_SPOOLED, Spool, SpoolLocked
from bruce.proxy.spool.format import HEADER_SIZE, encode_burst

from .test_spool_writer import _crash, burst, open_spool, replay_all, segment_files


def _seqs(spool: Spool, on_corrupt: Callable[..., None] | None = None) -> list[int]:
    return [r.sequence for r in replay_all(spool, on_corrupt)]


# ---------------------------------------------------------------- disk errors


def test_enospc_mid_write_degrades_and_cuts_the_partial_burst(tmp_path: Path, caplog) -> None:
    with open_spool(tmp_path) as spool:
        assert spool.append(burst(3)) == 0
        real = spool._write

        def half_then_enospc(fd: int, data) -> int:
            if len(data) > 40:
                return real(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        spool._write = half_then_enospc
        with caplog.at_level(logging.ERROR, logger="bruce.spool"):
            assert spool.append(burst(4)) == NOT_SPOOLED
            assert spool.append(burst(4)) == NOT_SPOOLED  # stays memory-only
        assert spool.degraded is not None and "ENOSPC" in spool.degraded
        assert spool.stats()["SpoolDegraded"] == 1
        assert spool.not_spooled == 8
        assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1  # logged once
        assert "held in memory only" in caplog.records[0].message
    with open_spool(tmp_path) as spool:  # the file was cut back to the whole first burst
        assert _seqs(spool) == [0, 1, 2]
        assert spool.corrupt == 0


def test_eio_on_fsync_degrades_after_the_burst_is_written(tmp_path: Path) -> None:
    with open_spool(tmp_path, fsync_ms=0) as spool:

        def eio(fd: int) -> None:
            raise OSError(errno.EIO, os.strerror(errno.EIO))

        spool.syncer.fdatasync = eio
        assert spool.append(burst(2)) == 0  # written to the file: tracked, done later like any other
        assert spool.degraded is not None and "EIO" in spool.degraded
        assert spool.append(burst(2)) == NOT_SPOOLED
        spool.done_run(0, 2)
    assert segment_files(tmp_path) == []


def test_erofs_when_creating_a_segment(tmp_path: Path) -> None:
    with open_spool(tmp_path) as spool:
        real_open = os.open

        def refuse(path, flags, *args):
            if str(path).endswith(".seg"):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS))
            return real_open(path, flags, *args)

        os_open, os.open = os.open, refuse
        try:
            assert spool.append(burst(2)) == NOT_SPOOLED
        finally:
            os.open = os_open
        assert "EROFS" in (spool.degraded or "")


def test_an_unusable_directory_degrades_at_open(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"")
    with open_spool(tmp_path / "file" / "spool") as spool:
        assert spool.degraded is not None and "opening" in spool.degraded
        assert spool.append(burst(1)) == NOT_SPOOLED
        assert replay_all(spool) == []


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs: a real ENOSPC. Needs the right to mount (root here; CI runs the injected test above)."""
    where = tmp_path / "tmpfs"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)], capture_output=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip()}); ENOSPC is tested by injection")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def test_real_enospc_on_a_small_tmpfs(small_tmpfs: Path) -> None:
    with open_spool(small_tmpfs, segment_bytes=1 << 30, max_bytes=1 << 30) as spool:
        firsts = [spool.append(burst(50, size=200)) for _ in range(20)]  # ~220 KiB into 64 KiB
        spooled = [f for f in firsts if f >= 0]
        assert spooled and NOT_SPOOLED in firsts
        assert "ENOSPC" in (spool.degraded or "")
        written = spool.next_sequence
    with open_spool(small_tmpfs) as spool:
        assert _seqs(spool) == list(range(written))  # whole bursts only: the failed one was cut off
        assert spool.corrupt == 0


# ---------------------------------------------------------------- the lock


def test_a_second_opener_is_refused_with_the_holder(tmp_path: Path) -> None:
    with open_spool(tmp_path):
        with pytest.raises(SpoolLocked) as refused:
            open_spool(tmp_path)
        message = str(refused.value)
        assert str(tmp_path) in message and f"process {os.getpid()}" in message
    with open_spool(tmp_path):  # released on close
        pass


_HOLDER = """
import sys, time
from pathlib import Path
from bruce.proxy.spool import Spool, SpoolConfig, SpoolMessage
spool = Spool.open(SpoolConfig(Path(sys.argv[1]), fsync_ms=100))
print("locked", flush=True)
seq = 0
while True:
    first = spool.append([SpoolMessage(b"t", None, None, b"%d" % (seq + i), i) for i in range(int(sys.argv[2]))])
    spool.tick()
    if first >= 0:
        seq = first + int(sys.argv[2])
        print(seq, flush=True)
    if sys.argv[2] == "0":
        time.sleep(0.05)
"""


def _start_holder(directory: Path, burst_size: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_HOLDER), str(directory), str(burst_size)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "locked\n"
    return proc


def test_another_process_holding_the_spool_is_named(tmp_path: Path) -> None:
    holder = _start_holder(tmp_path, 0)
    try:
        with pytest.raises(SpoolLocked, match=f"in use by process {holder.pid}"):
            open_spool(tmp_path)
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    with open_spool(tmp_path):  # the kernel released the lock of the killed process
        pass


def test_deleting_the_lock_file_lets_no_second_opener_in(tmp_path: Path) -> None:
    """The lock is on the directory, not on the file's existence: ``rm DIR/lock`` while one spool (here: another
    process) holds it does not let a second one open the directory."""
    holder = _start_holder(tmp_path, 0)
    try:
        (tmp_path / "lock").unlink()
        with pytest.raises(SpoolLocked, match=f"spool directory {tmp_path} is in use"):
            open_spool(tmp_path)
        with open_spool(tmp_path / "other"):  # another directory is another spool
            pass
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    with open_spool(tmp_path) as spool:  # released by the holder's death
        assert spool.degraded is None
        assert (tmp_path / "lock").read_text() == f"{os.getpid()}\n"


def test_deleting_the_lock_file_in_process_still_refuses_a_second_spool(tmp_path: Path) -> None:
    with open_spool(tmp_path):
        (tmp_path / "lock").unlink()
        with pytest.raises(SpoolLocked, match="in use by another process"):
            open_spool(tmp_path)


def test_kill_9_under_load_loses_nothing_written(tmp_path: Path) -> None:
    writer = _start_holder(tmp_path, 64)
    assert writer.stdout is not None
    try:
        last = 0
        for _ in range(200):  # let it write a while
            last = int(writer.stdout.readline())
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
    with open_spool(tmp_path) as spool:
        records = replay_all(spool)
        seqs = [r.sequence for r in records]
        assert seqs == list(range(len(seqs)))  # in order, no gap
        assert len(seqs) >= last  # every burst acknowledged before the kill (page cache survives a process crash)
        assert all(r.value == b"%d" % r.sequence for r in records)
        assert spool.corrupt == 0


# ---------------------------------------------------------------- damaged segments on reopen


def _two_segments(directory: Path) -> list[str]:
    one = len(encode_burst(0, burst(5)))
    with open_spool(directory, segment_bytes=HEADER_SIZE + one) as spool:
        spool.append(burst(5))
        spool.append(burst(5))
    return segment_files(directory)


def test_torn_tail_of_the_newest_segment_is_truncated(tmp_path: Path) -> None:
    names = _two_segments(tmp_path)
    newest = tmp_path / names[-1]
    good = newest.stat().st_size
    with newest.open("ab") as f:
        f.write(encode_burst(10, burst(1))[:-7])  # a crash in the middle of a write
    reported: list[tuple] = []
    with open_spool(tmp_path) as spool:
        assert newest.stat().st_size == good
        assert _seqs(spool, lambda *args: reported.append(args)) == list(range(10))
        assert spool.corrupt == 1  # at least one message read from the socket, cut by the crash: counted
        assert spool.next_sequence == 10
    ((file, offset, count, detail),) = reported
    assert (file, offset, count) == (str(newest), good, 1) and "torn write (" in detail, detail


def test_flipped_byte_in_an_older_segment_is_skipped_and_reported(tmp_path: Path) -> None:
    names = _two_segments(tmp_path)
    older = tmp_path / names[0]
    data = bytearray(older.read_bytes())
    data[HEADER_SIZE + 20] ^= 0xFF  # inside the first record
    older.write_bytes(bytes(data))
    reported: list[tuple] = []
    with open_spool(tmp_path) as spool:
        assert _seqs(spool, lambda *args: reported.append(args)) == list(range(1, 10))
        assert spool.corrupt == 1 and spool.stats()["SpoolCorrupt"] == 1
        assert reported == [(str(older), HEADER_SIZE, 1, "CRC-32C mismatch")]
        spool.done_run(1, 9)
    assert segment_files(tmp_path) == []  # the corrupt record is never pending


def test_a_segment_of_a_newer_format_is_left_in_place(tmp_path: Path) -> None:
    names = _two_segments(tmp_path)
    older = tmp_path / names[0]
    data = bytearray(older.read_bytes())
    data[5] = 2  # version 2, with a valid CRC
    from bruce.wire.crc import crc32c

    data[24:28] = crc32c(bytes(data[:24])).to_bytes(4, "big")
    older.write_bytes(bytes(data))
    with open_spool(tmp_path) as spool:
        assert _seqs(spool) == list(range(5, 10))
        spool.done_run(5, 5)
        assert spool.append(burst(1)) == 10
        assert spool.stats()["SpoolSegments"] == 2  # the unreadable one and the new one
        spool.done_run(10, 1)
    assert segment_files(tmp_path) == [names[0]]


def test_a_crash_while_creating_a_segment_leaves_nothing_to_replay(tmp_path: Path) -> None:
    _two_segments(tmp_path)
    (tmp_path / f"{10:020d}.seg").write_bytes(b"BSPL\x00")  # the header was cut short
    with open_spool(tmp_path) as spool:
        assert _seqs(spool) == list(range(10))
        assert spool.append(burst(1)) == 11
        assert f"{10:020d}.seg" not in segment_files(tmp_path)


def test_a_failed_delete_is_logged_once_and_replayed_later(tmp_path: Path, caplog, monkeypatch) -> None:
    _two_segments(tmp_path)

    def eacces(path) -> None:
        raise PermissionError(errno.EACCES, "denied")

    with open_spool(tmp_path) as spool, caplog.at_level(logging.ERROR, logger="bruce.spool"):
        seqs = _seqs(spool)
        monkeypatch.setattr(os, "unlink", eacces)
        spool.done_many(seqs)
        monkeypatch.undo()
        assert len(caplog.records) == 1 and "cannot delete" in caplog.records[0].message
    with open_spool(tmp_path) as spool:
        assert _seqs(spool) == list(range(10))  # duplicates, not losses


def test_names_that_are_not_segments_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text(uuid.uuid4().hex)
    (tmp_path / "12.seg").write_bytes(b"")  # not 20 digits
    with open_spool(tmp_path) as spool:
        assert spool.append(burst(1)) == 0
        assert replay_all(spool) == []


@pytest.mark.parametrize("pieces_before", [1, 2], ids=["in the active segment", "in a segment of its own"])
def test_a_burst_cut_by_a_failed_roll_leaves_none_of_its_records_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pieces_before: int
) -> None:
    """A burst spans segments; creating the next one fails (an immutable directory, a full disk): the whole burst is
    NOT_SPOOLED and goes on in memory only — so the pieces already written must not be replayed at the next start
    (delivered from memory and replayed, they would be delivered twice, unreported)."""
    spool = open_spool(tmp_path, segment_bytes=1024)
    spool.append(burst(5))
    created = [0]
    real_open = os.open

    def refuse_the_last(path: object, flags: int, *args: int) -> int:
        if str(path).endswith(".seg"):
            created[0] += 1
            if created[0] > pieces_before - 1:
                raise OSError(errno.EPERM, os.strerror(errno.EPERM))
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refuse_the_last)
    assert spool.append(burst(40)) == NOT_SPOOLED  # 40 records: three or four segments of 1 KiB
    monkeypatch.undo()
    _crash(spool)
    with open_spool(tmp_path, segment_bytes=1024) as again:
        assert _seqs(again) == [0, 1, 2, 3, 4]
        assert again.corrupt == 0


def test_a_burst_whose_next_piece_cannot_be_written_leaves_none_of_its_records_behind(tmp_path: Path) -> None:
    """The next segment is made, but writing into it fails (a full disk): the same — and it never raises."""
    spool = open_spool(tmp_path, segment_bytes=1024)
    spool.append(burst(5))
    writes = [0]

    def second_piece_fails(fd: int, data: object) -> int:
        writes[0] += 1
        if writes[0] > 2:  # the first piece, then the new segment's header
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return os.write(fd, data)  # type: ignore[arg-type]

    spool._write = second_piece_fails  # type: ignore[method-assign]
    assert spool.append(burst(40)) == NOT_SPOOLED
    assert "ENOSPC" in (spool.degraded or "")
    _crash(spool)
    with open_spool(tmp_path, segment_bytes=1024) as again:
        assert _seqs(again) == [0, 1, 2, 3, 4]
        assert again.corrupt == 0
