"""Write summaries: what a task commits, what the job's commit reports, and the failure a task raises."""

from __future__ import annotations

import logging
import pickle

import pytest

from bruce.spark import delivery
from bruce.spark.delivery import DeliveryFailed, WriteSummary, combine, report
from bruce.spark.options import write_options
from bruce.spark.writer import BruceWriter


def test_combine_and_describe() -> None:
    a = WriteSummary("direct", rows=10, delivered=10, possible_duplicates=2)
    b = WriteSummary("direct", rows=5, delivered=3, discarded={"BAD_TOPIC": 2}, first_error="no such topic")
    total = combine([a, None, b], "direct")
    assert (total.rows, total.delivered, total.discarded, total.tasks) == (15, 13, {"BAD_TOPIC": 2}, 2)
    assert total.describe() == (
        "15 rows in 2 task(s): 13 acknowledged by Kafka, not delivered: 2 BAD_TOPIC, 2 possibly written twice"
    )
    assert combine([], "daemon").describe() == "0 rows in 0 task(s): 0 handed to the bruce daemon"
    assert pickle.loads(pickle.dumps(b)) == b


def test_delivery_failed_names_the_main_reason() -> None:
    summary = WriteSummary("direct", rows=9, delivered=1, discarded={"NOT_SENT": 2, "KAFKA_ERROR_ACK": 6})
    failed = DeliveryFailed(summary)
    assert failed.reason == "KAFKA_ERROR_ACK" and failed.summary is summary
    assert "2 NOT_SENT" in str(failed) and "Spark retries" in str(failed)


def test_commit_reports_on_stderr_without_logging(capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.setattr(delivery.log, "hasHandlers", lambda: False)  # as in a Spark worker: logging not set up
    writer = BruceWriter(write_options({"socket": "/x", "topic": "t"}))
    writer.commit([WriteSummary("daemon", rows=4, delivered=4)])
    writer.abort([WriteSummary("daemon", rows=1, delivered=1), None])
    assert capsys.readouterr().err.splitlines() == [
        "bruce: write committed: 4 rows in 1 task(s): 4 handed to the bruce daemon",
        "bruce: write aborted; the tasks that succeeded had delivered 1 rows in 1 task(s): "
        "1 handed to the bruce daemon",
    ]


def test_report_uses_logging_when_configured(caplog: pytest.LogCaptureFixture, capsys) -> None:
    with caplog.at_level(logging.INFO, logger="bruce.spark"):
        report("hello")
        report("careful", warning=True)
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [("INFO", "hello"), ("WARNING", "careful")]
    assert capsys.readouterr().err == ""
