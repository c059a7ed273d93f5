"""Batch writes: ``df.write.format("bruce")...save()``.

Rules:
- The writer receives Arrow batches (no per-row Python objects from Spark). Each task delivers its rows
  (:func:`bruce.spark.task.deliver`) and returns its :class:`WriteSummary` as the commit message; a task that
  could not deliver every row raises :class:`DeliveryFailed` instead.
- The job's commit reports the combined summary (:func:`bruce.spark.delivery.report`: the ``bruce.spark`` logger at
  INFO, or stderr); an abort reports (WARNING) what the tasks that succeeded had already delivered — those rows stay
  in Kafka (at-least-once, no transactions).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from .delivery import WriteSummary, combine, report
from .options import WriteOptions
from .task import deliver


class BruceWriter(DataSourceArrowWriter):
    def __init__(self, options: WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteSummary:
        return deliver(iterator, self.options)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        summary = combine(messages, self.options.mode)
        report(f"bruce: write committed: {summary.describe()}")

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        summary = combine(messages, self.options.mode)
        report(f"bruce: write aborted; the tasks that succeeded had delivered {summary.describe()}", warning=True)
