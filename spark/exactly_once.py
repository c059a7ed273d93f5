"""Exactly-once streaming writes (``exactlyOnce=true``): each task's share of a micro-batch is one Kafka transaction
that also writes a commit marker, so a replayed share is recognised and skipped (docs/spark.md, "Exactly once").

Rules:
- The task's identity comes from Spark: the query id (``sql.streaming.queryId``, kept in the checkpoint, so the same
  across restarts), the micro-batch id (``streaming.sql.batchId``) and the task's partition id. Missing (not a
  streaming write) is an error, never a silent at-least-once write.
- Transactional id ``bruce-spark-<query id>-<partition>``: stable for a (query, partition), so ``init_transactions``
  of a retried or replayed task fences every earlier attempt (a zombie's later writes are refused, its open
  transaction aborted) and waits until an earlier commit has finished.
- Marker: key ``<query id>:<partition>``, value the batch id, on the marker topic (``exactlyOnce.markerTopic``,
  created on first use), its partition ``crc32(key) % partitions``; written in the same transaction as the rows, so
  both become visible together or not at all.
- After ``init_transactions`` and before taking any row, the task reads its marker partition back from the end, in
  windows growing four times (bounded by the distance to its last marker): a marker of its key whose transaction has a
  commit marker (read_uncommitted with the commit/abort markers deciding, as :mod:`bruce.spark.committed`: another
  task's open transaction must not hide it) says which batch the (query, partition) committed last. A batch id at or
  below it is already in Kafka: the share is skipped (its rows are counted as ``skipped``) and nothing is written.
- Any failure before the commit aborts the transaction when the producer can still do so (else the coordinator aborts
  it at the next ``init_transactions`` of the id, or after ``transaction.timeout.ms``); the task then fails and Spark
  retries it, which is safe: nothing of the share is visible.
"""

from __future__ import annotations

import asyncio
import contextlib
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pyspark import TaskContext

from bruce.producer import Producer
from bruce.wire import BruceError

from .client_options import ClientConfig
from .committed import COMMIT, Markers, decode_batches
from .kafka_reader import KafkaReader, KafkaReadError
from .option_values import OptionError

if TYPE_CHECKING:
    import pyarrow as pa

    from .options import WriteOptions

QUERY_ID = "sql.streaming.queryId"  # Spark's local properties of a streaming query's jobs
BATCH_ID = "streaming.sql.batchId"
_FIRST_WINDOW = 256  # offsets read back from the end of the marker partition at first


@dataclass(frozen=True, slots=True)
class Share:
    """One task's share of a micro-batch."""

    query: str
    batch: int
    partition: int

    @property
    def transactional_id(self) -> str:
        return f"bruce-spark-{self.query}-{self.partition}"

    @property
    def key(self) -> bytes:
        return f"{self.query}:{self.partition}".encode()


def current_share() -> Share:
    """This task's (query, batch, partition), from Spark's task context; :class:`OptionError` outside a stream."""
    ctx = TaskContext.get()
    query = ctx.getLocalProperty(QUERY_ID) if ctx is not None else None
    batch = ctx.getLocalProperty(BATCH_ID) if ctx is not None else None
    if ctx is None or not query or batch is None:
        raise OptionError("option 'exactlyOnce': only streaming writes (writeStream) can be written exactly once")
    return Share(query, int(batch), ctx.partitionId())


