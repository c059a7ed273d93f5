"""Streaming reads: ``spark.readStream.format("bruce").option("topic", ...).load()``.

Rules:
- The stream offset is Spark's Kafka JSON: ``{"topic": {"partition": next offset}}``. The first micro-batch starts at
  ``startingOffsets`` (default latest); a restarted query continues from its checkpoint.
- Each trigger asks Kafka for the latest offsets (see :class:`KafkaReader`) of the partitions the read covers then
  (:func:`bruce.spark.reader.assigned`: a ``subscribePattern`` picks up new topics). Partitions that appear later are
  read from their earliest offset. ``maxOffsetsPerTrigger`` caps the records per micro-batch, shared among the
  partitions in proportion to their backlog (every partition with a backlog advances by at least one).
- ``minOffsetsPerTrigger``: a trigger with fewer new records runs no micro-batch, unless ``maxTriggerDelay`` (default
  15m) has passed since the last one ran (the first trigger always runs), as Spark's connector does.
- Data loss (``failOnDataLoss``): a partition whose latest offset went below the stream's (the topic was recreated),
  one that disappeared (with false, a subscribed topic missing for a trigger too: it is left out of that micro-batch
  and read from its earliest offset when it is back), or records deleted before they were read
  (:mod:`bruce.spark.reader`'s rules).
- ``trigger(availableNow=True)`` reads what exists when the query starts and stops.
- A micro-batch is planned exactly as a batch read (:func:`bruce.spark.reader.plan`): a retried micro-batch reads the
  same offsets again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from .kafka_reader import KafkaReader
from .options import ReadOptions, offsets_from_json, offsets_to_json
from .reader import OffsetRange, Offsets, assigned, check_starts, data_loss, plan, read_range, resolve


class BruceStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self.available_now: Offsets | None = None
        self.last_run = float("-inf")  # when the last micro-batch was let through (minOffsetsPerTrigger)

    def initialOffset(self) -> dict[str, Any]:
        o = self.options
        with KafkaReader(o.client) as kafka:
            parts = assigned(kafka, o)
            starts = resolve(kafka, parts, o.starting, "startingOffsets", o.starting_timestamps, o.no_match)
            return offsets_to_json(starts)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = offsets_from_json(start)
        latest = self.available_now if self.available_now is not None else self._latest()
        if isinstance(limit, ReadMaxRows):
            latest = cap(begin, latest, limit.max_rows)
        least = self.options.min_offsets_per_trigger
        if least is not None and self.available_now is None:
            now = time.monotonic()
            new = sum(max(0, o - begin.get(t, {}).get(p, o)) for t, parts in latest.items() for p, o in parts.items())
            if new < least and (now - self.last_run) * 1000 < self.options.max_trigger_delay_ms:
                return start  # too few records yet: no micro-batch this trigger
            self.last_run = now
        return offsets_to_json(latest)

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if n is None else ReadMaxRows(n)

    def prepareForTriggerAvailableNow(self) -> None:
        self.available_now = self._latest()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[OffsetRange]:
        o = self.options
        begin, stop = offsets_from_json(start), offsets_from_json(end)
        for topic, parts in begin.items():
            for p, offset in parts.items():
                if p not in stop.get(topic, {}):
                    data_loss(
                        f"{topic}/{p} is gone (the stream had read it up to offset {offset})", o.fail_on_data_loss
                    )
                elif stop[topic][p] < offset:
                    data_loss(
                        f"{topic}/{p}: the offset went back from {offset} to {stop[topic][p]}", o.fail_on_data_loss
                    )
                    parts[p] = stop[topic][p]  # read on from the new end
        with KafkaReader(o.client) as kafka:
            for topic, parts in stop.items():
                new = [p for p in parts if p not in begin.get(topic, {})]
                if new:
                    begin.setdefault(topic, {}).update(kafka.earliest_offsets(topic, new))
            begin = check_starts(
                kafka, {t: {p: begin[t][p] for p in parts} for t, parts in stop.items()}, o.fail_on_data_loss
            )
        return plan(begin, stop, o.max_records_per_partition, min_partitions=o.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRange):
            return iter(())
        return read_range(self.options, partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: the offsets live in Spark's checkpoint, not in Kafka."""

    def _latest(self) -> Offsets:
        o = self.options
        with KafkaReader(o.client) as kafka:
            parts = assigned(kafka, o, missing_ok=not o.fail_on_data_loss)
            return {t: kafka.latest_offsets(t, p) for t, p in parts.items()}


def cap(begin: Offsets, end: Offsets, most: int) -> Offsets:
    """``end`` moved back so that at most ``most`` records lie between ``begin`` and it (see the module rules)."""
    backlog = {(t, p): o - begin.get(t, {}).get(p, 0) for t, parts in end.items() for p, o in parts.items()}
    total = sum(n for n in backlog.values() if n > 0)
    if total <= most:
        return end
    capped: Offsets = {t: dict(parts) for t, parts in end.items()}
    for (t, p), n in backlog.items():
        if n > 0:
            capped[t][p] = begin.get(t, {}).get(p, 0) + max(1, n * most // total)
    return capped
