"""The short chaos run (bench/chaos.py) in CI: the daemon on a spool under steady load, for two minutes and at least
three rounds of faults on a durable tansu cluster (each round: a daemon ``kill -9``, a broker restart, a broker moved,
a cut, dropped answers, the spool full, the memory budget exceeded), then every message read back by number with
confluent-kafka.

Asserted: exactly once — no message lost (every one the socket took is read back or was discarded with a reason in
the discard log) and none read twice (the batch journal settles what a ``kill -9`` left unacknowledged, docs/spool.md;
a DUPLICATE_SEQUENCE_NUMBER answer is checked in the log, docs/producer.md), and the faults happened."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

CHAOS = Path(__file__).resolve().parents[2] / "bench" / "chaos.py"


@pytest.mark.timeout(600)
def test_a_short_chaos_run_reads_back_every_message_exactly_once(tmp_path: Path) -> None:
    out = tmp_path / "chaos.json"
    started = time.monotonic()
    run = subprocess.run(
        [
            sys.executable,
            str(CHAOS),
            "--minutes",
            "2",
            "--rounds",
            "3",
            "--seed",
            "7",
            "--expect-exactly-once",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    wall = time.monotonic() - started
    print(run.stdout[-3000:], f"\nwall time {wall:.0f} s")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    r = json.loads(out.read_text())
    counts = r["fault_counts"]
    assert counts["daemon_kill"] >= 3 and counts["broker_restart"] >= 2, counts
    assert counts["cut"] >= 2 and counts["drop_answers"] >= 2 and counts["broker_move"] >= 2, counts
    assert r["settled"] and r["harness"] == [], r
    assert max(f["at_s"] for f in r["faults"]) >= 110, r["faults"]  # faults kept coming for about two minutes
    assert r["lost"] == 0 and r["duplicated"] == 0, r
    assert r["sent"] > 50_000 and r["delivered"] > 0
    assert r["delivered"] + sum(r["discarded"].values()) - r["discarded_delivered_anyway"] == r["sent"], r
    assert r["discarded"].get("SPOOL_FULL", 0) > 0  # the spool did fill up
    assert "duplicated: 0\n" in run.stdout
    assert r["read"] == r["delivered"]
