"""bench/spark_bench.py and bench/reader_bench.py keep running: their --quick modes print every figure (no time is
asserted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark
BENCH = Path(__file__).resolve().parents[2] / "bench" / "spark_bench.py"
READER_BENCH = BENCH.with_name("reader_bench.py")


def test_spark_bench_quick() -> None:
    result = subprocess.run([sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, timeout=480)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    for line in (
        r"write  bruce data source +[\d,]+ rows/s",
        r"write  confluent foreachPartition +[\d,]+ rows/s",
        r"write  floor mapInArrow->noop +[\d,]+ rows/s",
        r"ratio  write data source / confluent foreachPartition: [\d.]+x",
        r"ratio  write data source / floor mapInArrow->noop: [\d.]+x",
        r"read   bruce data source +[\d,]+ rows/s",
        r"read   confluent mapInArrow +[\d,]+ rows/s",
        r"read   floor mapInArrow->noop +[\d,]+ rows/s",
        r"ratio  read data source / confluent mapInArrow: [\d.]+x",
        r"ratio  read data source / floor mapInArrow->noop: [\d.]+x",
        r"write-back bruce data source +[\d,]+ rows/s",
        r"write-back floor mapInArrow->noop +[\d,]+ rows/s",
        r"ratio  write-back data source / floor mapInArrow->noop: [\d.]+x",
        r"task   plain rows +[\d,]+ rows/s",
        r"task   read-back rows +[\d,]+ rows/s",
    ):
        assert re.search(line, out), f"missing {line!r} in:\n{out}"


def test_reader_bench_quick() -> None:
    result = subprocess.run([sys.executable, str(READER_BENCH), "--quick"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    for line in (
        r"read   bruce read_arrow +[\d,]+ rows/s",
        r"read   confluent Consumer +[\d,]+ rows/s",
        r"ratio  bruce read_arrow / confluent Consumer: [\d.]+x",
    ):
        assert re.search(line, result.stdout), f"missing {line!r} in:\n{result.stdout}"
