"""Batch reads: ``spark.read.format("bruce").option("topic", ...).load()``, and the planning streams share.

Rules:
- What to read (:func:`assigned`): ``topic``/``subscribe`` (every partition of those topics), ``subscribePattern``
  (every topic whose whole name matches; internal topics left out) or ``assign`` (those partitions only).
- Planning (on the driver) resolves the starting and ending positions to concrete offsets per partition once, so
  every task reads a fixed range and a retried task reads the same rows again. Positions: a timestamp option wins
  over its offsets option (Spark's order); a timestamp resolves to the first offset whose record is at least that
  recent; when none is, a start fails (or, with ``startingOffsetsByTimestampStrategy=latest``, starts at the end) and an
  end is the latest offset.
- Data loss (``failOnDataLoss``, default true): a start before the log start (records deleted), records deleted
  while a task reads them, and in a stream an offset that went backwards or a partition that disappeared. With true
  the query fails naming the partition and the offsets; with false a warning is reported and reading goes on from
  what exists (as Spark's connector does). A batch start after its end stays an error (as in Spark).
- Tasks: one per Kafka partition range, a range longer than ``maxRecordsPerPartition`` split into equal consecutive
  pieces, and, when ``minPartitions`` asks for more tasks than that, the ranges split further in proportion to their
  sizes (Spark's rule). Empty ranges get no task.
- Each task reads its range with :class:`KafkaReader` and hands Spark one Arrow batch per Fetch answer, made from
  the decoder's columns without a Python object per record (:mod:`bruce.spark.columns`), with the ``headers`` column
  only under ``includeHeaders``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from .delivery import report
from .kafka_reader import KafkaReader, KafkaReadError
from .options import EARLIEST, LATEST, OffsetSpec, ReadOptions, TimestampSpec

Offsets = dict[str, dict[int, int]]  # topic → partition → offset
Assignment = dict[str, tuple[int, ...]]  # topic → partitions


@dataclass(frozen=True)  # no slots: Spark's InputPartition keeps a __dict__ (its repr reads it)
class OffsetRange(InputPartition):
    """The records ``[start, end)`` of one Kafka partition: one Spark task."""

    topic: str
    partition: int
    start: int
    end: int


def assigned(kafka: KafkaReader, o: ReadOptions, *, missing_ok: bool = False) -> Assignment:
    """The partitions the read covers (see the module rules); ``missing_ok``: a subscribed topic that does not exist
    (deleted) is a data-loss warning and left out, not an error."""
    if o.assign is not None:
        for topic, wanted in o.assign.items():
            missing = sorted(set(wanted) - set(kafka.partitions(topic)))
            if missing:
                raise KafkaReadError(f"option 'assign': topic {topic!r} has no partition(s) {missing}")
        return dict(o.assign)
    if o.pattern is not None:
        pattern = re.compile(o.pattern)
        return {t: kafka.partitions(t) for t in kafka.topic_names() if pattern.fullmatch(t)}
    out: Assignment = {}
    for topic in o.topics:
        try:
            out[topic] = kafka.partitions(topic)
        except KafkaReadError as e:
            if not missing_ok or e.reason != "UNKNOWN_TOPIC_OR_PARTITION":
                raise
            data_loss(f"topic {topic!r} does not exist (deleted?); it is left out until it is back", False)
    return out


def resolve(
    kafka: KafkaReader,
    parts: Assignment,
    spec: OffsetSpec,
    label: str,
    timestamps: TimestampSpec | None = None,
    no_match: str = "latest",
) -> Offsets:
    """Concrete offsets for ``parts``: ``timestamps`` when given, else ``spec`` (earliest, latest or per-partition
    JSON with -2/-1 inside). A JSON (of offsets or of timestamps) names every partition of ``parts``, as Spark
    requires (``label``: the option, for the error). ``no_match`` says what a timestamp with no record that recent
    becomes: "latest" or "error"."""
    out: Offsets = {}
    if timestamps is not None:
        label = label.replace("Offsets", "OffsetsByTimestamp")
    for topic, partitions in parts.items():
        if isinstance(timestamps, int):
            given = dict.fromkeys(partitions, timestamps)
        elif timestamps is not None or not isinstance(spec, str):
            given = (timestamps if timestamps is not None else spec).get(topic, {})  # type: ignore[union-attr]  # a dict: timestamps is no int, spec no str
            if set(given) != set(partitions):
                raise KafkaReadError(
                    f"option {label!r}: with specific offsets every partition must be named, as in Spark (-2 for "
                    f"earliest, -1 for latest): {topic!r} has partitions {sorted(partitions)}, the option names "
                    f"{sorted(given)}",
                    reason="BAD_OPTION",
                )
        else:
            given = {}
        found = dict.fromkeys(partitions, EARLIEST if spec == "earliest" else LATEST) if not given else dict(given)
        if timestamps is not None:
            for p, offset in kafka.offsets_for_times(topic, given).items():
                if offset is None and no_match == "error":
                    raise KafkaReadError(
                        f"{topic}/{p}: no record has a timestamp ≥ {given[p]} (set "
                        "startingOffsetsByTimestampStrategy=latest to start at the end instead)"
                    )
                found[p] = LATEST if offset is None else offset
        earliest = [p for p, o in found.items() if o == EARLIEST]
        latest = [p for p, o in found.items() if o == LATEST]
        if earliest:
            found.update(kafka.earliest_offsets(topic, earliest))
        if latest:
            found.update(kafka.latest_offsets(topic, latest))
        out[topic] = found
    return out


def data_loss(message: str, fail: bool) -> None:
    """Spark's failOnDataLoss: fail the query, or warn and go on."""
    if fail:
        raise KafkaReadError(
            f"{message}. Some data may have been lost (deleted by retention, or the topic was recreated); "
            "set failOnDataLoss=false to read on from what exists",
            reason="DATA_LOSS",
        )
    report(f"bruce: {message}; some data may have been lost, reading on (failOnDataLoss=false)", warning=True)


