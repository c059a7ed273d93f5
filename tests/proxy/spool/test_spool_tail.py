"""The newest segment cut short after a crash (docs/spool.md, "The tail mark"): the spool's ``tail`` file says where
the segment being written ended after its last whole burst, so a cut — at a record boundary or in the middle of a
record — is told from a torn write and every message lost is counted, exactly: less those a done file marks done and
those the caller says were settled (the batch journal's). A torn write after the mark is still one burst cut by the
crash."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bruce.proxy.spool import Spool, SpoolMessage
from bruce.proxy.spool.format import encode_burst
from bruce.proxy.spool.tail import TAIL, Tail, encode_tail, parse_tail

from .test_spool_writer import _crash, open_spool

RECORD = 60  # bytes of one record of _burst(): frame and fixed fields, a 1-byte topic, no key, a 20-byte value


def _burst(n: int) -> list[SpoolMessage]:
    return [SpoolMessage(b"t", None, None, b"x" * 20, i) for i in range(n)]


def _crashed(directory: Path, messages: int = 40, done: range = range(0)) -> Path:
    """A spool killed while writing: ``messages`` in bursts of 4 in one segment, ``done`` delivered and saved."""
    spool = open_spool(directory)
    for _ in range(messages // 4):
        spool.append(_burst(4))
    if done:
        spool.done_run(done.start, len(done))
        spool.tick(1e9)  # the periodic save of the done files
    _crash(spool)
    (newest,) = sorted(directory.glob("*.seg"))
    return newest


def _restart(directory: Path, settled: set[int] | None = None) -> tuple[list[int], list[tuple[int, str]], Spool]:
    reported: list[tuple[int, str]] = []
    spool = open_spool(directory)
    skip = None if settled is None else settled.__contains__
    on_corrupt = lambda _file, _offset, count, detail: reported.append((count, detail))  # noqa: E731
    seqs = [r.sequence for chunk in spool.replay(skip=skip, on_corrupt=on_corrupt) for r in chunk]
    return seqs, reported, spool


@pytest.mark.parametrize("cut", [28 + 10 * RECORD, 28 + 10 * RECORD + 30], ids=["at a record", "mid-record"])
def test_a_cut_newest_segment_counts_every_lost_message(
    tmp_path: Path, cut: int, caplog: pytest.LogCaptureFixture
) -> None:
    newest = _crashed(tmp_path)
    assert newest.stat().st_size == 28 + 40 * RECORD
    newest.write_bytes(newest.read_bytes()[:cut])
    with caplog.at_level(logging.ERROR, "bruce.spool"):
        seqs, reported, spool = _restart(tmp_path)
    with spool:
        assert seqs == list(range(10))
        assert [count for count, _ in reported] == [30] and spool.corrupt == 30
        assert "cut short" in reported[0][1] and "torn" not in caplog.text
        assert spool.append(_burst(1)) == 40  # the lost sequences are never given again


def test_done_and_settled_messages_are_not_counted_as_lost(tmp_path: Path) -> None:
    newest = _crashed(tmp_path, done=range(12, 20))  # delivered, saved in the done file
    newest.write_bytes(newest.read_bytes()[: 28 + 10 * RECORD])
    seqs, reported, spool = _restart(tmp_path, settled={30, 31})  # the journal: delivered too, not yet done
    with spool:
        assert seqs == list(range(10))
        assert [count for count, _ in reported] == [40 - 10 - 8 - 2]


def test_a_torn_write_after_the_last_burst_is_one_message_of_a_burst_never_accepted(tmp_path: Path) -> None:
    newest = _crashed(tmp_path)
    with open(newest, "ab") as f:
        f.write(encode_burst(40, _burst(2))[:90])  # a burst the crash cut in its second record
    seqs, reported, spool = _restart(tmp_path)
    with spool:
        assert seqs == list(range(41))  # the burst's first record was written whole
        assert [count for count, _ in reported] == [1] and "torn write" in reported[0][1]


@given(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
def test_the_mark_s_fast_encoder_builds_what_the_spec_builds_and_reads_back(base: int, end: int, size: int) -> None:
    data = encode_tail(Tail(base, end, size))
    assert data == TAIL.build({"fields": {"value": {"base": base, "end": end, "size": size}}})
    assert parse_tail(data) == Tail(base, end, size)
    for i in range(len(data)):  # any flipped bit, any cut: not a mark
        assert parse_tail(data[:i] + bytes([data[i] ^ 1]) + data[i + 1 :]) is None
        assert parse_tail(data[:i]) is None


def test_a_deleted_newest_segment_counts_every_message_from_the_mark(tmp_path: Path) -> None:
    newest = _crashed(tmp_path, done=range(0, 5))
    newest.unlink()
    seqs, reported, spool = _restart(tmp_path)
    with spool:
        assert seqs == [] and [count for count, _ in reported] == [35]  # the manifest alone: "at least one"
