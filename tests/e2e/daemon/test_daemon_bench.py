"""bench/proxy_bench.py keeps working: its --quick mode runs both configurations and the peer end to end and prints
every figure, and with --profile both daemon processes are sampled and their CPU shared out by stage
(bench/daemon_profile.py; no timing is asserted)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[3]


sys.path.insert(0, str(ROOT / "bench"))
from daemon_profile import GC, INTAKE, LOOP, STARTUP, daemon_stage, reader_stage  # noqa: E402


def test_proxy_bench_quick(tmp_path: Path) -> None:
    profile, figures = tmp_path / "prof", tmp_path / "proxy.json"
    result = subprocess.run(
        [
            *(sys.executable, str(ROOT / "bench" / "proxy_bench.py"), "--quick"),
            *("--profile", str(profile), "--json", str(figures)),
        ],
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
    for run in json.loads(figures.read_text())["runs"]:  # every process sampled, its CPU shared out by stage
        assert {p.name for p in (profile / run["config"]).glob("*.json")} and run["stages"], run
        for process, cpu_us in (("event loop process", run["loop_cpu_us"]), ("intake reader process", 0)):
            rows = [r for r in run["stages"] if r["process"] == process]
            if process == "event loop process" or rows:
                assert all(0 < r["share"] <= 1 for r in rows), rows
                assert abs(sum(r["ns_per_msg"] for r in rows) - (cpu_us or run["reader_cpu_us"]) * 1000) < 1, rows
        samples = [json.loads(p.read_text()) for p in (profile / run["config"]).glob("*.json")]
        assert sorted("intake_reader" in s["argv"][0] for s in samples) == [False, True]


def frame(path: str, func: str, start: bool = False) -> list:
    return [path, func, 1, start]


def test_samples_are_given_their_stage() -> None:
    loop = [frame("/x/asyncio/runners.py", "run"), frame("/x/proxy/daemon/cli.py", "main")]
    burst = frame("/w/proxy/intake/intake_burst.py", "feed")
    assert daemon_stage([frame("/x/python3.11/struct.py", "x"), burst, *loop]) == INTAKE  # a C call: its caller's
    assert daemon_stage([frame("/w/proxy/routing/router.py", "route", start=True), burst, *loop]) == "route"
    assert daemon_stage([frame("/w/proxy/intake/intake_process.py", "_on_readable", start=True), *loop]) == LOOP
    assert daemon_stage([frame("/b/profile_hook/sitecustomize.py", "_on_gc", start=True), burst, *loop]) == GC
    assert (
        daemon_stage([frame("<frozen importlib._bootstrap>", "_load"), frame("/w/proxy/daemon/cli.py", "main")])
        == STARTUP
    )
    assert daemon_stage([frame("/x/asyncio/events.py", "_run"), *loop]) == LOOP
    assert reader_stage([frame(str(ROOT / "proxy" / "intake" / "intake_reader.py"), "forward")]) == "reader: its loop"


def test_proxy_bench_on_the_0_8_path() -> None:
    """--broker fake08: the daemon produces magic-0 message sets to the fake broker playing Kafka 0.8 (version 0 only),
    which stores every message of both configurations (decoded, CRCs checked)."""
    result = subprocess.run(
        [
            *(sys.executable, str(ROOT / "bench" / "proxy_bench.py"), "--messages", "5000"),
            *("--configs", "plain,snappy", "--broker", "fake08", "--no-peer"),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for config in ("plain-0.8", "snappy-0.8"):
        assert re.search(rf"\[{config}\] [\d,]+ msgs/s end to end .*read back 5,000 .*lost 0", result.stdout), result
    assert len(re.findall(r"daemon CPU \d+\.\d+ us/message", result.stdout)) == 2
