"""Queueing messages: :class:`Queueing`, the queueing half of :class:`~bruce.producer.producer.Producer` (its base
class): ``send``, ``send_many``, the daemon's ``submit``, sealing and linger.

Rules:
- The producer's base class, so that ``send`` is the producer's own method with no call in between (it runs once per
  message). ``Producer.__init__`` gives it its collaborators (configuration, counters, dispatcher, transactions,
  whether the producer runs) and tells it the event loop at ``start``. Its fields are its own — the queue limits,
  ``_accepting``, the open batches' linger timer and list, the last timestamp read from the clock —: the producer
  sets ``_accepting`` and calls ``_start_queueing``, ``_stop_queueing`` and ``_submit``, nothing else. Every method
  runs in the event loop's thread, never blocks and never awaits.
- ``send`` never blocks and never awaits: it queues the message and returns its delivery handle, or raises at
  once (:class:`QueueFull`, :class:`ProducerClosed`, :class:`MessageTooLarge`, :class:`UsageError` for bad
  arguments) and queues nothing. No future and no task is created per message. A keyless message without headers or
  partition is a value and a timestamp appended to its partition's open batch of columns (a :class:`Chunk`), its
  handle a :class:`Handle` pointing into it: no object per message is left for the garbage collector once the caller
  drops the handle. Others are :class:`Message` objects (the handle is the message); one joining an open batch of
  values turns that batch into messages.
- Keyless messages fill one partition's batch at a time (the AnyPartition cycle advances per batch); a
  ``partition_key`` routes with PartitionKey semantics, and so does a key (through the configured ``partitioner``:
  murmur2 by default, as Java's clients); an explicit partition is used as given.
- A batch is ready when it holds ``batch_num_messages``, or when one more message like its last would take it past
  ``batch_size`` bytes, the request data limit or one record batch of ``message_max_bytes`` (estimated as assembly
  does), when its first message is ``linger_ms`` old, or on ``flush``/``close``. A full batch of values goes to a
  request whole, encoded column by column (:mod:`bruce.producer.bulk`).
- ``send_many`` queues many values by one call, all or none, as chunks ready at once; one :class:`Bulk` reports
  every value's fate (no handle or future per value). ``submit`` is the daemon's entry point for a ready batch
  (no queue limits: the daemon has its own memory budget).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from bruce.wire import RECORD_BATCH_HEADER_SIZE as HEADER_SIZE
from bruce.wire import ProduceColumns, UsageError, column_sizes

from .bulk import Bulk, Chunk, measure, messages_of, queue_chunks
from .columns import ColumnRun, check_runs, column_messages, queue_column_runs
from .config import ProducerConfig
from .counters import Counters
from .dispatch import Dispatcher
from .errors import MessageTooLarge, ProducerClosed, QueueFull
from .handle import Handle
from .message import (
    Message,
    check_bytes,
    check_headers,
    check_partition,
    check_partition_key,
    check_timestamp,
    check_topic,
    timestamps_in_range,
)
from .metadata import key_to_partition_key
from .queues import ALONE_OVERHEAD, LEGACY_MESSAGE_OVERHEAD, RECORD_OVERHEAD, PartitionQueue
from .transactions import TransactionManager

_time_ns = time.time_ns
_new = object.__new__


class Queueing:
    """The queueing half of a :class:`~bruce.producer.producer.Producer`, its base class (see the module's rules)."""

    _loop: asyncio.AbstractEventLoop  # set by _start_queueing(): nothing is accepted before

    def __init__(
        self,
        config: ProducerConfig,
        counters: Counters,
        dispatcher: Dispatcher,
        txn: TransactionManager | None,
        running: Callable[[], bool],
    ) -> None:
        """``txn``: the producer's transactions, if any; ``running()``: the producer is started and not closed."""
        self._accepting = False  # send, send_many and submit refuse while False (before start, in close; transactions)
        self.counters = counters
        self._dispatcher = dispatcher
        self._sticky = dispatcher.sticky  # keyless messages' partition being filled, per topic (the dispatcher's)
        self._ledger = dispatcher.ledger
        self._txn = txn
        self._running = running
        self._message_max_bytes = config.message_max_bytes
        self._max_messages = config.queue_buffering_max_messages
        self._max_bytes = config.queue_buffering_max_kbytes * 1024
        self._batch_messages = config.batch_num_messages
        # A batch's bytes (send's and send_many's): within batch_size, a request's data limit and one record batch
        # (estimated as assembly does: Σ(key + value + RECORD_OVERHEAD) after the batch header)
        limits = [config.batch_size, config.message_max_bytes - HEADER_SIZE]
        overhead = LEGACY_MESSAGE_OVERHEAD if config.protocol == "v0" else ALONE_OVERHEAD
        self._max_size = config.message_max_bytes - overhead  # key + value above this: MSG_SIZE_TOO_LARGE at send
        self._chunk_bytes = min(limits + [config.produce_request_data_limit] * (config.produce_request_data_limit > 0))
        self._linger = config.linger_ms / 1000
        self._partitioner = config.partitioner
        self._null_key = key_to_partition_key(None, config.partitioner)  # where a message without key goes
        self._last_ms = 0  # the last timestamp send() read from the clock
        self._lingering: deque[tuple[float, PartitionQueue]] = deque()  # (open since, queue), oldest first
        self._linger_timer: asyncio.TimerHandle | None = None

    def _start_queueing(self, loop: asyncio.AbstractEventLoop) -> None:
        """The producer started in ``loop``: the linger timer runs there (``_accepting`` is the producer's to set)."""
        self._loop = loop

    def _stop_queueing(self) -> None:
        """The producer is closing: stop accepting, and no linger timer fires any more (what is open is flushed or
        discarded by the dispatcher)."""
        self._accepting = False
        if self._linger_timer is not None:
            self._linger_timer.cancel()
            self._linger_timer = None

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
        headers: Sequence[tuple[str, bytes | None]] | None = None,
        *,
        partition_key: int | None = None,
    ) -> Message | Handle:
        """Queue one message; returns its delivery handle (``await`` it for ``(partition, offset)``).

        Routing: ``partition`` as given; else ``partition_key`` (Bruce's PartitionKey: a 32-bit number, signed or
        not, modulo all partitions, moving on to the next available one); else the key through the configured
        ``partitioner`` (murmur2 by default: where Java's clients put it) the same way; else any partition. A bad
        argument (``partition`` and ``partition_key`` together, a timestamp out of range, malformed headers, ...)
        raises :class:`UsageError` and queues nothing."""
        d = self._dispatcher
        ledger = self._ledger
        if ledger.held_messages >= self._max_messages or not self._accepting:
            self._refuse(f"{ledger.held_messages} messages held (queue_buffering_max_messages)")
        if type(topic) is not str:
            check_topic(topic)
        if type(value) is not bytes and value is not None:
            check_bytes(value, "value")
        if key is None and partition is None and partition_key is None:  # the usual case, checked once
            pkey, pinned = self._null_key, False
            size = len(value) if value else 0
        else:
            if key is not None and type(key) is not bytes:
                check_bytes(key, "key")
            if partition is not None:
                if partition_key is not None or type(partition) is not int or partition < 0:
                    check_partition(partition, partition_key)
                pkey, pinned = partition, True
            elif partition_key is not None:
                check_partition_key(partition_key)
                pkey, pinned = partition_key, False
            else:
                pkey, pinned = key_to_partition_key(key, self._partitioner), False
            size = (len(key) if key else 0) + (len(value) if value else 0)
        if size > self._max_size:
            self._too_large(size)
        if timestamp is None:
            timestamp = _time_ns() // 1_000_000
            if timestamp == self._last_ms:
                timestamp = self._last_ms  # one int object per millisecond, shared: less to hold and to walk
            else:
                self._last_ms = timestamp
        else:
            check_timestamp(timestamp)
        if headers is not None:
            check_headers(headers)
        if ledger.held_bytes + size > self._max_bytes:
            self._refuse(f"{ledger.held_bytes} bytes held (queue_buffering_max_kbytes)")
        ledger.accepted += 1  # Ledger.admit_one(size), inline
        ledger.held_messages += 1
        ledger.held_bytes += size
        if pkey is None and key is None and headers is None:  # the usual case: a value in its batch's columns
            pq = self._sticky.get(topic) or d.next_sticky(topic)
            if pq is not None:
                batch: Any = pq.open  # a list of messages, or send's open chunk (a list to the queue)
                if type(batch) is Chunk:
                    values: Any = batch.values  # an open chunk's columns are lists
                    index = len(values)
                    values.append(value)
                    stamps: Any = batch.timestamp
                    stamps.append(timestamp)
                    held = pq.open_bytes = pq.open_bytes + size
                elif not batch:
                    pq.open = batch = Chunk.opened(value, timestamp)  # type: ignore[assignment]  # a list to the queue
                    index = 0
                    held = self._opened(pq, size)
                else:
                    index = -1  # the open batch holds messages (a key, headers or a partition): one more
                if index >= 0:
                    h = _new(Handle)
                    h._chunk = batch
                    h._index = index
                    # Full at batch_num_messages, or when one more message like this one would not fit (_chunk_bytes)
                    more = index + 2  # the batch's count with one more message
                    if more > self._batch_messages or held + more * RECORD_OVERHEAD + size > self._chunk_bytes:
                        self._seal(pq, True)
                    return h
        # Message(key, value, timestamp, headers, pkey, pinned): every slot set as __init__ sets it, without the call
        m = _new(Message)
        m.key = key
        m.value = value
        m.timestamp = timestamp
        m.headers = headers
        m.partition_key = pkey
        m.pinned = pinned
        m.size = size
        m.attempts = 0
        m.possible_duplicate = False
        m.partition = -1
        m._fate = None
        if pkey is None:
            pq = d.sticky.get(topic) or d.next_sticky(topic)
            if pq is None:
                d.route(topic, [m])  # held until the topic is known, or discarded: no partition available
                return m
        else:
            pq = d.keyed_queue(topic, m)
            if pq is None:
                return m  # held or discarded by keyed_queue
        batch = pq.open
        if type(batch) is Chunk:  # an open batch of values: its messages now, this one joins them
            pq.open = batch = batch.unpack()[:]
        if batch:
            held = pq.append_open(m, size)
        else:
            batch.append(m)
            held = self._opened(pq, size)
        count = len(batch)
        if count >= self._batch_messages or held + (count + 1) * RECORD_OVERHEAD + size > self._chunk_bytes:
            self._seal(pq, True)
        return m

    def _opened(self, pq: PartitionQueue, size: int) -> int:
        """``pq``'s open batch just got its first message (``size`` bytes): its linger starts; returns its bytes."""
        since = self._loop.time()
        pq.open_since = since
        pq.open_bytes = size
        self._lingering.append((since, pq))
        if self._linger_timer is None:
            self._linger_timer = self._loop.call_at(since + self._linger, self._linger_expired)
        return size

    def send_many(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None = None,
        *,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> Bulk:
        """Queue many values at once (all or none); returns a :class:`Bulk`: ``await`` it, then ``results()`` gives
        each value's ``(partition, offset)`` or :class:`DeliveryError`, in order.

        Keyless values (``keys`` None) go in batches of their own, ready at once (no linger), each batch to the next
        partition of the topic's cycle, or all to ``partition``. ``keys`` (one per value, None for none) route each
        value as ``send`` does. Every value gets ``timestamp`` (default: now). Raises as ``send`` does:
        :class:`QueueFull` when the values do not all fit the queue limits, :class:`UsageError` for a value or key
        that is not bytes, ``keys`` of another length, a bad ``partition`` or ``timestamp``."""
        d = self._dispatcher
        ledger = self._ledger
        count = len(values)
        if ledger.held_messages + count > self._max_messages or not self._accepting:
            self._refuse(f"{ledger.held_messages} messages held, {count} more asked (queue_buffering_max_messages)")
        if type(topic) is not str:
            check_topic(topic)
        sizes, size = measure(values, keys)
        biggest = max(sizes, default=0) if keys is None else max(map(_with_key, sizes, keys), default=0)
        if biggest > self._max_size:
            self._too_large(biggest)
        if partition is not None:
            check_partition(partition, None)
        if timestamp is None:
            timestamp = time.time_ns() // 1_000_000
        else:
            check_timestamp(timestamp)
        if ledger.held_bytes + size > self._max_bytes:
            self._refuse(f"{ledger.held_bytes} bytes held, {size} more asked (queue_buffering_max_kbytes)")
        if not count:
            return Bulk([], 0)
        info = d.topic_info(topic)
        if keys is not None or info is None:  # per-value routing, or held until the topic is known: messages now
            messages = messages_of(values, keys, timestamp, partition, self._partitioner)
            chunk = Chunk.of(messages)
            self._submit(topic, messages)
            return Bulk([chunk], count)
        ledger.admit_many(count, size)
        limits = (self._batch_messages, self._chunk_bytes)
        chunks = queue_chunks(d, topic, info, values, sizes, timestamp, partition, *limits, self._seal_open)
        return Bulk(chunks, count)

    def send_columns(
        self,
        topic: str,
        columns: ProduceColumns,
        runs: Sequence[ColumnRun] | None = None,
        *,
        timestamp: int | None = None,
    ) -> Bulk:
        """Queue the rows of ``columns`` (Arrow-layout buffers: values, keys, timestamps, headers) at once, all or
        none, with no Python object per row; returns a :class:`Bulk` as ``send_many`` does.

        ``runs``: the rows in order as ``(stop, partition_key, pinned)`` runs, each routed as ``send`` routes one
        message with that ``partition_key`` (None: any partition, one per batch; ``pinned``: it is the partition,
        as ``send``'s ``partition``); None: every row to any partition. Rows without a timestamp column get
        ``timestamp`` (default: now). Raises as ``send_many`` does: :class:`QueueFull`, :class:`MessageTooLarge`,
        :class:`UsageError` for malformed columns or runs, or a timestamp out of range."""
        d = self._dispatcher
        ledger = self._ledger
        count = columns.count
        if ledger.held_messages + count > self._max_messages or not self._accepting:
            self._refuse(f"{ledger.held_messages} messages held, {count} more asked (queue_buffering_max_messages)")
        if type(topic) is not str:
            check_topic(topic)
        sizes = column_sizes(columns)
        if sizes.biggest > self._max_size:
            self._too_large(sizes.biggest)
        try:
            spans = check_runs(runs, count)
        except ValueError as e:
            raise UsageError(str(e)) from None
        if columns.timestamps is None:
            timestamp = time.time_ns() // 1_000_000 if timestamp is None else timestamp
            check_timestamp(timestamp)
        elif timestamp is not None:
            raise UsageError("timestamp is for columns without timestamps")
        elif count:
            check_timestamp(sizes.min_timestamp)
            check_timestamp(sizes.max_timestamp)
        size = sizes.size(0, count)
        if ledger.held_bytes + size > self._max_bytes:
            self._refuse(f"{ledger.held_bytes} bytes held, {size} more asked (queue_buffering_max_kbytes)")
        if not count:
            return Bulk([], 0)
        info = d.topic_info(topic)
        if info is None:  # held until the topic is known: messages now, routed as submit routes
            messages = [
                m
                for start, stop, key, pinned in spans
                for m in column_messages(columns, start, stop, timestamp, key, pinned)
            ]
            chunk = Chunk.of(messages)
            self._submit(topic, messages)
            return Bulk([chunk], count)
        ledger.admit_many(count, size)
        limits = (self._batch_messages, self._chunk_bytes)
        chunks = queue_column_runs(d, topic, info, columns, sizes, spans, timestamp, *limits, self._seal_open)
        return Bulk(chunks, count)

    def _seal_open(self, pq: PartitionQueue) -> None:
        """Seal ``pq``'s open batch before others are queued behind it (``send_many``)."""
        self._seal(pq, False)

    def _seal(self, pq: PartitionQueue, full: bool) -> None:
        """Seal ``pq``'s open batch (``full``: it reached the batch limits). A full batch of values (a
        :class:`Chunk`: keyless messages without headers or partition) goes to a request whole, encoded column by
        column; batches sealed by the linger, and full ones of one or two large values, may join others in one
        request."""
        batch: Any = pq.open
        n = len(batch)
        if full and n > 2 and type(batch) is Chunk and pq.open_bytes + n * RECORD_OVERHEAD <= self._chunk_bytes:
            batch.travels_whole = True
        self._dispatcher.seal(pq)

    def _too_large(self, size: int) -> None:
        limit = self._message_max_bytes
        self.counters.inc("MsgSizeTooLarge")
        raise MessageTooLarge(
            f"MSG_SIZE_TOO_LARGE: {size} bytes of key and value cannot fit message_max_bytes ({limit}) with the "
            f"{limit - self._max_size} bytes a message takes besides them"
        )

    def _refuse(self, detail: str) -> None:
        if not self._accepting and self._txn is not None and self._running():
            self._txn.refuse()  # raises: outside a transaction, or the transaction failed
        if not self._accepting:
            raise ProducerClosed("the producer is not accepting messages (not started, or closing)")
        self.counters.inc("QueueFull")
        raise QueueFull(detail)

    def _submit(self, topic: str, messages: list[Message]) -> None:
        """The daemon's ready batch for ``topic`` (:meth:`Producer.submit <bruce.producer.Producer.submit>`)."""
        if not self._accepting:
            raise ProducerClosed("the producer is not accepting messages (not started, or closing)")
        d = self._dispatcher
        self._ledger.admit(messages)
        if not timestamps_in_range(messages):
            messages = d.discard_bad_timestamps(topic, messages)
        if messages:
            d.route(topic, messages)

    def _linger_expired(self) -> None:
        """Seal every open batch whose first message is ``linger_ms`` old; wake again for the next one. An entry whose
        batch was sealed meanwhile (full, or flushed) is dropped when its time comes."""
        self._linger_timer = None
        now = self._loop.time()
        lingering = self._lingering
        linger = self._linger
        while lingering:
            since, pq = lingering[0]
            if since + linger > now:
                self._linger_timer = self._loop.call_at(since + linger, self._linger_expired)
                return
            lingering.popleft()
            if pq.open_since == since:
                self._seal(pq, False)


def _with_key(size: int, key: bytes | None) -> int:
    return size + (len(key) if key else 0)
