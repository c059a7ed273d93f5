"""The spool against a model, over random histories of appends, fates, clean restarts and crashes: nothing pending is
ever lost, a clean restart replays exactly what is pending, a crash replays at most what was ever appended."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from bruce.proxy.spool import Spool, SpoolConfig, SpoolMessage
from bruce.proxy.spool.format import HEADER_SIZE

operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 7)),
        st.tuples(st.just("done"), st.integers(0, 2**32)),  # a seed choosing which pending messages
        st.tuples(st.just("done_all"), st.just(0)),
        st.tuples(st.just("done_again"), st.just(0)),  # a double fate, and sequences long gone
        st.tuples(st.just("restart"), st.booleans()),  # True: clean close; False: crash
    ),
    max_size=25,
)


def _message(seq_hint: int) -> SpoolMessage:
    return SpoolMessage(b"t%d" % (seq_hint % 3), None if seq_hint % 2 else seq_hint, None, b"v%d" % seq_hint, seq_hint)


def _crash(spool: Spool) -> None:
    if spool._fd is not None:
        os.close(spool._fd)
    if spool._lock_fd is not None:
        os.close(spool._lock_fd)
    spool.syncer.close(timeout=10)


@settings(max_examples=60, deadline=None)
@given(ops=operations, segment_records=st.integers(1, 12))
@example(ops=[("append", 2), ("done", 0), ("done_again", 0)], segment_records=1)  # a double fate
@example(ops=[("append", 5), ("done", 1), ("restart", True), ("done", 2), ("restart", False)], segment_records=12)
def test_spool_matches_its_model(ops: list, segment_records: int) -> None:
    directory = Path(tempfile.mkdtemp(prefix="bruce-spool-model-"))
    config = SpoolConfig(directory, segment_bytes=HEADER_SIZE + 48 * segment_records, fsync_ms=1)
    try:
        ever: dict[int, SpoolMessage] = {}  # every message ever appended, by sequence
        pending: set[int] = set()
        spool = Spool.open(config)
        counter = 0
        for op, arg in [*ops, ("restart", True)]:
            if op == "append":
                burst = [_message(counter + i) for i in range(arg)]
                counter += arg
                first = spool.append(burst)
                assert first >= 0
                for i, m in enumerate(burst):
                    assert first + i not in pending
                    ever[first + i] = m
                    pending.add(first + i)
                spool.tick()
            elif op == "done_again":
                spool.done_many(sorted(set(ever) - pending))
            elif op in ("done", "done_all"):
                chosen = sorted(s for s in pending if op == "done_all" or (s * 2654435761 + arg) % 3 == 0)
                spool.done_many(chosen)
                pending.difference_update(chosen)
            else:
                if arg:
                    spool.close()
                else:
                    _crash(spool)
                spool = Spool.open(config)
                replayed = [r for chunk in spool.replay() for r in chunk]
                seqs = [r.sequence for r in replayed]
                assert seqs == sorted(set(seqs)), "in order, each once"
                assert pending <= set(seqs), f"lost: {sorted(pending - set(seqs))}"
                if arg:
                    assert set(seqs) == pending, f"replayed after a clean close: {sorted(set(seqs) - pending)}"
                for r in replayed:
                    assert r.message() == ever[r.sequence]
                pending = set(seqs)  # replayed messages are pending again until their fate
        spool.done_many(sorted(pending))
        spool.close()
        left = [p for p in os.listdir(directory) if p not in ("lock", "manifest")]
        assert not left, "everything done: an empty spool"
    finally:
        shutil.rmtree(directory)
