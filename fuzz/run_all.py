"""Run every fuzz harness (``fuzz/fuzz_<name>.py``) under atheris for a share of the time, and fail on any crash.

Usage: ``python fuzz/run_all.py --total-seconds 50 [--only NAME ...] [--crash-dir DIR]``

Each harness gets an equal share of ``--total-seconds``, start-up included (at least 1 s of fuzzing). Its seed
corpus ``fuzz/corpus/<name>/`` is read, never written: new inputs go to a temporary directory. A crash (a harness's
invariant broken) prints the harness's last output and the path of the input that broke it, and the run exits
non-zero; crashing inputs are kept in ``--crash-dir`` (default: a new ``bruce-fuzz-crashes-*`` temporary directory,
named in the output); everything else the run wrote is removed. Harnesses are found by name: add
``fuzz/fuzz_<name>.py`` (and seeds in ``fuzz/corpus/<name>/``).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TAIL_LINES = 40
STARTUP_SECONDS = 1.5  # interpreter, atheris and imports, per harness


def harnesses(folder: Path) -> list[Path]:
    return sorted(folder.glob("fuzz_*.py"))


def run_one(harness: Path, seconds: int, workdir: Path) -> tuple[bool, str]:
    name = harness.stem.removeprefix("fuzz_")
    corpus = harness.parent / "corpus" / name
    new_inputs = workdir / name
    new_inputs.mkdir()
    artifacts = workdir / f"{name}-crash-"
    command = [
        sys.executable,
        str(harness),
        f"-max_total_time={seconds}",
        "-timeout=10",
        "-rss_limit_mb=2048",
        f"-artifact_prefix={artifacts}",
        str(new_inputs),
        *([str(corpus)] if corpus.is_dir() else []),
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60, check=False)
    except subprocess.TimeoutExpired:
        return False, f"{name}: did not finish within {seconds + 60} s"
    log = done.stdout + done.stderr
    runs = re.findall(r"#(\d+)\s+(?:DONE|pulse|NEW|REDUCE|INITED)", log)
    count = runs[-1] if runs else "?"
    if done.returncode != 0:
        crash = sorted(workdir.glob(f"{name}-crash-*"))
        tail = "\n".join(log.splitlines()[-TAIL_LINES:])
        where = f"\n  input: {crash[0]}" if crash else ""
        return False, f"{name}: FAILED (exit {done.returncode}) after {count} runs{where}\n{tail}"
    return True, f"{name}: ok, {count} runs in {seconds} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-seconds", type=int, default=50)
    parser.add_argument("--only", nargs="*", help="harness names (without fuzz_) to run")
    parser.add_argument("--harness-dir", type=Path, default=HERE, help="where the fuzz_*.py files are")
    parser.add_argument(
        "--crash-dir", type=Path, help="where to keep crashing inputs (default: a new bruce-fuzz-crashes-* temp dir)"
    )
    args = parser.parse_args(argv)
    found = [h for h in harnesses(args.harness_dir) if not args.only or h.stem.removeprefix("fuzz_") in args.only]
    if not found:
        print("fuzz: no harnesses found", file=sys.stderr)
        return 1
    share = max(1, int(args.total_seconds / len(found) - STARTUP_SECONDS))
    failed = 0
    with tempfile.TemporaryDirectory(prefix="bruce-fuzz-") as tmp:
        for harness in found:
            ok, report = run_one(harness, share, Path(tmp))
            print(f"fuzz {report}", flush=True)
            failed += not ok
        if failed:
            keep = args.crash_dir or Path(tempfile.mkdtemp(prefix="bruce-fuzz-crashes-"))
            keep.mkdir(parents=True, exist_ok=True)
            for crash in Path(tmp).glob("*-crash-*"):
                crash.rename(keep / crash.name)
            print(f"fuzz: {failed} of {len(found)} harnesses failed; crashing inputs kept in {keep}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
