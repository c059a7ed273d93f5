"""Streaming reads: ``spark.readStream.format("bruce").option("topic", ...).load()``.

Rules:
- The stream offset is Spark's Kafka JSON: ``{"topic": {"partition": next offset}}``. The first micro-batch starts at
  ``startingOffsets`` (default latest); a restarted query continues from its checkpoint.
- Each trigger asks Kafka for the latest offsets (see :class:`KafkaReader`). Partitions that appear later are read from
  their earliest offset. ``maxOffsetsPerTrigger`` caps the records per micro-batch, shared among the partitions in
  proportion to their backlog (every partition with a backlog advances by at least one).
- ``trigger(availableNow=True)`` reads what exists when the query starts and stops.
- A micro-batch is planned exactly as a batch read (:func:`bruce.spark.reader.plan`): a retried micro-batch reads the
  same offsets again.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from .kafka_reader import KafkaReader
from .options import EARLIEST, ReadOptions, offsets_from_json, offsets_to_json
from .reader import OffsetRange, Offsets, plan, read_range, resolve


class BruceStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self.available_now: Offsets | None = None

    def initialOffset(self) -> dict:
        o = self.options
        with KafkaReader(o.client) as kafka:
            return offsets_to_json(resolve(kafka, o.topics, o.starting, EARLIEST))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = offsets_from_json(start)
        latest = self.available_now if self.available_now is not None else self._latest()
        end = {t: {p: max(o, begin.get(t, {}).get(p, 0)) for p, o in parts.items()} for t, parts in latest.items()}
        if isinstance(limit, ReadMaxRows):
            end = cap(begin, end, limit.max_rows)
        return offsets_to_json(end)

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if n is None else ReadMaxRows(n)

    def prepareForTriggerAvailableNow(self) -> None:
        self.available_now = self._latest()

    def partitions(self, start: dict, end: dict) -> list[OffsetRange]:
        begin, stop = offsets_from_json(start), offsets_from_json(end)
        new = {t: [p for p in parts if p not in begin.get(t, {})] for t, parts in stop.items()}
        if any(new.values()):
            with KafkaReader(self.options.client) as kafka:
                for topic, partitions in new.items():
                    if partitions:
                        begin.setdefault(topic, {}).update(kafka.earliest_offsets(topic, partitions))
        return plan(begin, stop, self.options.max_records_per_partition)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRange):
            return iter(())
        return read_range(self.options.client, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: the offsets live in Spark's checkpoint, not in Kafka."""

    def _latest(self) -> Offsets:
        o = self.options
        with KafkaReader(o.client) as kafka:
            return {t: kafka.latest_offsets(t, kafka.partitions(t)) for t in o.topics}


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
