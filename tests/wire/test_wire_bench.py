"""bench/wire_bench.py keeps running: a --quick run prints every figure (no timing is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "wire_bench.py"


def test_quick_run_prints_its_figures() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, timeout=120, check=True
    )
    for figure in (
        "datagram parse+validate",
        "message set build",
        "CRC-32 (zlib)",
        "CRC-32C (crc32c package)",
        "CRC-32C (crcmod fallback)",
    ):
        assert figure in done.stdout
    assert done.stdout.count("GB/s") == 3 and "ns/message" in done.stdout
