"""bench/accounting_bench.py keeps working: it runs in --quick mode and prints its figures."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_accounting_bench_quick() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "accounting_bench.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    out = result.stdout
    assert len(re.findall(r"\d ns +[\d.]+x$", out, re.MULTILINE)) == 7
    assert "rate limiter allow(), limited topic" in out
    assert out.count("discards/s") == 8 and out.count("ratio inline/thread") == 4
