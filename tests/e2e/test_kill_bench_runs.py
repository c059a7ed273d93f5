"""bench/kill_bench.py keeps working: a quick run (two SIGKILLs of the daemon under load, restarts on the same spool)
reads every message back once and exits 0 (non-zero on a loss, a duplicate or a key out of order)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.e2e


def test_kill_bench_quick_run() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "kill_bench.py"), "--quick"], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "sent 4,000  read 4,000  lost 0  duplicated 0  keys out of order 0" in result.stdout
