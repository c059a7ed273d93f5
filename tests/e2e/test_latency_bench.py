"""The latency benchmark still runs: --quick measures each client once against tansu and writes its JSON (figures
and CDFs for bench/report.py); no time is asserted, only that every figure is there and ordered."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.e2e
def test_latency_bench_quick_writes_figures_and_cdfs(tmp_path: Path) -> None:
    out = tmp_path / "latency.json"
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "latency_bench.py"), "--quick", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ratio bruce.producer / confluent-kafka at 1,000/s: p50" in result.stdout
    body = json.loads(out.read_text())
    assert body["settings"]["linger_ms"] == 5 and body["machine"]["cpus"] >= 1
    runs = body["runs"]
    assert sorted(r["client"] for r in runs) == ["bruce daemon", "bruce.producer", "confluent-kafka"]
    for r in runs:
        assert r["rate"] == 1000 and r["sent"] == 1000 and r["counted"] > 0, r["client"]
        assert 0 < r["p50_ms"] <= r["p99_ms"] <= r["p999_ms"] <= r["max_ms"], r
        quantiles = [q for _, q in r["cdf_ms"]]
        latencies = [ms for ms, _ in r["cdf_ms"]]
        assert quantiles == sorted(quantiles) and latencies == sorted(latencies) and quantiles[-1] == 1.0
