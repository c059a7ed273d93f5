"""The chaos harness (bench/chaos.py) itself: a wait of the harness that expires before a fault is noted as a
``harness`` event and the run goes on with the next fault (the read-back at the end is what the run is for)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import chaos
from chaos_targets import HarnessTimeout


class Cluster:
    """The broker side, recording what the run asked of it."""

    def __init__(self) -> None:
        self.ports = [1]
        self.calls: list[str] = []

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return lambda *a, **kw: self.calls.append(name) or "127.0.0.1:1"


class Target:
    """A target whose first kill finds the daemon still settling past the harness's wait."""

    def __init__(self) -> None:
        self.kills = 0

    def start(self, brokers: str) -> None:
        pass

    def kill(self, brokers: str) -> None:
        self.kills += 1
        if self.kills == 1:
            raise HarnessTimeout("timed out waiting for the daemon to spool what it read (60 s; 10 of 20): not killed")


def test_an_expired_harness_wait_is_noted_and_the_faults_go_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chaos.time, "sleep", lambda s: None)
    args = argparse.Namespace(target="library", seed=3, minutes=0, rounds=2, rate=1)
    run = chaos.Chaos(args, Cluster(), tmp_path)
    run.target = Target()  # type: ignore[assignment]
    run.run()
    kinds = [f["fault"] for f in run.faults]
    assert kinds.count("harness") == 1 and run.target.kills == 2  # type: ignore[attr-defined]
    harness = next(f for f in run.faults if f["fault"] == "harness")
    assert harness["skipped"] == "daemon_kill" and "not killed" in harness["why"]
    assert len(kinds) == 2 * len(chaos.LIBRARY_FAULTS) + 1  # every fault of both rounds, the harness event besides
