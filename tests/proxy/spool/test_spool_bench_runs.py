"""bench/spool_bench.py keeps working: it runs in --quick mode and prints its figures."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_spool_bench_quick(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "spool_bench.py"), "--quick", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    out = result.stdout
    assert len(re.findall(r"encode_burst, .* ns/msg .*x the parse .*x slower", out)) == 2
    assert "scan_segment (replay)" in out
    rows = re.findall(r"(fsync_ms=\d+|\(inline\)) +[\d,]+ msgs/s .* µs/msg CPU .* longest .* done_run \d+ ns/msg", out)
    assert len(rows) == 3
    assert "fsyncs 200 " in out  # fsync_ms=0: one per burst
    assert re.search(r"spool off [\d.]+ µs/msg CPU, on [\d.]+ µs/msg CPU: \+-?[\d.]+ µs per message", out)
