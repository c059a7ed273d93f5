"""bench/idempotence_bench.py keeps working: a small run prints both rates and their ratio, after checking that tansu
stored every pipelined message once and in order (the bench exits non-zero otherwise)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.e2e


def test_idempotence_bench_small_run() -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "idempotence_bench.py"),
            "--latency",
            "5",
            "--batches",
            "20",
            "--batch-size",
            "10",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert len(re.findall(r"^[15] in flight, 5 ms each way: +[\d.]+ batches/s +\d+ msgs/s$", result.stdout, re.M)) == 2
    assert re.search(r"^5 in flight vs 1: [\d.]+x$", result.stdout, re.M)
