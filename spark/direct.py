"""Direct delivery: one task's Arrow batches produced to the brokers with ``bruce.producer``.

Rules:
- Each batch goes topic by topic (:mod:`bruce.spark.write_columns`): a topic's rows are one
  ``Producer.send_columns`` of the batch's own buffers — values, keys, timestamps, headers —, grouped by the
  partition each row goes to (its ``partition``, else its ``partition_key``, else its key through
  ``kafka.partitioner``, else any partition, as :func:`bruce.spark.schema.row_sends` routes one row): no Python
  object per row; the rows each partition gets by their data stay in their order, and keyless rows in theirs
  among themselves. A topic the producer's cluster view does not know yet
  goes one ``Producer.send`` per row (its messages wait for the topic, or are discarded as BAD_TOPIC).
- The task first waits (up to ``delivery.timeout.ms``) for the producer's first cluster view; without one it fails
  with :class:`KafkaUnavailable` before taking any row.
- Bounded by the producer's own limits (``kafka.queue.buffering.max.messages`` and ``.max.kbytes``): when the
  producer refuses rows (``QueueFull``: all or none), the task waits for acknowledgements, oldest batch first, and
  hands them over again (grouped again: the cluster view may have changed). Every wait — and the final flush — is
  bounded by ``delivery.timeout.ms``; what is still held then is discarded as MESSAGE_TIMEOUT, and rows never handed
  over count as NOT_SENT. Rows refused with nothing held (they alone exceed the limits) go in halves; a single row
  larger than the whole byte limit, or than ``kafka.message.max.bytes`` allows, is a :class:`BadRow`.
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
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import TypeVar

import pyarrow as pa

from bruce.producer import Bulk, DeliveryError, DiscardReason, Handle, Message, MessageTooLarge, Producer, QueueFull

from .delivery import KafkaUnavailable, WriteSummary
from .exactly_once import TaskTransaction, skipped_rows
from .options import WriteOptions
from .schema import BadRow, Rows, arrow_rows, row_sends
from .write_columns import by_topic, plan

T = TypeVar("T")
Waits = deque[Message | Handle | Bulk]  # the last message (or bulk) of each batch still held: what to wait on for room


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
    producer = Producer(config, sink=tally)  # type: ignore[arg-type]  # OutcomeSink.sent is optional (sent_hook)
    waits: Waits = deque()
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
        for batch in batches:
            rows += batch.num_rows
            try:
                last = await _send_batch(producer, waits, batch, options, timeout)
            except MessageTooLarge as error:  # the brokers would refuse it: the row, not the task's setup
                raise BadRow(f"a row is larger than kafka.message.max.bytes allows: {error}") from None
            while waits and waits[0].done:
                waits.popleft()
            if last is not None:
                waits.append(last)
            room = producer.accepted == rows
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


async def _send_batch(
    producer: Producer, waits: Waits, batch: pa.RecordBatch, options: WriteOptions, timeout: float
) -> Handle | Message | Bulk | None:
    """Hand one batch's rows to the producer, topic by topic (see the module rules); returns the last handle, None
    when nothing was sent. Stops early (fewer accepted than taken) when the delivery timeout passed without room."""
    last: Handle | Message | Bulk | None = None
    for topic, rows in by_topic(batch, options.topic):
        sent = await _send_topic(producer, waits, topic, rows, options, timeout)
        if sent is None:
            break
        last = sent
    return last


async def _send_topic(
    producer: Producer, waits: Waits, topic: str, rows: pa.RecordBatch, options: WriteOptions, timeout: float
) -> Handle | Message | Bulk | None:
    """One topic's rows as columns in one ``send_columns`` (planned again after each wait: the cluster view may have
    changed); halves of them when they alone exceed the queue limits; row by row while the topic is unknown."""

    def attempt() -> Bulk | bool:  # False: the cluster view does not know the topic
        cluster = producer.cluster()
        planned = plan(rows, cluster.topic(topic) if cluster is not None else None, options.partitioner)
        return False if planned is None else producer.send_columns(topic, columns=planned[0], runs=planned[1])

    try:
        try:
            bulk = attempt()
        except QueueFull:
            waited = await _when_room(producer, waits, attempt, timeout)
            if waited is None:
                return None  # no room within the delivery timeout
            bulk = waited
    except QueueFull:  # these rows alone exceed the queue limits: half at a time
        if rows.num_rows == 1:
            one = arrow_rows(rows)
            size = len(one.value[0] or b"") + len((one.key or [None])[0] or b"")
            raise BadRow(f"a row of {size} bytes does not fit in kafka.queue.buffering.max.kbytes") from None
        half = rows.num_rows // 2
        if await _send_topic(producer, waits, topic, rows.slice(0, half), options, timeout) is None:
            return None
        return await _send_topic(producer, waits, topic, rows.slice(half), options, timeout)
    if bulk is not False:
        return bulk  # type: ignore[return-value]  # a Bulk (attempt never returns True)
    return await _send_rows(producer, waits, arrow_rows(rows), topic, options, timeout)


async def _send_rows(
    producer: Producer, waits: Waits, rows: Rows, topic: str, options: WriteOptions, timeout: float
) -> Message | Handle | None:
    """Rows one ``send`` each, routed per :func:`~bruce.spark.schema.row_sends` (a topic the producer does not know
    yet: its messages wait for it)."""
    last: Message | Handle | None = None
    send = producer.send
    for topic_, value, key, partition, timestamp, headers, partition_key in row_sends(rows, topic, options.partitioner):
        try:
            last = send(topic_, value, key, partition, timestamp, headers, partition_key=partition_key)
        except QueueFull:
            again = partial(send, topic_, value, key, partition, timestamp, headers, partition_key=partition_key)
            try:
                sent = await _when_room(producer, waits, again, timeout)
            except QueueFull:
                size = (len(key) if key else 0) + (len(value) if value else 0)
                raise BadRow(f"a row of {size} bytes does not fit in kafka.queue.buffering.max.kbytes") from None
            if sent is None:
                return None
            last = sent
    return last


async def _when_room(producer: Producer, waits: Waits, attempt: Callable[[], T], timeout: float) -> T | None:
    """``attempt()`` (a send the producer refused with QueueFull) once acknowledgements have made room for it; None
    when the delivery timeout passed first. Raises QueueFull when nothing is held and it still does not fit."""
    try:
        async with asyncio.timeout(timeout):
            while True:
                if waits:
                    with contextlib.suppress(DeliveryError):  # a failed message also frees room
                        await waits.popleft()
                elif producer.held:
                    await producer.flush()
                else:
                    return attempt()  # nothing left to wait for: fits now, or never
                try:
                    return attempt()
                except QueueFull:
                    continue
    except TimeoutError:
        return None
