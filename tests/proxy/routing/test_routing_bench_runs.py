"""bench/router_bench.py keeps working: it runs in --quick mode and prints its figures."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_router_bench_quick() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "router_bench.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    out = result.stdout
    rows = re.findall(r"^  (.+?) +(\d+) ns +[\d.]+x +[\d.]+% of the 5 µs budget$", out, re.MULTILINE)
    assert len(rows) == 16, out
    assert out.count("AnyPartition:") == 1 and out.count("PartitionKey:") == 1
    assert {name for name, _ in rows} >= {"combined", "combined, bursts of 256", "combined, bursts of 256, one topic"}
