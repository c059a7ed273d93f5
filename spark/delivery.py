"""What a write task reports: every row it took is delivered or discarded with a reason, and a task that could not
deliver every row fails.

Rules:
- A task's rows go through one of two modes (:func:`bruce.spark.task.deliver` chooses): ``direct`` (delivered =
  acknowledged by Kafka) or ``daemon`` (delivered = handed to the local bruce daemon, which then accounts for them).
  This module knows neither: both report through it.
- The result is a :class:`WriteSummary`, the task's commit message: ``rows = delivered + discarded``.
- A summary with any discard becomes :class:`DeliveryFailed` in the task: Spark then retries the task (its rows are
  sent again, including those already delivered: at-least-once) or fails the job with the reasons.
- :func:`report` is how commits and aborts speak: the ``bruce.spark`` logger when logging is configured in the
  process, else one line on standard error (Spark's Python workers rarely configure logging).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pyspark.sql.datasource import WriterCommitMessage

from bruce.wire import BruceError

log = logging.getLogger("bruce.spark")


@dataclass(frozen=True)
class WriteSummary(WriterCommitMessage):
    """One task's (or, combined, one job's) outcome. ``discarded`` maps a reason to a count."""

    mode: str  # "direct" | "daemon"
    rows: int = 0
    delivered: int = 0
    discarded: Mapping[str, int] = field(default_factory=dict)
    possible_duplicates: int = 0  # written, connection lost before the ACK, written again
    tasks: int = 1
    first_error: str = ""  # the first discard's message, for the failure
    skipped: int = 0  # exactlyOnce: rows of a share already committed by an earlier attempt, not written again

    @property
    def discarded_total(self) -> int:
        return sum(self.discarded.values())

    @property
    def complete(self) -> bool:
        return self.discarded_total == 0

    def describe(self) -> str:
        where = "acknowledged by Kafka" if self.mode == "direct" else "handed to the bruce daemon"
        text = f"{self.rows} rows in {self.tasks} task(s): {self.delivered} {where}"
        if self.discarded:
            text += ", not delivered: " + ", ".join(f"{n} {reason}" for reason, n in sorted(self.discarded.items()))
        if self.skipped:
            text += f", {self.skipped} skipped (already committed)"
        if self.possible_duplicates:
            text += f", {self.possible_duplicates} possibly written twice"
        return text


class DeliveryFailed(BruceError):
    """A write task could not deliver every row; ``summary`` says how many and why."""

    def __init__(self, summary: WriteSummary) -> None:
        first = f" First error: {summary.first_error}." if summary.first_error else ""
        super().__init__(
            f"bruce: not every row was delivered ({summary.describe()}).{first} The task fails so that Spark retries "
            "it; rows already delivered are written again (at-least-once).",
            reason=max(summary.discarded, key=summary.discarded.__getitem__) if summary.discarded else "INCOMPLETE",
        )
        self.summary = summary


class KafkaUnavailable(BruceError):
    """No broker answered within ``delivery.timeout.ms``; the task took no row."""

    reason = "KAFKA_UNAVAILABLE"


def combine(summaries: Iterable[WriterCommitMessage | None], mode: str) -> WriteSummary:
    """The job's summary from its tasks' commit messages (None: a task that failed and reported nothing)."""
    rows = delivered = duplicates = tasks = skipped = 0
    discarded: dict[str, int] = {}
    first_error = ""
    for s in summaries:
        if not isinstance(s, WriteSummary):
            continue
        tasks += 1
        rows += s.rows
        delivered += s.delivered
        duplicates += s.possible_duplicates
        skipped += s.skipped
        first_error = first_error or s.first_error
        for reason, n in s.discarded.items():
            discarded[reason] = discarded.get(reason, 0) + n
    return WriteSummary(mode, rows, delivered, discarded, duplicates, tasks, first_error, skipped)


def report(message: str, *, warning: bool = False) -> None:
    """One line about a write: on the ``bruce.spark`` logger if logging is configured here, else on stderr."""
    if log.hasHandlers():
        log.log(logging.WARNING if warning else logging.INFO, message)
    else:
        print(message, file=sys.stderr, flush=True)
