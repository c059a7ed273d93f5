"""Segments deleted or cut short by anything but the spool are found at the next start (the manifest): logged with
the sequences lost, counted in ``SpoolCorrupt`` and reported to ``on_corrupt`` (SPOOL_CORRUPT discards); a damaged
header is logged and counted; segments the spool deleted itself (all done) are never reported."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest

from bruce.proxy.spool import Spool, SpoolConfig
from bruce.proxy.spool.format import encode_burst

from .test_spool_writer import _crash, burst, open_spool, replay_all, segment_files

SEGMENT = 400  # bytes: five records of about 65 bytes per segment


def _left(directory: Path, done: range = range(0)) -> list[Path]:
    """A spool left by a clean stop with 30 messages in 6 segments, those in ``done`` delivered."""
    with open_spool(directory, segment_bytes=SEGMENT) as spool:
        spool.append(burst(30))
        if done:
            spool.done_run(done.start, len(done))
    return sorted(directory.glob("*.seg"))


def _restart(directory: Path) -> tuple[list[int], list[tuple], Spool]:
    reported: list[tuple] = []
    spool = open_spool(directory, segment_bytes=SEGMENT)
    seqs = [r.sequence for r in replay_all(spool, lambda *args: reported.append(args))]
    return seqs, reported, spool


def _segment(directory: Path, base: int) -> tuple[Path, range]:
    """The segment file at ``base`` and its sequences (five per segment)."""
    path = directory / f"{base:020d}.seg"
    assert path.exists()
    return path, range(base, min(base + 5, 30))


def test_a_sealed_segment_deleted_by_hand_is_reported_with_its_range(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert len(_left(tmp_path)) == 6
    path, gone = _segment(tmp_path, 10)
    path.unlink()
    caplog.set_level(logging.ERROR, logger="bruce.spool")
    seqs, reported, spool = _restart(tmp_path)
    with spool:
        assert seqs == [s for s in range(30) if s not in gone]
        assert spool.corrupt == len(gone) and spool.stats()["SpoolCorrupt"] == len(gone)
        assert [(count, detail) for _, _, count, detail in reported] == [
            (len(gone), f"the segment is missing (sequences {gone.start}-{gone.stop - 1})")
        ]
        assert f"{path} offset 0: the segment is missing (sequences {gone.start}-{gone.stop - 1})" in caplog.text
        spool.done_many(seqs)
    with open_spool(tmp_path) as spool:  # reported once: the next start finds nothing missing
        assert replay_all(spool) == [] and spool.corrupt == 0


def test_what_a_deleted_segment_had_delivered_is_not_counted_lost(tmp_path: Path) -> None:
    _left(tmp_path, done=range(0, 12))
    path, gone = _segment(tmp_path, 10)  # partly done: 10 and 11 delivered
    path.unlink()  # its done file stays, as after `rm *.seg`
    seqs, _, spool = _restart(tmp_path)
    with spool:
        assert spool.corrupt == gone.stop - 12
        assert seqs == [s for s in range(12, 30) if s not in gone]


def test_a_sealed_segment_cut_to_its_header_is_reported(tmp_path: Path) -> None:
    _left(tmp_path)
    path, cut = _segment(tmp_path, 5)
    os.truncate(path, 28)
    seqs, reported, spool = _restart(tmp_path)
    with spool:
        assert seqs == [s for s in range(30) if s not in cut]
        assert spool.corrupt == len(cut)
        ((_, offset, count, detail),) = reported
        assert (offset, count) == (28, len(cut)) and f"not {cut.stop - 1}" in detail, detail


def test_the_newest_segment_cut_after_a_clean_stop_is_reported(tmp_path: Path) -> None:
    segments = _left(tmp_path)
    os.truncate(segments[-1], segments[-1].stat().st_size - 70)  # the last record and a bit of the one before
    seqs, reported, spool = _restart(tmp_path)
    with spool:
        assert seqs == list(range(28))
        assert spool.corrupt == 2 and [r[2] for r in reported] == [2]
        assert spool.append(burst(1)) == 30  # the lost sequences are not used again


def test_segments_the_spool_deleted_itself_are_not_reported(tmp_path: Path) -> None:
    _left(tmp_path, done=range(10, 20))  # the middle segments: all done, deleted
    assert [int(name[:20]) for name in segment_files(tmp_path)] == [0, 5, 20, 25]
    seqs, reported, spool = _restart(tmp_path)
    with spool:
        assert seqs == [*range(10), *range(20, 30)] and reported == [] and spool.corrupt == 0


@pytest.mark.parametrize("mark", [True, False], ids=["with the tail mark", "without"])
def test_the_active_segment_deleted_after_a_crash_is_counted(tmp_path: Path, mark: bool) -> None:
    """The manifest has no end for the segment being written; the tail mark has: each message counted. Without the
    mark (an older bruce's spool, a damaged mark) the count is "at least one"."""
    spool = open_spool(tmp_path, segment_bytes=SEGMENT)
    spool.append(burst(30))
    _crash(spool)
    newest = sorted(tmp_path.glob("*.seg"))[-1]
    base = int(newest.name[:20])
    newest.unlink()
    if not mark:
        (tmp_path / "tail").unlink()
    seqs, reported, spool = _restart(tmp_path)
    with spool:
        assert seqs == list(range(base))
        span = f"{base}-29" if mark else f"{base} on"
        assert [(r[2], r[3]) for r in reported] == [
            (30 - base if mark else 1, f"the segment is missing (sequences {span})")
        ]
        assert spool.append(burst(1)) > base  # never the base of the lost segment again


def test_a_damaged_header_is_logged_and_counted_and_its_records_replayed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    segments = _left(tmp_path)
    data = bytearray(segments[1].read_bytes())
    data[10] ^= 0xFF  # inside the base sequence: the header's CRC fails
    segments[1].write_bytes(bytes(data))
    caplog.set_level(logging.WARNING, logger="bruce.spool")
    seqs, reported, spool = _restart(tmp_path)
    with spool:
        assert seqs == list(range(30)) and reported == []
        assert spool.stats()["SpoolBadHeaders"] == 1
        assert f"{segments[1]} has a damaged header" in caplog.text


def test_a_torn_tail_after_a_crash_is_counted(tmp_path: Path) -> None:
    spool = Spool.open(SpoolConfig(tmp_path, done_every_ms=1000))
    spool.append(burst(10))
    spool.tick(time.monotonic() + 2)
    _crash(spool)
    (segment,) = tmp_path.glob("*.seg")
    with open(segment, "ab") as f:
        f.write(encode_burst(10, burst(1))[:-5])  # the next burst's record, cut by the crash while written
    seqs, reported, spool = _restart(tmp_path)
    with spool:
        assert seqs == list(range(10))
        assert spool.corrupt == 1 and reported[0][2] == 1 and "torn write" in reported[0][3]


def test_the_last_records_cut_off_after_a_crash_are_each_counted(tmp_path: Path) -> None:
    """Bytes the spool had written whole (the tail mark says so) are gone: a cut, not a torn write."""
    spool = Spool.open(SpoolConfig(tmp_path, done_every_ms=1000))
    spool.append(burst(10))
    spool.tick(time.monotonic() + 2)
    _crash(spool)
    (segment,) = tmp_path.glob("*.seg")
    os.truncate(segment, segment.stat().st_size - 5)
    seqs, reported, spool = _restart(tmp_path)
    with spool:
        assert seqs == list(range(9))
        assert spool.corrupt == 1 and reported[0][2] == 1 and "cut short" in reported[0][3]


def test_without_a_manifest_nothing_is_reported_and_the_start_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    segments = _left(tmp_path)
    (tmp_path / "manifest").unlink()  # as a spool written by an older bruce
    segments[2].unlink()
    caplog.set_level(logging.WARNING, logger="bruce.spool")
    seqs, reported, spool = _restart(tmp_path)
    with spool:
        assert reported == [] and len(seqs) < 30
        assert "has no manifest" in caplog.text
    assert (tmp_path / "manifest").exists()
