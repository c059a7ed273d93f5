"""bench/intake_bench.py keeps working: its --quick mode runs every quick design and prints its figures (no timing is
asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_intake_bench_quick() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "intake_bench.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "kernel queue: max_dgram_qlen=" in out and "measured depth" in out
    rows = {
        line.split()[0]: line.split()
        for line in out.splitlines()
        if line.split()[:1] in (["asyncio"], ["uvloop"], ["process"])
    }
    assert set(rows) == {"asyncio", "uvloop", "process"}
    for fields in rows.values():
        assert fields[2] == "4000", fields  # every datagram received
        assert float(fields[3].replace(",", "")) > 0 and float(fields[4]) > 0  # a rate and a CPU figure
    assert "LOST" not in out
