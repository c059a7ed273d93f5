"""The plog benchmark still runs (tiny counts); it asserts nothing about speed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "plog_bench.py"


def test_plog_bench_quick_runs_and_prints_its_figures() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for figure in ("schema/fast", "MiB/s", "messages/s", "burst/transport", "datagrams/s", "lines/s", "ns/datagram"):
        assert figure in done.stdout, done.stdout
