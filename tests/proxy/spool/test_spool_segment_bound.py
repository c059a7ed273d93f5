"""``segment_bytes`` bounds every segment file, whatever the burst size: a burst that does not fit is cut at a record
boundary and goes on in the next segment; only a record larger than the bound makes a segment larger (alone)."""

from __future__ import annotations

from pathlib import Path

from bruce.proxy.spool import SpoolMessage

from .test_spool_writer import burst, open_spool, replay_all


def test_a_burst_larger_than_a_segment_is_cut_at_record_boundaries(tmp_path: Path) -> None:
    sent = [burst(256, f"b{i}", size=100) for i in range(3)]  # ~37 KB each, as the intake's bursts of 256
    with open_spool(tmp_path, segment_bytes=4096) as spool:
        firsts = [spool.append(b) for b in sent]
        assert firsts == [0, 256, 512]
        sizes = [p.stat().st_size for p in sorted(tmp_path.glob("*.seg"))]
        assert len(sizes) >= 3 * 37_000 // 4096
        assert max(sizes) <= 4096, sizes
        assert spool.bytes == sum(sizes)
    with open_spool(tmp_path, segment_bytes=4096) as spool:
        records = replay_all(spool)
        assert [r.message() for r in records] == [m for b in sent for m in b]
        assert [r.sequence for r in records] == list(range(768))
        spool.done_many([r.sequence for r in records])
    assert not list(tmp_path.glob("*.seg"))


def test_a_record_larger_than_a_segment_is_alone_in_its_own(tmp_path: Path) -> None:
    big = SpoolMessage(b"topic", None, None, b"x" * 10_000, 0)
    with open_spool(tmp_path, segment_bytes=4096) as spool:
        spool.append([*burst(3), big, *burst(3)])
        sizes = [p.stat().st_size for p in sorted(tmp_path.glob("*.seg"))]
        assert len(sizes) == 3 and sizes[0] <= 4096 and sizes[2] <= 4096 and sizes[1] > 10_000
    with open_spool(tmp_path, segment_bytes=4096) as spool:
        assert [r.value for r in replay_all(spool)][3] == big.value
