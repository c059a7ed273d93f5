"""Broker outages, through bench/outage_bench.py (the real ``bruce`` command, tansu behind a gate that goes away and
comes back on the same port, a steady sender, reading back with confluent-kafka): within the budget nothing is
discarded; beyond it the excess is NO_MEM, counted, and every message still has exactly one fate. No timing is
asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[3]


def outage_bench(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "outage_bench.py"), *args],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "delivered + discarded = sent: yes" in out and "(= delivered: yes)" in out, out
    return out


def _number(pattern: str, out: str) -> int:
    found = re.search(pattern, out)
    assert found, (pattern, out)
    return int(found.group(1).replace(",", ""))


def test_an_outage_within_the_budget_loses_nothing() -> None:
    out = outage_bench("--rate", "5000", "--outages", "2", "--budget-kib", "65536")
    sent = _number(r"sent ([\d,]+):", out)
    assert sent >= 5000 * 8 * 0.9
    assert _number(r"delivered ([\d,]+), discarded", out) == sent
    assert _number(r"discarded ([\d,]+)\n", out) == 0
    assert _number(r"peak held ([\d,]+) messages", out) >= 5000  # the outage really held messages back
    assert re.search(r"resume: first delivery \d+\.\d+ s", out) and re.search(r"drain: .* \d+\.\d+ s after", out)


def test_an_outage_beyond_the_budget_is_no_mem_and_nothing_unaccounted() -> None:
    out = outage_bench("--rate", "5000", "--outages", "3", "--budget-kib", "1024")
    sent = _number(r"sent ([\d,]+):", out)
    no_mem = _number(r"NO_MEM discards ([\d,]+);", out)
    assert no_mem > 0
    assert _number(r"other discards ([\d,]+)", out) == 0
    assert _number(r"delivered ([\d,]+), discarded", out) + no_mem == sent
