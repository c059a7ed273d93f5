"""The spool's cursor over records held on disk only: it reads them back in order across sealed segments and the
active one, from where it was started (mid-burst too), again after catching up; a record larger than a read chunk;
damage loses exactly the damaged records (counted, done, reported once) and nothing else."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from bruce.proxy.spool import Spool, SpoolConfig, SpoolMessage
from bruce.proxy.spool.cursor import CHUNK


def msgs(start: int, n: int, *, size: int = 20) -> list[SpoolMessage]:
    return [SpoolMessage(b"t", None, None, (b"%06d" % i).ljust(size, b"."), i) for i in range(start, start + n)]


def drain(spool: Spool, on_lost: Callable[[int], None] | None = None) -> list[int]:
    """Take every record the cursor holds; their timestamps (= the numbers the test gave them)."""
    got = []
    while (record := spool.cursor.peek(on_lost)) is not None:
        got.append(record.timestamp)
        spool.cursor.take()
    return got


def flip(path: Path, offset: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x40]))


def test_held_records_come_back_in_order_across_segments_and_after_catching_up(tmp_path: Path) -> None:
    with Spool.open(SpoolConfig(tmp_path, segment_bytes=1000)) as spool:
        first = spool.append(msgs(0, 5))
        spool.cursor.hold(first + 2)  # mid-burst: 0 and 1 went to memory
        for i in range(5, 40, 5):  # several rolls while behind
            spool.append(msgs(i, 5))
        assert spool.segments >= 3
        assert spool.cursor.held == 38
        assert drain(spool) == list(range(2, 40))
        assert spool.cursor.start is None and spool.cursor.held == 0
        spool.append(msgs(40, 3))  # in memory: the cursor is caught up
        first = spool.append(msgs(43, 4))
        spool.cursor.hold(first + 1)
        assert drain(spool) == [44, 45, 46]
        assert spool.cursor.held_total == 2


def test_a_record_larger_than_a_read_chunk(tmp_path: Path) -> None:
    with Spool.open(SpoolConfig(tmp_path)) as spool:
        spool.append(msgs(0, 1))
        first = spool.append([*msgs(1, 1, size=3 * CHUNK), *msgs(2, 2)])
        spool.cursor.hold(first)
        records = []
        while (record := spool.cursor.peek()) is not None:
            records.append(record)
            spool.cursor.take()
        assert [r.timestamp for r in records] == [1, 2, 3]
        assert len(records[0].value) == 3 * CHUNK


def test_a_damaged_record_is_lost_alone_counted_done_and_reported(tmp_path: Path) -> None:
    with Spool.open(SpoolConfig(tmp_path, segment_bytes=300)) as spool:
        lost: list[int] = []
        first = spool.append(msgs(0, 4))
        spool.cursor.hold(first)
        spool.append(msgs(4, 4))  # a second segment (the first is sealed)
        segments = sorted(tmp_path.glob("*.seg"))
        assert len(segments) == 2
        size = (os.path.getsize(segments[0]) - 28) // 4
        flip(segments[0], 28 + size + 20)  # record 1 of the sealed segment
        flip(segments[1], os.path.getsize(segments[1]) - 3)  # the active segment's last record
        assert drain(spool, lost.append) == [0, 2, 3, 4, 5, 6]
        assert lost == [1, 1]
        assert spool.corrupt == 2
        assert spool.pending == 6  # the lost ones are done; the six read back wait for their fates
        assert spool.cursor.held == 0


def test_a_segment_that_cannot_be_read_loses_its_held_records_only(tmp_path: Path) -> None:
    with Spool.open(SpoolConfig(tmp_path, segment_bytes=300)) as spool:
        lost: list[int] = []
        first = spool.append(msgs(0, 4))
        spool.append(msgs(4, 4))
        os.unlink(sorted(tmp_path.glob("*.seg"))[0])  # (deleted behind the spool's back: opening it fails)
        spool.cursor.hold(first)
        assert drain(spool, lost.append) == [4, 5, 6, 7]
        assert lost == [4]
        assert spool.corrupt == 4
