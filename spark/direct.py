"""Direct delivery: one task's Arrow batches produced to the brokers with ``bruce.producer``.

Rules:
- Each row is one ``Producer.send`` (routed per :func:`bruce.spark.schema.row_sends`); the producer batches per
  partition (keyless rows fill one partition's batch at a time).
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
- With a :class:`~bruce.spark.exactly_once.TaskTransaction` (exactlyOnce) the producer is transactional: the
  transaction is opened after the first cluster view (or the share skipped, every row counted as ``skipped``),
  committed with its marker instead of the final flush, and aborted on any discard or failure.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Iterator, Sequence

import pyarrow as pa

from bruce.producer import DeliveryError, DiscardReason, Message, MessageTooLarge, Producer, QueueFull

from .delivery import KafkaUnavailable, WriteSummary
from .exactly_once import TaskTransaction, skipped_rows
from .options import WriteOptions
from .schema import BadRow, Send, arrow_rows, row_sends


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


async def produce_batches(
    batches: Iterator[pa.RecordBatch], options: WriteOptions, txn: TaskTransaction | None = None
) -> WriteSummary:
    """Produce every row of ``batches``; the summary counts each row's fate (see the module rules). With ``txn``
    (exactlyOnce), the rows are one transaction with its marker, or skipped when already committed."""
    config = options.producer if txn is None else txn.config
    assert config is not None
    tally = Tally()
    timeout = options.delivery_timeout_ms / 1000
    producer = Producer(config, sink=tally)
    waits: deque[Message] = deque()  # the last message of each batch still held: what to wait on for room
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
        if txn is not None and not await txn.open(producer, timeout):
            skipped = skipped_rows(batches)
            return WriteSummary("direct", rows=skipped, skipped=skipped)
        send = producer.send
        for batch in batches:
            rows += batch.num_rows
            last = None
            for topic, value, key, partition, timestamp, headers, partition_key in row_sends(
                arrow_rows(batch), options.topic, options.partitioner
            ):
                try:
                    last = send(topic, value, key, partition, timestamp, headers, partition_key=partition_key)
                except MessageTooLarge as error:  # the brokers would refuse it: the row, not the task's setup
                    raise BadRow(f"a row is larger than kafka.message.max.bytes allows: {error}") from None
                except QueueFull:
                    row = (topic, value, key, partition, timestamp, headers, partition_key)
                    last = await _send_when_room(producer, waits, row, timeout)
                    if last is None:
                        room = False
                        break
            while waits and waits[0].done:
                waits.popleft()
            if last is not None:
                waits.append(last)
            if tally.discards or not room:
                break  # a discard (fail fast), or no room within the delivery timeout
            await asyncio.sleep(0)  # let the senders write what is ready while Spark prepares the next batch
        if txn is not None:
            await (txn.commit(producer, timeout) if room and not tally.discards else txn.abort(producer, timeout))
        elif room:  # else the delivery timeout has already passed without progress
            await producer.flush(timeout)
    except BaseException:
        if txn is not None:
            await txn.abort(producer, timeout)
        raise
    finally:
        await producer.close(0.0, DiscardReason.MESSAGE_TIMEOUT)
    return WriteSummary(
        "direct",
        rows=rows,
        delivered=tally.delivered_count - (txn.markers if txn is not None else 0),
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
