"""start_stream: a query whose Python source timed out connecting back is started again, at most ``attempts`` times
in all; any other outcome is handed back as it is (fakes stand in for Spark's writer and queries)."""

from __future__ import annotations

from bruce.spark import start_stream

TIMED_OUT = "[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: Python worker failed to connect back."


class _Query:
    def __init__(self, outcome: str | None, progress_after: int = 0) -> None:
        self.outcome = outcome  # None: runs; "ok": ended well; else the error's text
        self.polls = 0
        self.progress_after = progress_after

    @property
    def isActive(self) -> bool:
        self.polls += 1
        return self.outcome is None

    @property
    def recentProgress(self) -> list[dict]:
        return [{"numInputRows": 1}] if self.polls > self.progress_after else []

    @property
    def status(self) -> dict:
        return {"message": "Getting offsets from BruceStreamReader"}

    def exception(self) -> Exception | None:
        return None if self.outcome in (None, "ok") else RuntimeError(self.outcome)


class _Writer:
    def __init__(self, *queries: _Query) -> None:
        self.queries = list(queries)
        self.started = 0

    def start(self) -> _Query:
        self.started += 1
        return self.queries.pop(0)


def test_a_time_out_is_started_again(monkeypatch) -> None:
    monkeypatch.setattr("bruce.spark.streams.time.sleep", lambda s: None)
    running = _Query(None, progress_after=3)
    writer = _Writer(_Query(TIMED_OUT), _Query(TIMED_OUT), running)
    assert start_stream(writer) is running and writer.started == 3
    assert running.polls > 3  # waited for the source's first progress


def test_attempts_are_bounded_and_other_failures_handed_back(monkeypatch) -> None:
    monkeypatch.setattr("bruce.spark.streams.time.sleep", lambda s: None)
    last = _Query(TIMED_OUT)
    writer = _Writer(_Query(TIMED_OUT), last)
    assert start_stream(writer, attempts=2) is last and writer.started == 2  # the caller sees the error
    other = _Query("AnalysisException: no such column")
    assert start_stream(_Writer(other)) is other  # not retried
    done = _Query("ok")
    assert start_stream(_Writer(done)) is done
