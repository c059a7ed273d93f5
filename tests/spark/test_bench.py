"""bench/spark_bench.py and bench/reader_bench.py keep running: their --quick modes print every figure (no time is
asserted)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark
BENCH = Path(__file__).resolve().parents[2] / "bench" / "spark_bench.py"
READER_BENCH = BENCH.with_name("reader_bench.py")


def test_spark_bench_quick(tmp_path: Path) -> None:
    figures = tmp_path / "spark.json"
    command = [sys.executable, str(BENCH), "--quick", "--json", str(figures)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=480)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    for line in (
        r"write  bruce data source +[\d,]+ rows/s",
        r"write  confluent foreachPartition +[\d,]+ rows/s",
        r"write  floor mapInArrow->noop +[\d,]+ rows/s",
        r"write  floor data source->drop +[\d,]+ rows/s",
        r"ratio  write data source / confluent foreachPartition: [\d.]+x",
        r"ratio  write data source / floor mapInArrow->noop: [\d.]+x",
        r"ratio  write floor data source->drop / floor mapInArrow->noop: [\d.]+x",
        r"read   bruce data source +[\d,]+ rows/s",
        r"read   confluent mapInArrow +[\d,]+ rows/s",
        r"read   floor mapInArrow->noop +[\d,]+ rows/s",
        r"ratio  read data source / confluent mapInArrow: [\d.]+x",
        r"ratio  read data source / floor mapInArrow->noop: [\d.]+x",
        r"write-back bruce data source +[\d,]+ rows/s",
        r"write-back floor mapInArrow->noop +[\d,]+ rows/s",
        r"ratio  write-back data source / floor mapInArrow->noop: [\d.]+x",
        r"task   plain rows +[\d,]+ rows/s  \(CPU per row: task \d+ ns, broker \d+ ns\)",
        r"task   read-back rows +[\d,]+ rows/s  \(CPU per row: task \d+ ns, broker \d+ ns\)",
    ):
        assert re.search(line, out), f"missing {line!r} in:\n{out}"
    run = json.loads(figures.read_text())["runs"]["20000 none"]  # what bench/report.py reads
    assert set(run["rates"]) == {"write", "read", "write-back", "task"}
    assert run["rates"]["write"]["bruce data source"] > 0 and run["rates"]["write-back"]["floor mapInArrow->noop"] > 0


def test_reader_bench_quick() -> None:
    result = subprocess.run([sys.executable, str(READER_BENCH), "--quick"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    for line in (
        r"read   bruce read_arrow +[\d,]+ rows/s",
        r"read   confluent Consumer +[\d,]+ rows/s",
        r"ratio  bruce read_arrow / confluent Consumer: [\d.]+x",
    ):
        assert re.search(line, result.stdout), f"missing {line!r} in:\n{result.stdout}"
