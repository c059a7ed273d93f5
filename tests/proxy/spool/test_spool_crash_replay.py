"""After a crash (no close) the spool replays only what was not done when the last done files were saved: the done
state of the active segment is saved too, however much of it is done, and a sealed segment's as well."""

from __future__ import annotations

import time
from pathlib import Path

from bruce.proxy.spool import Spool, SpoolConfig

from .test_spool_writer import _crash, burst, open_spool, replay_all, segment_files


def test_an_active_segment_all_done_is_not_replayed_after_a_crash(tmp_path: Path) -> None:
    spool = Spool.open(SpoolConfig(tmp_path, done_every_ms=1000))
    first = spool.append(burst(20))
    spool.done_run(first, 20)  # every message delivered; the segment is the active one, so it stays
    spool.tick(time.monotonic() + 1.5)
    _crash(spool)
    with open_spool(tmp_path) as spool:
        assert replay_all(spool) == []
        assert spool.skipped_done == 20
    assert segment_files(tmp_path) == []


def test_a_done_set_that_grew_while_the_pending_count_stayed_is_saved_again(tmp_path: Path) -> None:
    """Saved when 5 were pending; then 5 more appended and 5 more done: still 5 pending, but 5 more done."""
    spool = Spool.open(SpoolConfig(tmp_path, done_every_ms=1000))
    spool.append(burst(10))
    spool.done_run(0, 5)
    start = time.monotonic()
    spool.tick(start + 1.5)
    spool.append(burst(5))
    spool.done_run(5, 5)
    spool.tick(start + 3.0)
    _crash(spool)
    with open_spool(tmp_path) as spool:
        assert [r.sequence for r in replay_all(spool)] == list(range(10, 15))


def test_sealed_segments_keep_their_done_state_across_a_crash(tmp_path: Path) -> None:
    spool = Spool.open(SpoolConfig(tmp_path, done_every_ms=1000, segment_bytes=1024))
    spool.append(burst(60))
    assert len(segment_files(tmp_path)) >= 3
    spool.done_run(1, 58)  # all but the first (in a sealed segment) and the last (in the active one)
    spool.tick(time.monotonic() + 1.5)
    _crash(spool)
    with open_spool(tmp_path) as spool:
        assert [r.sequence for r in replay_all(spool)] == [0, 59]
