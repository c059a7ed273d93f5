"""bench/proxy_bench.py keeps working: its --quick mode runs both configurations and the peer end to end and prints
every figure (no timing is asserted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[3]


def test_proxy_bench_quick() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "proxy_bench.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    for config in ("plain", "default"):
        line = re.search(rf"\[{config}\] ([\d,]+) msgs/s end to end .*read back 20,000 .*lost 0", out)
        assert line and int(line.group(1).replace(",", "")) > 0, out
    split = re.findall(
        r"daemon CPU (\d+\.\d+) us/message: event loop process (\d+\.\d+), intake reader process (\d+\.\d+)", out
    )
    assert len(split) == 2, out
    for total, loop, reader in split:
        assert float(loop) > 0 and float(reader) >= 0 and abs(float(loop) + float(reader) - float(total)) <= 0.011
    assert len(re.findall(r"clients: blocked [\d,]+ times", out)) == 2
    assert len(re.findall(r"memory: VmHWM [\d.,]+ MiB", out)) == 2
    assert "confluent-kafka, the same messages produced directly" in out and "ratio bruce[plain]" in out
    assert "LOST" not in out
