"""fuzz/run_all.py finds harnesses by name, runs them, and fails loudly when an invariant breaks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "fuzz" / "run_all.py"

BROKEN = """
import sys
import atheris

def test_one_input(data: bytes) -> None:
    if data[:1] == b"x":
        raise ValueError("invariant broken")

atheris.Setup(sys.argv, test_one_input)
atheris.Fuzz()
"""


def test_a_broken_invariant_fails_the_run(tmp_path: Path) -> None:
    (tmp_path / "fuzz_broken.py").write_text(BROKEN)
    (tmp_path / "corpus" / "broken").mkdir(parents=True)
    (tmp_path / "corpus" / "broken" / "seed").write_bytes(b"x")  # the seed itself breaks it
    done = subprocess.run(
        [sys.executable, str(RUNNER), "--total-seconds", "3", "--harness-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "broken: FAILED" in done.stdout and "invariant broken" in done.stdout
    assert "crashing inputs kept in" in done.stderr


def test_every_wire_harness_is_discovered() -> None:
    names = {p.stem for p in (ROOT / "fuzz").glob("fuzz_*.py")}
    assert {"fuzz_datagram", "fuzz_messageset", "fuzz_produce_response", "fuzz_metadata_response"} <= names
    for name in ("datagram", "messageset", "produce_response", "metadata_response"):
        assert any((ROOT / "fuzz" / "corpus" / name).iterdir()), name