class TaskTransaction:
    """The transactional steps around one task's rows (:func:`bruce.spark.direct.produce_batches` calls them)."""

    def __init__(self, options: WriteOptions, share: Share) -> None:
        assert options.producer is not None and options.marker_topic is not None
        self.options = options
        self.share = share
        self.marker_topic = options.marker_topic
        self.config = replace(options.producer, transactional_id=share.transactional_id)
        self.marker_partition = 0
        self.markers = 0  # marker records sent (not rows: left out of the task's delivered count)

    async def open(self, producer: Producer, timeout: float) -> bool:
        """Fence earlier attempts, look for this share's marker; True: a transaction is open for the rows, False:
        the share is already committed (skip it)."""
        await producer.init_transactions(timeout)
        client = self.options_client()
        partitions = await asyncio.to_thread(_partitions, client, self.marker_topic)
        if partitions is None:
            await producer.create_topic(self.marker_topic)
            partitions = await asyncio.to_thread(_partitions, client, self.marker_topic)
            if partitions is None:
                raise KafkaReadError(f"exactlyOnce: the marker topic {self.marker_topic!r} could not be created")
        self.marker_partition = zlib.crc32(self.share.key) % partitions
        last = await asyncio.to_thread(last_committed, client, self.marker_topic, self.marker_partition, self.share.key)
        if last is not None and last >= self.share.batch:
            return False
        producer.begin_transaction()
        return True

    async def commit(self, producer: Producer, timeout: float) -> None:
        """Write the marker and commit: the rows and the marker become visible together."""
        producer.send(self.marker_topic, str(self.share.batch).encode(), self.share.key, self.marker_partition)
        self.markers = 1
        await producer.commit_transaction(timeout)

    async def abort(self, producer: Producer, timeout: float) -> None:
        """Abort the open transaction if the producer still can (a fenced producer cannot: the coordinator did)."""
        with contextlib.suppress(BruceError):
            await producer.abort_transaction(timeout)

    def options_client(self) -> ClientConfig:
        """How the marker lookup reaches the brokers: the write's servers, security and client id."""
        p = self.config
        return ClientConfig(tuple(p.bootstrap_servers), client_id=p.client_id or "bruce-spark", security=p.security)


def skipped_rows(batches: Iterator[pa.RecordBatch]) -> int:
    """Count (and drop) the rows of a share already committed."""
    return sum(b.num_rows for b in batches)


def _partitions(client: ClientConfig, topic: str) -> int | None:
    with KafkaReader(client) as reader:
        try:
            return len(reader.partitions(topic))
        except KafkaReadError as e:
            if e.reason == "UNKNOWN_TOPIC_OR_PARTITION":
                return None
            raise


def last_committed(client: ClientConfig, topic: str, partition: int, key: bytes) -> int | None:
    """The highest batch id committed under ``key`` on ``topic``/``partition`` (see the module rules), None if none."""
    with MarkerReader(client) as reader:
        end = reader.latest_offsets(topic, [partition])[partition]
        window = _FIRST_WINDOW
        start = end
        while start > 0:
            start = max(0, end - window)
            found = reader.committed_values(topic, partition, start, end, key)
            if found:
                return max(found)
            window *= 4
    return None


class MarkerReader(KafkaReader):
    """Reads commit markers: read_uncommitted, with the commit/abort markers of the range deciding."""

    def committed_values(self, topic: str, partition: int, start: int, end: int, key: bytes) -> list[int]:
        """The batch ids of ``key``'s markers in ``[start, end)`` whose transaction committed."""
        markers = Markers()
        mine: list[tuple[int, int, int]] = []  # (offset, producer id, batch id)
        offset = start
        size = self.config.max_partition_fetch_bytes
        while offset < end:
            answer = self._call(
                f"fetch {topic}/{partition} at offset {offset} (exactlyOnce markers)",
                lambda o=offset, n=size: self._fetch(topic, partition, o, n, committed=False),  # type: ignore[misc]  # mypy cannot type defaults that bind the loop's values
            )
            columns, batches = decode_batches(answer.records or b"")
            after = columns.end_offset
            if after is None:
                if not answer.records or size >= 64 << 20:
                    break
                size *= 2
                continue
            markers.add(batches, after)
            transactional = [b for b in batches if b.marker is None and b.transactional and b.last >= offset]
            for b in transactional:
                for r in columns.records([b.index]):
                    if r.key == key:
                        mine.append((r.offset, b.producer_id, int(r.value or b"-1")))
            offset = after
        return [batch for at, pid, batch in sorted(mine) if markers.outcome(pid, at) == COMMIT]
