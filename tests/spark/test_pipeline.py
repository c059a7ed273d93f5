"""The worked pipeline of examples/pipeline against tansu and the real ``bruce`` daemon: the sender's datagrams go
through the daemon to Kafka, the streaming job counts them per page per minute, and the counts read back equal
what was sent. Also the data source's daemon mode through the same daemon, read back by confluent-kafka."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from .kafka_io import consume_all

pytestmark = pytest.mark.spark
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pipeline"


@pytest.fixture(scope="module")
def example():
    sys.path.insert(0, str(EXAMPLE))
    try:
        import job
        import run
        import sender

        yield job, run, sender
    finally:
        sys.path.remove(str(EXAMPLE))


def test_page_view_counts(example, spark, tansu, new_topic, tmp_path: Path) -> None:
    job, run, sender = example
    source, sink = new_topic(partitions=4), new_topic(partitions=2)
    socket_path = tmp_path / "bruce.sock"
    with run.bruce_daemon(tansu.address, socket_path, tmp_path / "bruce.log"):
        sent = sender.send_events(str(socket_path), source, 600, minutes=3)
        assert run.wait_until_delivered(tansu.address, source, 600) == 600
    assert sum(sent.values()) == 600 and len(sent) >= 10
    query = job.start(spark, tansu.address, source, sink, str(tmp_path / "checkpoint"), available_now=True)
    query.awaitTermination(180)
    assert query.exception() is None
    assert job.latest_counts(spark, tansu.address, sink) == sent


def test_write_through_the_daemon(example, spark, tansu, new_topic, tmp_path: Path) -> None:
    _, run, _ = example
    topic = new_topic(partitions=3)
    socket_path = tmp_path / "bruce.sock"
    df = spark.range(3000).select(
        F.format_string("d%d", "id").alias("value"),
        F.format_string("k%d", F.col("id") % 10).alias("key"),
        (F.col("id") + 1_700_000_000_000).alias("timestamp"),
    )
    with run.bruce_daemon(tansu.address, socket_path, tmp_path / "bruce.log"):
        df.write.format("bruce").mode("append").option("socket", str(socket_path)).option("topic", topic).save()
        assert run.wait_until_delivered(tansu.address, topic, 3000) == 3000
    got = consume_all(tansu.address, topic, 3, 3000)
    assert sorted((m.value, m.key, m.timestamp) for m in got) == sorted(
        (b"d%d" % i, b"k%d" % (i % 10), 1_700_000_000_000 + i) for i in range(3000)
    )
    partitions = {}
    for m in got:
        partitions.setdefault(m.key, set()).add(m.partition)
    assert all(len(p) == 1 for p in partitions.values())  # keyed rows: one partition per key, as in direct mode


@pytest.mark.parametrize(("outcome", "kept"), [("ok", False), ("mismatch", True), ("crash", True), ("keep", True)])
def test_the_example_removes_its_working_directory_unless_it_failed(
    example, outcome: str, kept: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    _, run, _ = example
    monkeypatch.setattr(run.tempfile, "tempdir", str(tmp_path))  # where mkdtemp makes the working directory

    def pipeline(events: int, minutes: int, work: Path) -> bool:
        (work / "bruce.log").write_text("a file the run wrote")
        if outcome == "crash":
            raise RuntimeError("the job failed")
        return outcome != "mismatch"

    monkeypatch.setattr(run, "pipeline", pipeline)
    argv = ["--keep"] if outcome == "keep" else []
    if outcome == "crash":
        with pytest.raises(RuntimeError):
            run.main(argv)
    else:
        assert run.main(argv) == (1 if outcome == "mismatch" else 0)
    left = list(tmp_path.iterdir())
    assert len(left) == kept
    assert ("kept in" in capsys.readouterr().out) is kept
