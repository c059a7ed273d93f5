"""Streaming writes: ``df.writeStream.format("bruce")...start()``, committed per micro-batch.

Rules: each micro-batch is a batch write (:mod:`bruce.spark.writer`): every task delivers its rows or fails, and
Spark retries a failed micro-batch from its checkpoint, so rows may be written again (at-least-once) — unless
``exactlyOnce=true``: then each task's share is one transaction with a commit marker, and a replayed share that had
committed is skipped (:mod:`bruce.spark.exactly_once`). The commit of each micro-batch reports its summary with the
batch id (:func:`bruce.spark.delivery.report`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from .delivery import WriteSummary, combine, report
from .options import WriteOptions
from .task import deliver


class BruceStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteSummary:
        return deliver(iterator, self.options)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        summary = combine(messages, self.options.mode)
        report(f"bruce: micro-batch {batchId} committed: {summary.describe()}")

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        summary = combine(messages, self.options.mode)
        report(
            f"bruce: micro-batch {batchId} aborted; tasks that succeeded had delivered {summary.describe()}",
            warning=True,
        )
