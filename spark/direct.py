"""Direct delivery: one task's Arrow batches produced to the brokers with ``bruce.producer``.

Rules:
- Each row is one ``Producer.send``; the producer batches per partition (keyless rows fill one partition's batch at a
  time). Routing per row: ``partition`` as given; else ``partition_key`` with Bruce's PartitionKey semantics; else
  the key's CRC-32 through the same PartitionKey rule; else any partition.
- The task first waits (up to ``delivery.timeout.ms``) for the producer's first cluster view; without one it fails
  with :class:`KafkaUnavailable` before taking any row.
- Bounded by the producer's own limits (``kafka.queue.buffering.max.messages`` and ``.max.kbytes``): when ``send``
  refuses a row (``QueueFull``), the task waits for acknowledgements, oldest batch first, and sends the row again.
  Every wait — and the final flush — is bounded by ``delivery.timeout.ms``; what is still held then is discarded as
  MESSAGE_TIMEOUT, and rows never handed over count as NOT_SENT. A row larger than the whole byte limit is a
  :class:`BadRow`.
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

from bruce.producer import DeliveryError, DiscardReason, Message, Producer, QueueFull, key_to_partition_key

from .delivery import KafkaUnavailable, WriteSummary
from .options import WriteOptions
from .schema import BadRow, Rows, arrow_rows

_PARTITION_KEY_RANGE = range(-(2**31), 2**32)

# One row as Producer.send's arguments: topic, value, key, partition, timestamp, headers, partition_key
Headers = Sequence[tuple[str, bytes | None]] | None
Send = tuple[str, bytes | None, bytes | None, int | None, int, Headers, int | None]


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
    producer = Producer(config, sink=tally)
    waits: deque[Message] = deque()  # the last message of each batch handed over: what to wait on for room
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
        send = producer.send
        for batch in batches:
            rows += batch.num_rows
            last = None
            for topic, value, key, partition, timestamp, headers, partition_key in row_sends(
                arrow_rows(batch), options.topic
            ):
                try:
                    last = send(topic, value, key, partition, timestamp, headers, partition_key=partition_key)
                except QueueFull:
                    row = (topic, value, key, partition, timestamp, headers, partition_key)
                    last = await _send_when_room(producer, waits, row, timeout)
                    if last is None:
                        room = False
                        break
            if last is not None:
                waits.append(last)
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


async def _send_when_room(producer: Producer, waits: deque[Message], row: Send, timeout: float) -> Message | None:
    """Send a row the producer refused (QueueFull) once acknowledgements have made room for it; None when the
    delivery timeout passed first."""
    topic, value, key, partition, timestamp, headers, partition_key = row
    try:
        async with asyncio.timeout(timeout):
            while True:
                if waits:
                    with contextlib.suppress(DeliveryError):  # a failed message also frees room
                        await waits.popleft()
                elif producer.held:
                    await producer.flush()
                else:
                    size = (len(key) if key else 0) + (len(value) if value else 0)
                    raise BadRow(f"a row of {size} bytes does not fit in kafka.queue.buffering.max.kbytes")
                try:
                    return producer.send(topic, value, key, partition, timestamp, headers, partition_key=partition_key)
                except QueueFull:
                    continue
    except TimeoutError:
        return None


def row_sends(rows: Rows, default_topic: str | None) -> Iterator[Send]:
    """Each row of one batch as ``Producer.send``'s arguments (routing per the module rules; no timestamp: now).
    Raises :class:`BadRow` for a row that cannot be written."""
    n = rows.count
    now = time.time_ns() // 1_000_000
    timestamps = repeat(now, n) if rows.timestamp is None else (now if t is None else t for t in rows.timestamp)
    if rows.topic is None and rows.partition is None and rows.partition_key is None and rows.headers is None:
        if default_topic is None:
            raise BadRow("a row has a null topic and the write has no 'topic' option")
        if rows.key is None:
            for v, t in zip(rows.value, timestamps, strict=False):
                yield default_topic, v, None, None, t, None, None
            return
        for k, v, t in zip(rows.key, rows.value, timestamps, strict=False):
            yield default_topic, v, k, None, t, None, None if k is None else key_to_partition_key(k)
        return
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
            yield topic, value, key, partition, ts, headers, None
        elif partition_key is not None:
            if partition_key not in _PARTITION_KEY_RANGE:
                raise BadRow(f"partition_key {partition_key} does not fit in 32 bits")
            yield topic, value, key, None, ts, headers, partition_key
        else:
            yield topic, value, key, None, ts, headers, None if key is None else key_to_partition_key(key)


def messages_by_topic(rows: Rows, default_topic: str | None) -> dict[str, list[Message]]:
    """The rows as the producer's messages, grouped by topic: what :func:`row_sends` hands to ``send`` (an explicit
    partition is a pinned partition key)."""
    groups: dict[str, list[Message]] = {}
    for topic, value, key, partition, ts, headers, partition_key in row_sends(rows, default_topic):
        pinned = partition is not None
        message = Message(key, value, ts, headers, partition if pinned else partition_key, pinned)
        groups.setdefault(topic, []).append(message)
    return groups
