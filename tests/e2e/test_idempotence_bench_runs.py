"""bench/idempotence_bench.py and bench/producer_bench.py --latency keep working: a small run prints the rates and
ratios, after checking that tansu stored every message (the benches exit non-zero otherwise)."""

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


def test_producer_bench_latency_quick_prints_its_figures() -> None:
    """bench/producer_bench.py --latency: every client's rate and both ratios, after reading every topic back."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "producer_bench.py"), "--latency", "5", "--quick"],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    names = (
        "bruce.producer, 5 in flight",
        "bruce.producer, 1 in flight",
        "send_many, 5 in flight",
        "send_many, 1 in flight",
        "confluent-kafka",
    )
    for name in names:
        assert re.search(rf"^{re.escape(name)} +[\d,]+ msgs/s \(best of 1, 5 ms each way\)$", result.stdout, re.M)
    assert re.search(r"^5 in flight vs 1, send: +[\d.]+x \(target >= 3\)$", result.stdout, re.M)
    assert re.search(r"^5 in flight vs 1, send_many: +[\d.]+x \(target >= 3; ", result.stdout, re.M)
    assert re.search(r"^ratio vs confluent-kafka: +[\d.]+x \(target >= 0.6\)$", result.stdout, re.M)
