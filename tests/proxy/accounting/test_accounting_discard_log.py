"""Discard log file: golden lines, rotation and archive cleanup in temporary directories, disablement on every kind
of failure, the bounded queue, and the writer thread."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bruce.producer.counters import Counters
from bruce.producer.reasons import DiscardReason as R
from bruce.proxy.accounting import discard_log as discard_log_module
from bruce.proxy.accounting.discard_log import DiscardLog, DiscardLogFile, format_discard_line, split_log_path
from bruce.proxy.accounting.discards import DiscardTracker
from bruce.wire.errors import UsageError

from .clocks import ManualClock
from .forking import NOBODY, run_forked

START_MS = 1_700_000_000_000


# -- format ----------------------------------------------------------------------------------------------------------


def test_golden_lines() -> None:
    assert format_discard_line(1393271771000, 5, "DISC", "KAFKA_ERROR_ACK", b"topic_1", b"", b"hubba bubba", 256) == (
        b"now: 1393271771000 ts: 5 event: DISC info: KAFKA_ERROR_ACK topic: 7[topic_1] key: 0[] "
        b"msg: 16[aHViYmEgYnViYmE=]\n"
    )
    assert format_discard_line(7, 6, "DUP", "NONE", b"t", b"k", None, 256) == (
        b"now: 7 ts: 6 event: DUP info: NONE topic: 1[t] key: 4[aw==] msg: 0[]\n"
    )
    # Key and value are cut to the prefix size before base64.
    assert format_discard_line(1, 2, "DISC", "LONG_MSG", b"t", b"abcdef", b"0123456789", 3) == (
        b"now: 1 ts: 2 event: DISC info: LONG_MSG topic: 1[t] key: 4[YWJj] msg: 4[MDEy]\n"
    )


def logged_lines(tmp_path: Path, record: Callable[[DiscardTracker], None], prefix_size: int = 256) -> list[bytes]:
    path = tmp_path / "logs" / "discard.log"
    log = DiscardLog(str(path), prefix_size=prefix_size, clock_ms=ManualClock(1000))
    tracker = DiscardTracker(discard_log=log, clock=lambda: 0)
    assert log.start()
    record(tracker)
    log.close()
    return path.read_bytes().splitlines()


def test_tracker_writes_bruce_lines_for_every_kind_of_event(tmp_path: Path) -> None:
    def record(tracker: DiscardTracker) -> None:
        tracker.record(R.RATE_LIMIT, "clicks", b"key", b"value", 1699999999999)
        tracker.record_unparsed(R.API_KEY, b"\x00\x00\x00\x0a\x01\x2c", detail=300)
        tracker.record_unparsed(R.VERSION, b"\x00\x00\x00\x09\xff", detail=-1)
        tracker.record_unparsed(R.MALFORMED, b"\x00\x00\x00\x09")
        tracker.record(R.BAD_TOPIC, "nope", b"", b"v", 12)
        tracker.record_possible_duplicate("clicks", b"", b"again", 13)
        tracker.record(R.BAD_TOPIC, "bad\udcff", b"", b"", 14)  # a topic the intake decoded with surrogateescape

    assert logged_lines(tmp_path, record) == [
        b"now: 1000 ts: 1699999999999 event: DISC info: RATE_LIMIT topic: 6[clicks] key: 4[a2V5] msg: 8[dmFsdWU=]",
        b"now: 1000 ts: 1000 event: DISC info: API_KEY(300) topic: 0[] key: 0[] msg: 8[AAAACgEs]",
        b"now: 1000 ts: 1000 event: DISC info: VERSION(-1) topic: 0[] key: 0[] msg: 8[AAAACf8=]",
        b"now: 1000 ts: 1000 event: DISC info: MALFORMED topic: 0[] key: 0[] msg: 8[AAAACQ==]",
        b"now: 1000 ts: 12 event: DISC info: BAD_TOPIC topic: 4[nope] key: 0[] msg: 4[dg==]",
        b"now: 1000 ts: 13 event: DUP info: NONE topic: 6[clicks] key: 0[] msg: 8[YWdhaW4=]",
        b"now: 1000 ts: 14 event: DISC info: BAD_TOPIC topic: 4[bad\xff] key: 0[] msg: 0[]",
    ]


def test_log_prefix_size_is_its_own(tmp_path: Path) -> None:
    lines = logged_lines(tmp_path, lambda t: t.record_unparsed(R.MALFORMED, b"abcdefgh"), prefix_size=3)
    assert lines == [b"now: 1000 ts: 1000 event: DISC info: MALFORMED topic: 0[] key: 0[] msg: 4[YWJj]"]


@pytest.mark.parametrize(
    ("path", "message"),
    [("", "empty"), ("relative/discard.log", "absolute"), ("/var/log/bruce/", "not a directory")],
)
def test_bad_paths_are_refused(path: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        DiscardLog(path)


def test_split_log_path() -> None:
    assert split_log_path("/var/log//bruce//discard.log") == ("/var/log//bruce", "discard.log")
    assert split_log_path("/discard.log") == ("/", "discard.log")


def test_file_is_created_with_mode_0660_and_appended_to(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "discard.log"  # mkdir -p
    f = DiscardLogFile(str(path))
    assert f.open()
    f.write_lines([b"one\n"])
    f.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o660
    f = DiscardLogFile(str(path))
    assert f.open() and f.size == 4
    f.write_lines([b"two\n"])
    f.close()
    assert path.read_bytes() == b"one\ntwo\n"


# -- rotation and archive --------------------------------------------------------------------------------------------


def line(i: int, size: int = 10) -> bytes:
    return (b"%d" % i).ljust(size - 1, b"-") + b"\n"


def test_rotation_never_splits_a_line(tmp_path: Path) -> None:
    clock, counters = ManualClock(START_MS), Counters()
    path = tmp_path / "discard.log"
    f = DiscardLogFile(str(path), max_file_bytes=35, max_archive_bytes=10**9, clock_ms=clock, counters=counters)
    assert f.open()
    f.write_lines([line(i) for i in range(3)])  # 30 bytes: fits
    clock.now += 1
    f.write_lines([line(3), line(4)])  # 40 would pass 35: rotate before line 3
    clock.now += 1
    f.write_lines([line(i) for i in range(5, 11)])  # 20 + 60: rotate before 6 and before 9
    f.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    base = START_MS
    assert names == ["discard.log", f"discard.log.{base + 1}", f"discard.log.{base + 2}", f"discard.log.{base + 3}"]
    contents = [(tmp_path / n).read_bytes() for n in names[1:]] + [path.read_bytes()]
    assert contents == [
        b"".join(line(i) for i in range(0, 3)),
        b"".join(line(i) for i in range(3, 6)),
        b"".join(line(i) for i in range(6, 9)),
        b"".join(line(i) for i in range(9, 11)),
    ]
    assert all(len(c) <= 35 for c in contents)
    assert counters.get("DiscardLogRotate") == 3


def test_rotation_in_the_same_millisecond_keeps_every_archive(tmp_path: Path) -> None:
    f = DiscardLogFile(str(tmp_path / "d"), max_file_bytes=10, max_archive_bytes=10**9, clock_ms=ManualClock(5))
    assert f.open()
    f.write_lines([line(i) for i in range(4)])
    f.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "d.5", "d.6", "d.7"]
    assert b"".join((tmp_path / n).read_bytes() for n in ("d.5", "d.6", "d.7", "d")) == b"".join(map(line, range(4)))


def test_an_oversized_line_goes_alone_into_a_fresh_file(tmp_path: Path) -> None:
    f = DiscardLogFile(str(tmp_path / "d"), max_file_bytes=10, clock_ms=ManualClock(5))
    assert f.open()
    f.write_lines([line(0, 50), line(1, 50)])
    f.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "d.5"]
    assert (tmp_path / "d.5").read_bytes() == line(0, 50)
    assert (tmp_path / "d").read_bytes() == line(1, 50)


def test_archive_cleaner_deletes_the_oldest_until_within_the_cap(tmp_path: Path) -> None:
    for ms, size in [(300, 100), (1000, 100), (20, 100), (4000, 100), (0, 5)]:
        (tmp_path / f"discard.log.{ms}").write_bytes(b"x" * size)
    bystanders = [
        "discard.log.12a",
        "discard.log.",
        "discard.logx.1",
        "other.log.1",
        "discard.log.\uff11\uff12",
    ]  # full-width digits
    for name in bystanders:
        (tmp_path / name).write_bytes(b"x" * 1000)
    (tmp_path / "discard.log.77").mkdir()  # not a regular file: left alone
    counters = Counters()
    f = DiscardLogFile(str(tmp_path / "discard.log"), max_archive_bytes=250, counters=counters)
    assert f.open()  # lists the archive
    assert f.clean_archive() == 3
    f.close()
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(["discard.log", "discard.log.1000", "discard.log.4000", "discard.log.77", *bystanders])
    assert counters.get("DiscardLogArchiveDelete") == 3


def test_rotation_triggers_archive_cleanup(tmp_path: Path) -> None:
    clock = ManualClock(100)
    f = DiscardLogFile(str(tmp_path / "d"), max_file_bytes=20, max_archive_bytes=40, clock_ms=clock)
    assert f.open()
    for i in range(20):
        clock.now += 10
        f.write_lines([line(i)])
    f.close()
    archives = sorted((p for p in tmp_path.iterdir() if p.name != "d"), key=lambda p: int(p.suffix[1:]))
    assert sum(p.stat().st_size for p in archives) <= 40
    assert [p.read_bytes() for p in archives] == [line(16) + line(17), line(14) + line(15)][::-1]
    assert (tmp_path / "d").read_bytes() == line(18) + line(19)


def test_start_rotates_a_file_already_over_the_limit(tmp_path: Path) -> None:
    (tmp_path / "d").write_bytes(b"x" * 100)
    f = DiscardLogFile(str(tmp_path / "d"), max_file_bytes=50, clock_ms=ManualClock(9))
    assert f.open() and f.size == 0
    f.close()
    assert (tmp_path / "d.9").read_bytes() == b"x" * 100


# -- disablement -----------------------------------------------------------------------------------------------------


def assert_disabled(f: DiscardLogFile, counters: Counters, why: str) -> None:
    assert not f.enabled
    assert f.failure is not None and why in f.failure
    assert counters.get("DiscardLogDisabled") == 1


def test_path_is_a_directory(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "d").mkdir()
    counters = Counters()
    f = DiscardLogFile(str(tmp_path / "d"), counters=counters)
    assert not f.open()
    assert_disabled(f, counters, "cannot open")
    assert "discard log disabled for the rest of this run" in caplog.text


def test_directory_cannot_be_created(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"")
    counters = Counters()
    f = DiscardLogFile(str(tmp_path / "file" / "sub" / "d"), counters=counters)
    assert not f.open()
    assert_disabled(f, counters, "cannot create directory")


def test_a_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "d")
    counters = Counters()
    f = DiscardLogFile(str(tmp_path / "d"), counters=counters)
    assert not f.open()
    assert_disabled(f, counters, "")


def test_rename_failure_disables_and_counts_lost_lines(tmp_path: Path) -> None:
    counters = Counters()
    f = DiscardLogFile(str(tmp_path / "d"), max_file_bytes=20, counters=counters)
    assert f.open()
    f.write_lines([line(0)])
    (tmp_path / "d").unlink()  # someone removed the log: the rotation's rename fails
    f.write_lines([line(1), line(2), line(3)])
    assert_disabled(f, counters, "cannot rename")
    assert counters.get("DiscardLogLinesLost") == 2  # line 1 fit before the rotation; 2 and 3 are lost
    f.write_lines([line(4)])
    assert counters.get("DiscardLogLinesLost") == 3 and counters.get("DiscardLogDisabled") == 1


def test_write_failure_disables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counters = Counters()
    f = DiscardLogFile(str(tmp_path / "d"), counters=counters)
    assert f.open()

    def disk_full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(discard_log_module.os, "write", disk_full)
    f.write_lines([line(0), line(1)])
    assert_disabled(f, counters, "No space left on device")
    assert counters.get("DiscardLogLinesLost") == 2


def test_a_short_write_then_a_failure_counts_only_the_unwritten_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counters = Counters()
    f = DiscardLogFile(str(tmp_path / "d"), counters=counters)
    assert f.open()
    real_write, calls = os.write, []

    def one_and_a_half_lines_then_full(fd: int, data: bytes) -> int:
        calls.append(len(data))
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, bytes(data[:15]))

    monkeypatch.setattr(discard_log_module.os, "write", one_and_a_half_lines_then_full)
    f.write_lines([line(0), line(1), line(2)])
    assert_disabled(f, counters, "No space left on device")
    assert counters.get("DiscardLogLinesLost") == 2  # line 0 is whole in the file; 1 (half) and 2 are lost
    assert (tmp_path / "d").read_bytes() == line(0) + line(1)[:5]


def test_read_only_directory_disables_at_rotation() -> None:
    base = tempfile.mkdtemp(prefix="bruce-ro-")
    try:
        os.chmod(base, 0o755)
        if os.getuid() == 0:
            os.chown(base, NOBODY, NOBODY)

        def scenario() -> dict:
            counters = Counters()
            f = DiscardLogFile(f"{base}/d", max_file_bytes=15, counters=counters, clock_ms=ManualClock(1))
            opened = f.open()
            f.write_lines([line(0)])
            os.chmod(base, 0o500)  # read-only: the rotation cannot rename
            f.write_lines([line(1)])
            return {
                "opened": opened,
                "enabled": f.enabled,
                "failure": f.failure,
                "disabled": counters.get("DiscardLogDisabled"),
                "lost": counters.get("DiscardLogLinesLost"),
            }

        result = run_forked(scenario, unprivileged=True)
        assert result["opened"] and not result["enabled"]
        assert "cannot rename" in result["failure"] and "Permission denied" in result["failure"]
        assert (result["disabled"], result["lost"]) == (1, 1)
        assert Path(base, "d").read_bytes() == line(0)
    finally:
        os.chmod(base, 0o700)
        shutil.rmtree(base)


# -- the queue and the writer thread ---------------------------------------------------------------------------------


def test_queue_is_bounded_and_drops_are_counted(tmp_path: Path) -> None:
    counters = Counters()
    size = len(format_discard_line(1, 0, "DISC", "BUG", b"t", b"", b"x", 256))
    log = DiscardLog(str(tmp_path / "d"), max_queued_bytes=5 * size, counters=counters, clock_ms=ManualClock(1))
    assert log.file.open()  # open without the writer thread: nothing drains behind our back
    for i in range(20):
        log.discard("BUG", "t", b"", b"x", i % 10)
    assert (log.queued, log.queued_bytes) == (5, 5 * size)
    assert counters.get("DiscardLogLinesDropped") == 15
    log.drain()
    assert (log.queued, log.queued_bytes) == (0, 0)
    log.discard("BUG", "t", b"", b"x", 5)  # room again
    log.drain()
    log.close()
    lines = (tmp_path / "d").read_bytes().splitlines()
    assert [int(x.split(b" ts: ")[1].split()[0]) for x in lines] == [0, 1, 2, 3, 4, 5]


def test_every_queued_line_is_counted_written_lost_or_still_queued(tmp_path: Path) -> None:
    """What a planned kill waits for: queued = written + lost once the writer caught up; dropped lines never queued."""
    counters = Counters()
    size = len(format_discard_line(1, 0, "DISC", "BUG", b"t", b"", b"x", 256))
    log = DiscardLog(str(tmp_path / "d"), max_queued_bytes=4 * size, counters=counters, clock_ms=ManualClock(1))
    assert log.file.open()
    for i in range(6):
        log.discard("BUG", "t", b"", b"x", i)
    assert counters.snapshot() == {"DiscardLogLinesDropped": 2, "DiscardLogLinesQueued": 4}  # nothing written yet
    log.drain()
    assert counters.get("DiscardLogLinesWritten") == 4
    log.discard("BUG", "t", b"", b"x", 6)
    log.file.disable("test")
    log.drain()  # the file went away with a line queued: lost, and counted
    assert counters.get("DiscardLogLinesQueued") == 5
    assert counters.get("DiscardLogLinesWritten") + counters.get("DiscardLogLinesLost") == 5
    log.close()
    assert len((tmp_path / "d").read_bytes().splitlines()) == 4


def test_a_stalled_disk_never_blocks_the_caller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counters = Counters()
    size = len(format_discard_line(1_700_000_000_000, 7, "DISC", "BUG", b"t", b"", b"same", 256))
    log = DiscardLog(str(tmp_path / "d"), max_queued_bytes=100 * size, counters=counters, flush_interval=0.01)
    release, taken = threading.Event(), []
    real_write_lines = log.file.write_lines

    def stalled(lines: list[bytes]) -> None:
        taken.append(len(lines))
        release.wait(30)
        real_write_lines(lines)

    monkeypatch.setattr(log.file, "write_lines", stalled)
    assert log.start()
    log.discard("BUG", "t", b"", b"first", 0)
    deadline = time.monotonic() + 10
    while not taken and time.monotonic() < deadline:  # the writer is now stuck on the disk
        time.sleep(0.001)
    assert taken == [1]
    started = time.monotonic()
    for _ in range(10_000):
        log.discard("BUG", "t", b"", b"same", 7)
    elapsed = time.monotonic() - started
    assert elapsed < 5  # 10,000 calls while the disk is stuck (no call waited for it)
    assert log.queued == 100
    assert counters.get("DiscardLogLinesDropped") == 10_000 - 100
    release.set()
    log.close()
    assert len((tmp_path / "d").read_bytes().splitlines()) == 101


def test_writer_thread_writes_everything_by_close(tmp_path: Path) -> None:
    counters = Counters()
    log = DiscardLog(str(tmp_path / "d"), counters=counters, max_file_bytes=4096, flush_interval=0.01)
    assert log.start() and log.enabled
    for i in range(2000):
        log.discard("NO_MEM", "t", b"", b"%d" % i, i)
    log.close()
    assert not log.enabled
    log.discard("NO_MEM", "t", b"", b"late", 0)  # after close: ignored
    files = sorted(tmp_path.iterdir(), key=lambda p: (p.name != "d", p.name))
    text = b"".join(p.read_bytes() for p in files[1:] + files[:1])
    stamps = [int(x.split(b" ts: ")[1].split()[0]) for x in text.splitlines()]
    assert sorted(stamps) == list(range(2000))
    assert counters.get("DiscardLogRotate") >= 1 and counters.get("DiscardLogLinesDropped") == 0


def test_a_disabled_log_takes_no_lines(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    log = DiscardLog(str(tmp_path / "d"))
    assert not log.start()
    log.discard("BUG", "t", b"", b"x", 0)
    assert log.queued == 0
    log.close()
