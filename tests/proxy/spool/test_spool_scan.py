"""Recovery of one segment: torn tails truncated, corrupt records skipped and counted exactly, nothing else lost."""

from __future__ import annotations

import pytest

from bruce.proxy.spool.format import HEADER_SIZE, SpoolMessage, encode_burst, encode_header
from bruce.proxy.spool.scan import Corrupt, scan_segment

BASE = 0x444


def _messages(n: int) -> list[SpoolMessage]:
    return [
        SpoolMessage(b"topic-%d" % (i % 3), i if i % 2 else None, None if i % 4 == 1 else b"k%d" % i, b"v" * i, i)
        for i in range(n)
    ]


MESSAGES = _messages(6)
SEGMENT = encode_header(BASE, 0x123) + encode_burst(BASE, MESSAGES)


def _offsets(data: bytes) -> list[int]:
    scan = scan_segment(data, name_base=BASE, last=False)
    return [r.offset for r in scan.records]


OFFSETS = _offsets(SEGMENT)
ENDS = [*OFFSETS[1:], len(SEGMENT)]


def _seqs(scan) -> list[int]:
    return [r.sequence for r in scan.records]


def test_a_whole_segment_reads_back_in_order() -> None:
    scan = scan_segment(SEGMENT, name_base=BASE, last=True)
    assert [r.message() for r in scan.records] == MESSAGES
    assert _seqs(scan) == list(range(BASE, BASE + 6))
    assert (scan.base_sequence, scan.created_ms, scan.header_ok) == (BASE, 0x123, True)
    assert (scan.corrupt, scan.truncate_at, scan.unreadable) == ([], None, None)


def test_torn_tail_is_truncated_at_every_byte_of_the_last_record() -> None:
    last = OFFSETS[-1]
    for cut in range(last + 1, len(SEGMENT)):
        scan = scan_segment(SEGMENT[:cut], name_base=BASE, last=True)
        assert _seqs(scan) == list(range(BASE, BASE + 5)), cut
        assert (scan.truncate_at, scan.corrupt) == (last, []), cut


def test_a_torn_tail_in_an_older_segment_counts_as_corrupt() -> None:
    scan = scan_segment(SEGMENT[:-3], name_base=BASE, last=False)
    assert _seqs(scan) == list(range(BASE, BASE + 5))
    assert scan.truncate_at is None
    assert [(c.offset, c.count) for c in scan.corrupt] == [(OFFSETS[-1], 1)]


@pytest.mark.parametrize("victim", range(len(MESSAGES)))
def test_a_flipped_byte_anywhere_in_a_record_loses_that_record_only(victim: int) -> None:
    expected = [BASE + i for i in range(len(MESSAGES)) if i != victim]
    for last in (True, False):
        for index in range(OFFSETS[victim], ENDS[victim]):
            for bit in (0x01, 0x80):
                damaged = bytearray(SEGMENT)
                damaged[index] ^= bit
                scan = scan_segment(bytes(damaged), name_base=BASE, last=last)
                where = (victim, index, bit, last)
                if last and victim == len(MESSAGES) - 1 and scan.truncate_at is not None:
                    # the last record's length grew past the end: indistinguishable from a torn write
                    assert scan.truncate_at == OFFSETS[victim] and scan.corrupt == [], where
                else:
                    assert [(c.offset, c.count) for c in scan.corrupt] == [(OFFSETS[victim], 1)], where
                    assert scan.truncate_at is None, where
                assert _seqs(scan) == expected, where


def test_the_count_of_a_damaged_run_is_exact() -> None:
    damaged = bytearray(SEGMENT)
    for i in (1, 2, 3):  # three records in a row, lengths included
        damaged[OFFSETS[i] + 2] ^= 0x40
    scan = scan_segment(bytes(damaged), name_base=BASE, last=True)
    assert _seqs(scan) == [BASE, BASE + 4, BASE + 5]
    assert [(c.offset, c.count) for c in scan.corrupt] == [(OFFSETS[1], 3)]


def test_garbage_between_records_is_skipped() -> None:
    data = SEGMENT[: OFFSETS[2]] + b"\x00\x00\x01\x00garbage" + SEGMENT[OFFSETS[2] :]
    scan = scan_segment(data, name_base=BASE, last=True)
    assert _seqs(scan) == list(range(BASE, BASE + 6))
    assert scan.corrupt == [Corrupt(OFFSETS[2], 0, scan.corrupt[0].detail, BASE + 2)]  # skipped: it held no message


def test_a_record_out_of_sequence_is_corrupt() -> None:
    again = encode_burst(BASE + 1, MESSAGES[:1])  # a valid frame whose sequence repeats one already read
    data = SEGMENT[: OFFSETS[2]] + again + SEGMENT[OFFSETS[2] :]
    scan = scan_segment(data, name_base=BASE, last=True)
    assert _seqs(scan) == list(range(BASE, BASE + 6))
    assert [(c.offset, c.count) for c in scan.corrupt] == [(OFFSETS[2], 0)]
    assert "sequence" in scan.corrupt[0].detail


@pytest.mark.parametrize("index", range(HEADER_SIZE))
def test_a_damaged_header_loses_no_record(index: int) -> None:
    damaged = bytearray(SEGMENT)
    damaged[index] ^= 0x04
    scan = scan_segment(bytes(damaged), name_base=BASE, last=True)
    assert _seqs(scan) == list(range(BASE, BASE + 6))
    assert (scan.header_ok, scan.created_ms, scan.corrupt) == (False, None, [])


def test_a_header_with_another_base_is_damaged() -> None:
    scan = scan_segment(SEGMENT, name_base=BASE - 1, last=True)
    assert scan.header_ok is False
    assert _seqs(scan) == list(range(BASE, BASE + 6))


def test_a_newer_format_is_left_unread() -> None:
    import struct

    from bruce.wire.crc import crc32c

    fields = struct.pack(">4sHHQq", b"BSPL", 2, 0, BASE, 0)
    newer = fields + struct.pack(">I", crc32c(fields)) + SEGMENT[HEADER_SIZE:]
    scan = scan_segment(newer, name_base=BASE, last=True)
    assert scan.records == [] and scan.truncate_at is None
    assert scan.unreadable is not None and "version 2" in scan.unreadable


@pytest.mark.parametrize("cut", range(HEADER_SIZE))
def test_a_segment_cut_inside_its_header(cut: int) -> None:
    last = scan_segment(SEGMENT[:cut], name_base=BASE, last=True)
    assert (last.records, last.truncate_at) == ([], 0)
    older = scan_segment(SEGMENT[:cut], name_base=BASE, last=False)
    assert older.records == [] and older.truncate_at is None


def test_an_empty_segment_and_zeros() -> None:
    assert scan_segment(SEGMENT[:HEADER_SIZE], name_base=BASE, last=True).records == []
    zeros = scan_segment(SEGMENT + bytes(4096), name_base=BASE, last=True)  # a power loss can leave zeroed blocks
    assert _seqs(zeros) == list(range(BASE, BASE + 6))
    assert zeros.truncate_at == len(SEGMENT)
