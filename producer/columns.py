"""Rows held as Arrow-layout columns: ``send_columns``' batches (:class:`ColumnChunk`), and how they are cut and
queued.

Rules:
- ``send_columns`` hands over a :class:`~bruce.wire.ProduceColumns` (values, keys, timestamps, headers as buffers) and
  its rows in runs, each routed as one: to a pinned partition, by a partition key (PartitionKey routing, as ``send``
  routes a key), or to any partition (the keyless cycle, one partition per batch). The caller groups the rows; runs
  for the same partition are queued in the order given, so rows keep their order within a partition.
- A run is cut into chunks as ``send_many`` cuts its values (:func:`bruce.producer.bulk.split_ends`: at most
  ``batch_num_messages`` rows, and bytes within the batch limits, from the running sums of
  :func:`~bruce.wire.column_sizes`, no pass over the rows). Each chunk is a :class:`~bruce.producer.bulk.Chunk` over
  rows ``[start, stop)`` of the columns: it holds the columns, not a list of values; it travels whole (never joined
  to another batch nor cut by a request), encoded straight from the buffers (:func:`~bruce.wire.build_column_batch`)
  and settled in one step. Anything that reads it as messages (a resend, a discard, a leader lost while it waits)
  makes them from the columns, once: keyed and headed as the rows are, routed again as the run was (its partition
  key, or pinned).
- Pure bookkeeping, as :mod:`bruce.producer.bulk`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bruce.wire import ColumnSizes, ProduceColumns, build_column_batch

from .bulk import Chunk, place, split_ends
from .dispatch import Dispatcher
from .message import Message
from .metadata import Topic, explicit_partition, partition_for_key
from .queues import RECORD_OVERHEAD, PartitionQueue

ColumnRun = tuple[int, int | None, bool]
"""One run of ``send_columns``' rows: ``(stop, partition_key, pinned)``, the rows from the previous run's stop to
``stop``, routed as ``send`` routes its ``partition_key`` (None: any partition; ``pinned``: it is the partition)."""


class ColumnChunk(Chunk):
    """Rows ``[start, stop)`` of ``columns`` queued together in one partition queue (see the module rules)."""

    __slots__ = ("columns", "one_timestamp", "partition_key", "pinned", "rows")

    def __init__(
        self,
        columns: ProduceColumns,
        start: int,
        stop: int,
        size: int,
        timestamp: int | None,
        partition_key: int | None,
        pinned: bool,
    ) -> None:
        rows = range(start, stop)
        super().__init__(rows, size, 0 if timestamp is None else timestamp, True)  # type: ignore[arg-type]  # its rows stand for its values
        self.columns = columns
        self.rows = rows
        self.one_timestamp = timestamp  # every row's, when the columns have no timestamps
        self.partition_key = partition_key
        self.pinned = pinned

    def _make_members(self) -> list[Message]:
        rows = self.rows
        members = column_messages(
            self.columns, rows.start, rows.stop, self.one_timestamp, self.partition_key, self.pinned
        )
        for m in members:
            m._fate = self
        return members

    def encode(self, codec: int, level: int | None) -> bytes | None:
        if self.members is not None:
            return None
        rows = self.rows
        return build_column_batch(
            self.columns, rows.start, rows.stop, timestamp=self.one_timestamp, codec=codec, compression_level=level
        )


def column_messages(
    columns: ProduceColumns, start: int, stop: int, timestamp: int | None, partition_key: int | None, pinned: bool
) -> list[Message]:
    """Rows ``[start, stop)`` as messages routed by ``partition_key`` and ``pinned`` (``timestamp``: every row's,
    when the columns have none)."""
    records = columns.records(start, stop, timestamp)
    return [Message(k, v, ts, h, partition_key, pinned) for k, v, ts, h in records]


def check_runs(runs: Sequence[ColumnRun] | None, count: int) -> list[tuple[int, int, int | None, bool]]:
    """``runs`` as ``(start, stop, partition_key, pinned)``, checked: stops increasing to ``count``, partition keys
    ints (a pinned one a partition, ``>= 0``). None: every row to any partition. Raises ``ValueError``."""
    if runs is None:
        return [(0, count, None, False)] if count else []
    out = []
    start = 0
    for stop, key, pinned in runs:
        if type(stop) is not int or not start < stop <= count:
            raise ValueError(f"a run ends at {stop!r}, not after {start} and within {count} rows")
        if key is not None and (type(key) is not int or (pinned and key < 0)):
            raise ValueError(f"a run's partition {'' if pinned else 'key '}{key!r} is not a valid one")
        if pinned and key is None:
            raise ValueError("a pinned run needs its partition")
        out.append((start, stop, key, bool(pinned)))
        start = stop
    if start != count:
        raise ValueError(f"the runs cover {start} of {count} rows")
    return out


def queue_column_runs(
    d: Dispatcher,
    topic: str,
    info: Topic,
    columns: ProduceColumns,
    sizes: ColumnSizes,
    runs: list[tuple[int, int, int | None, bool]],
    timestamp: int | None,
    max_count: int,
    max_bytes: int,
    seal: Callable[[PartitionQueue], None],
) -> list[Chunk]:
    """Queue the rows of ``columns`` (admitted: counted as held) run by run, as chunks of at most ``max_count`` rows
    and ``max_bytes`` bytes, ready at once; a chunk no partition can take is discarded (NO_AVAILABLE_PARTITIONS)."""
    chunks: list[Chunk] = []
    for start, stop, key, pinned in runs:
        if key is None:
            target, detail = None, "no partition available"
        elif pinned:
            target, detail = explicit_partition(key, info), f"partition {key} unavailable"
        else:
            target = partition_for_key(key, info)
            detail = f"{len(info.available)} of {info.partition_count} partitions available"
        for low, high in split_ends(sizes.ends, start, stop, max_count, max_bytes, RECORD_OVERHEAD):
            chunk = ColumnChunk(columns, low, high, sizes.size(low, high), timestamp, key, pinned)
            chunks.append(chunk)
            place(d, topic, chunk, d.cycle.next(info) if key is None else target, seal, detail)
    return chunks
