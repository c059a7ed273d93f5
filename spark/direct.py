"""Direct delivery: one task's Arrow batches produced to the brokers with ``bruce.producer``.

Rules:
- Each batch's rows become producer messages, grouped by topic and handed over with ``Producer.submit`` (one group
  per topic per batch: keyless rows of a group share a partition, as sticky partitioning does). Routing per row:
  ``partition`` as given; else ``partition_key`` with Bruce's PartitionKey semantics; else the key's CRC-32 through
  the same PartitionKey rule; else any partition.
- The task first waits (up to ``delivery.timeout.ms``) for the producer's first cluster view; without one it fails
  with :class:`KafkaUnavailable` before taking any row.
- Bounded: at most ``queue_buffering_max_messages`` (``kafka.queue.buffering.max.messages``) rows are held; beyond
  that the task waits for acknowledgements, and every wait — and the final flush — is bounded by
  ``delivery.timeout.ms``. What is still held then is discarded as MESSAGE_TIMEOUT.
- Fail fast: after the first discard no more input is taken (the task will fail anyway; fewer rows are sent twice
  when Spark retries it).
- The producer's outcome sink counts every fate, so ``rows = delivered + discarded`` when the producer has closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Iterator, Sequence
from itertools import repeat

import pyarrow as pa

from bruce.producer import DeliveryError, DiscardReason, Message, Producer
from bruce.producer.partitioner import key_to_partition_key

from .delivery import KafkaUnavailable, WriteSummary
from .options import WriteOptions
from .schema import BadRow, Rows, arrow_rows

_PARTITION_KEY_RANGE = range(-(2**31), 2**32)


class Tally:
    """The producer's outcome sink for one task: counts per fate, and the first discard's message."""

    def __init__(self) -> None:
        self.delivered_count = 0
        self.discards: dict[str, int] = {}
        self.duplicates = 0
        self.first_error = ""

    def delivered(self, topic: str, partition: int, base_offset: int, messages: Sequence[Message]) -> None:
        self.delivered_count += len(messages)

    def discarded(self, topic: str, messages: Sequence[Message], reason: DiscardReason) -> None:
        self.discards[str(reason)] = self.discards.get(str(reason), 0) + len(messages)
        if not self.first_error and messages and messages[0].error is not None:
            self.first_error = str(messages[0].error)

    def possible_duplicates(self, topic: str, messages: Sequence[Message]) -> None:
        self.duplicates += len(messages)


async def produce_batches(batches: Iterator[pa.RecordBatch], options: WriteOptions) -> WriteSummary:
    """Produce every row of ``batches``; the summary counts each row's fate (see the module rules)."""
    config = options.producer
    assert config is not None
    tally = Tally()
    timeout = options.delivery_timeout_ms / 1000
    limit = config.queue_buffering_max_messages
    producer = Producer(config, sink=tally)
    waits: deque[Message] = deque()  # the last message of each group handed over: what to wait on for room
    rows = 0
    room = True
    await producer.start()
    try:
        try:
            await producer.ready(timeout)  # the cluster view first: no row is taken from Spark without it
        except TimeoutError:
            raise KafkaUnavailable(
                f"no broker of {', '.join(config.bootstrap_servers)} answered Metadata within {timeout:.1f} s "
                "(delivery.timeout.ms); no row was sent"
            ) from None
        for batch in batches:
            groups = messages_by_topic(arrow_rows(batch), options.topic)
            rows += batch.num_rows
            for topic, messages in groups.items():
                room = await _make_room(producer, waits, len(messages), limit, timeout)
                if not room:
                    break
                producer.submit(topic, messages)
                waits.append(messages[-1])
            if tally.discards or not room:
                break  # a discard (fail fast), or no room within the delivery timeout
            await asyncio.sleep(0)  # let the senders write what is ready while Spark prepares the next batch
        if room:  # else the delivery timeout has already passed without progress
            await producer.flush(timeout)
    finally:
        await producer.close(0.0, DiscardReason.MESSAGE_TIMEOUT)
    return WriteSummary(
        "direct",
        rows=rows,
        delivered=tally.delivered_count,
        discarded=dict(tally.discards, **_untaken(rows, producer.accepted)),
        possible_duplicates=tally.duplicates,
        first_error=tally.first_error,
    )


def _untaken(rows: int, accepted: int) -> dict[str, int]:
    """Rows read from Spark but never handed to the producer (the task stopped early): counted, never lost."""
    return {"NOT_SENT": rows - accepted} if rows > accepted else {}


async def _make_room(producer: Producer, waits: deque[Message], n: int, limit: int, timeout: float) -> bool:
    """Wait until ``n`` more messages fit under ``limit`` (a group larger than the limit waits for an empty
    producer); False when the delivery timeout passed first."""
    try:
        async with asyncio.timeout(timeout):
            while producer.held and producer.held + n > limit:
                if not waits:
                    await producer.flush()
                    continue
                with contextlib.suppress(DeliveryError):  # a failed message also frees room
                    await waits.popleft()
    except TimeoutError:
        return False
    return True


def messages_by_topic(rows: Rows, default_topic: str | None) -> dict[str, list[Message]]:
    """Producer messages for one batch's rows, grouped by topic (routing per the module rules)."""
    n = rows.count
    now = time.time_ns() // 1_000_000
    timestamps = repeat(now, n) if rows.timestamp is None else (now if t is None else t for t in rows.timestamp)
    if rows.topic is None and rows.partition is None and rows.partition_key is None and rows.headers is None:
        assert default_topic is not None
        if rows.key is None:
            return {default_topic: [Message(None, v, t) for v, t in zip(rows.value, timestamps, strict=False)]}
        return {
            default_topic: [
                Message(k, v, t, None, None if k is None else key_to_partition_key(k))
                for k, v, t in zip(rows.key, rows.value, timestamps, strict=False)
            ]
        }
    groups: dict[str, list[Message]] = {}
    columns = zip(
        rows.value,
        timestamps,
        rows.key or repeat(None),
        rows.topic or repeat(None),
        rows.partition or repeat(None),
        rows.partition_key or repeat(None),
        rows.headers or repeat(None),
        strict=False,
    )
    for value, ts, key, topic, partition, partition_key, headers in columns:
        topic = topic or default_topic
        if topic is None:
            raise BadRow("a row has a null topic and the write has no 'topic' option")
        if partition is not None:
            if partition < 0:
                raise BadRow(f"partition {partition} is negative")
            m = Message(key, value, ts, headers, partition, pinned=True)
        elif partition_key is not None:
            if partition_key not in _PARTITION_KEY_RANGE:
                raise BadRow(f"partition_key {partition_key} does not fit in 32 bits")
            m = Message(key, value, ts, headers, partition_key)
        else:
            m = Message(key, value, ts, headers, None if key is None else key_to_partition_key(key))
        group = groups.get(topic)
        if group is None:
            groups[topic] = [m]
        else:
            group.append(m)
    return groups
