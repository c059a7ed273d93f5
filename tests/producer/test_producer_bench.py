"""The producer benchmark still runs: --quick mode prints a figure per client and the ratios (no timing asserted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.e2e
def test_producer_bench_quick_prints_its_figures() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "producer_bench.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    cpu = r"CPU/msg: client [\d.]+ µs, broker [\d.]+ µs"
    for client in ("confluent-kafka", "aiokafka (await send)", "kafka-python"):
        assert re.search(rf"^{re.escape(client)}\s+[\d,]+ msgs/s \({cpu}\)$", result.stdout, re.M), result.stdout
    for client in ("bruce.producer", "bruce.producer send_many"):
        row = rf"^{re.escape(client)}\s+[\d,]+ msgs/s \({cpu}; the garbage collector's share: -?\d+%\)$"
        assert re.search(row, result.stdout, re.M), result.stdout
    for client in ("bruce.producer, no gc", "bruce.producer, gc frozen", "bruce.producer send_many, gc frozen"):
        row = rf"^{re.escape(client)}\s+[\d,]+ msgs/s \(the garbage collector's share: -?\d+%\)$"
        assert re.search(row, result.stdout, re.M), result.stdout
    assert re.search(r"ratio vs aiokafka \(await send\): [\d.]+x", result.stdout)
    assert re.search(r"ratio vs confluent-kafka:\s+[\d.]+x", result.stdout)
    assert re.search(r"send_many vs confluent-kafka:\s+[\d.]+x", result.stdout)


@pytest.mark.e2e
def test_producer_bench_security_quick_prints_its_figures() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "producer_bench.py"), "--security", "--quick"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for client in ("bruce.producer", "confluent-kafka"):
        for way in ("PLAINTEXT", "SSL", "SASL_SSL"):
            assert re.search(rf"^{re.escape(client)}\s+{way}\s+[\d,]+ msgs/s \(best of 1\)$", result.stdout, re.M)
    assert re.search(r"ratio vs confluent-kafka, SASL_SSL:\s+[\d.]+x", result.stdout)
    assert re.search(r"SSL cost to bruce.producer vs plaintext: -?\d+%", result.stdout)