def check_starts(kafka: KafkaReader, starts: Offsets, fail: bool) -> Offsets:
    """``starts`` moved up to the log start where records are gone (each a data loss: see the module rules)."""
    out: Offsets = {}
    for topic, offsets in starts.items():
        first = kafka.earliest_offsets(topic, sorted(offsets))
        out[topic] = dict(offsets)
        for p, start in offsets.items():
            if start < first[p]:
                data_loss(f"{topic}/{p}: offset {start} is before the log start {first[p]}", fail)
                out[topic][p] = first[p]
    return out


def plan(starts: Offsets, ends: Offsets, limit: int | None, *, min_partitions: int | None = None) -> list[OffsetRange]:
    """The tasks reading from ``starts`` to ``ends``, each at most ``limit`` records long (None: any), at least
    ``min_partitions`` of them when the records allow (see the module rules)."""
    spans = []
    for topic in sorted(ends):
        for partition, end in sorted(ends[topic].items()):
            start = starts.get(topic, {}).get(partition, end)
            if start > end:
                raise KafkaReadError(
                    f"{topic}/{partition}: the starting offset {start} is after the ending offset {end}"
                )
            if end > start:
                spans.append((topic, partition, start, end))
    total = sum(end - start for *_, start, end in spans)
    ranges = []
    for topic, partition, start, end in spans:
        size = end - start
        pieces = 1 if limit is None else -(-size // limit)
        if min_partitions and len(spans) < min_partitions:
            pieces = max(pieces, min(size, int(size * min_partitions / total + 0.5) or 1))
        for i in range(pieces):
            low = start + size * i // pieces
            high = start + size * (i + 1) // pieces
            ranges.append(OffsetRange(topic, partition, low, high))
    return ranges


def read_range(o: ReadOptions, task: OffsetRange) -> Iterator[pa.RecordBatch]:
    """The rows of one task, as Arrow batches in the read schema; records deleted under the read are a data loss."""
    offset = task.start
    with KafkaReader(o.client) as kafka:
        while offset < task.end:
            try:
                for batch in kafka.read_arrow(
                    task.topic, task.partition, offset, task.end, include_headers=o.include_headers
                ):
                    offset = batch.column("offset")[-1].as_py() + 1
                    yield batch
                return
            except KafkaReadError as e:
                if e.reason != "OFFSET_OUT_OF_RANGE" or o.fail_on_data_loss:
                    raise
                first = kafka.earliest_offsets(task.topic, [task.partition])[task.partition]
                if first <= offset:
                    raise
                data_loss(f"{task.topic}/{task.partition}: offsets {offset} to {first - 1} were deleted", False)
                offset = first


class BruceReader(DataSourceReader):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def partitions(self) -> list[OffsetRange]:
        o = self.options
        with KafkaReader(o.client) as kafka:
            parts = assigned(kafka, o)
            starts = resolve(kafka, parts, o.starting, "startingOffsets", o.starting_timestamps, o.no_match)
            ends = resolve(kafka, parts, o.ending, "endingOffsets", o.ending_timestamps)
            starts = check_starts(kafka, starts, o.fail_on_data_loss)
        return plan(starts, ends, o.max_records_per_partition, min_partitions=o.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRange):
            return iter(())  # nothing to read: Spark replaces an empty plan with one placeholder partition
        return read_range(self.options, partition)
