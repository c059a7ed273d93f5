"""The standalone cluster launcher's failure paths, with a stand-in spark-class (the real cluster is exercised by
test_cluster.py): a daemon that exits, or never comes up, is a ClusterError naming its log and quoting its end, and
every process started is stopped."""

from __future__ import annotations

from pathlib import Path

import pytest

from bruce.spark import standalone
from bruce.spark.standalone import ClusterError, StandaloneCluster


def _fake_spark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    home = tmp_path / "spark"
    (home / "bin").mkdir(parents=True)
    spark_class = home / "bin" / "spark-class"
    spark_class.write_text("#!/bin/sh\n" + script)
    spark_class.chmod(0o755)
    monkeypatch.setattr(standalone, "spark_home", lambda: home)


def test_a_master_that_exits_is_reported_with_its_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_spark(tmp_path, monkeypatch, "echo 'Address already in use' >&2\nexit 3\n")
    cluster = StandaloneCluster(tmp_path / "cluster", timeout=20)
    with pytest.raises(ClusterError) as failed:
        cluster.start()
    message = str(failed.value)
    assert "the master exited with status 3" in message and "Address already in use" in message
    assert str(tmp_path / "cluster" / "logs" / "master.log") in message
    assert cluster.daemons == []


def test_a_master_that_never_answers_times_out_and_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_spark(tmp_path, monkeypatch, "echo starting\nexec sleep 60\n")
    cluster = StandaloneCluster(tmp_path / "cluster", timeout=1)
    with pytest.raises(
        ClusterError, match=r"the master was not up within 1 s; its log .*master.log ends with:\nstarting"
    ):
        cluster.start()
    assert cluster.daemons == []  # stopped by PID on the failure
