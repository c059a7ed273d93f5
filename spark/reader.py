"""Batch reads: ``spark.read.format("bruce").option("topic", ...).load()``.

Rules:
- Planning (on the driver) resolves ``startingOffsets`` and ``endingOffsets`` to concrete offsets per partition once,
  so every task reads a fixed range and a retried task reads the same rows again.
- One Spark partition per Kafka partition; a range longer than ``maxRecordsPerPartition`` is split into equal
  consecutive pieces. Empty ranges get no task. A start after its end is an error naming the partition.
- Each task reads its range with :class:`KafkaReader` and hands Spark one Arrow batch per Fetch answer.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from .kafka_reader import KafkaReader, KafkaReadError
from .options import EARLIEST, LATEST, ClientConfig, OffsetSpec, ReadOptions
from .schema import records_to_arrow

Offsets = dict[str, dict[int, int]]  # topic → partition → offset


@dataclass(frozen=True)  # no slots: Spark's InputPartition keeps a __dict__ (its repr reads it)
class OffsetRange(InputPartition):
    """The records ``[start, end)`` of one Kafka partition: one Spark task."""

    topic: str
    partition: int
    start: int
    end: int


def resolve(kafka: KafkaReader, topics: Sequence[str], spec: OffsetSpec, default: int) -> Offsets:
    """Concrete offsets for every partition of ``topics``: ``spec`` is earliest, latest or per-partition JSON
    (-2/-1 inside it); partitions the JSON leaves out get ``default`` (EARLIEST or LATEST)."""
    out: Offsets = {}
    for topic in topics:
        partitions = kafka.partitions(topic)
        if isinstance(spec, str):
            wanted = dict.fromkeys(partitions, EARLIEST if spec == "earliest" else LATEST)
        else:
            given = spec.get(topic, {})
            unknown = sorted(set(given) - set(partitions))
            if unknown:
                raise KafkaReadError(f"topic {topic!r} has no partition(s) {unknown} (it has {list(partitions)})")
            wanted = {p: given.get(p, default) for p in partitions}
        earliest = [p for p, o in wanted.items() if o == EARLIEST]
        latest = [p for p, o in wanted.items() if o == LATEST]
        found = dict(wanted)
        if earliest:
            found.update(kafka.earliest_offsets(topic, earliest))
        if latest:
            found.update(kafka.latest_offsets(topic, latest))
        out[topic] = found
    return out


def plan(starts: Offsets, ends: Offsets, limit: int) -> list[OffsetRange]:
    """The tasks reading from ``starts`` to ``ends``, each at most ``limit`` records long."""
    ranges = []
    for topic in sorted(ends):
        for partition, end in sorted(ends[topic].items()):
            start = starts.get(topic, {}).get(partition, end)
            if start > end:
                raise KafkaReadError(
                    f"{topic}/{partition}: the starting offset {start} is after the ending offset {end}"
                )
            pieces = -(-(end - start) // limit)
            for i in range(pieces):
                low = start + (end - start) * i // pieces
                high = start + (end - start) * (i + 1) // pieces
                ranges.append(OffsetRange(topic, partition, low, high))
    return ranges


def read_range(client: ClientConfig, task: OffsetRange) -> Iterator[pa.RecordBatch]:
    """The rows of one task, as Arrow batches in the read schema."""
    with KafkaReader(client) as kafka:
        for records in kafka.read(task.topic, task.partition, task.start, task.end):
            yield records_to_arrow(task.topic, task.partition, records)


class BruceReader(DataSourceReader):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def partitions(self) -> list[OffsetRange]:
        o = self.options
        with KafkaReader(o.client) as kafka:
            starts = resolve(kafka, o.topics, o.starting, EARLIEST)
            ends = resolve(kafka, o.topics, o.ending, LATEST)
        return plan(starts, ends, o.max_records_per_partition)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRange):
            return iter(())  # nothing to read: Spark replaces an empty plan with one placeholder partition
        return read_range(self.options.client, partition)
