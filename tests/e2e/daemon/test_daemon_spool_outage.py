"""With the durable spool, a broker outage is bounded by disk, not memory (docs/spool.md "Held on disk
only"): a 60-s outage at 20,000 msgs/s with a 16 MiB memory budget, through bench/outage_bench.py --spool (the real
``bruce`` command, tansu behind a gate that goes away and comes back on the same port, a steady sender), discards
nothing, and every message sent is read back from tansu by its number with confluent-kafka (CRC checks on). Without
the spool the same budget would discard most of the outage's 1.2 million messages as NO_MEM
(test_daemon_outage.py). No timing is asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[3]


def _number(pattern: str, out: str) -> int:
    found = re.search(pattern, out)
    assert found, (pattern, out)
    return int(found.group(1).replace(",", ""))


def test_a_60_s_outage_at_20000_per_s_with_16_mib_of_memory_loses_nothing() -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "outage_bench.py"),
            *("--spool", "--rate", "20000", "--outages", "60", "--budget-kib", "16384"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    sent = _number(r"sent ([\d,]+):", out)
    assert sent == 20_000 * 66  # 3 s before, 60 s of outage, 3 s after
    assert _number(r"discarded ([\d,]+)\n", out) == 0
    assert _number(r"delivered ([\d,]+), discarded", out) == sent
    assert _number(r"read back by number: ([\d,]+) of", out) == sent  # every number, each at least once
    held = _number(r"peak held on disk only ([\d,]+) messages", out)
    assert held > 500_000  # the outage really went beyond memory: most of it waited on disk only
    print("\n" + out)
