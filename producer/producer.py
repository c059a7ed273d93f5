"""The public producer: ``Producer`` for library users and tools, plus the batch-level entry points of the daemon.

Rules:
- ``send`` never blocks and never awaits: it queues the message and returns it as its delivery handle, or raises at
  once (:class:`QueueFull`, :class:`ProducerClosed`, :class:`UsageError` for bad arguments). No future and no task is
  created per message.
- Keyless messages fill one partition's batch at a time (the AnyPartition cycle advances per batch); a
  ``partition_key`` routes with PartitionKey semantics, and so does a key (through the configured ``partitioner``:
  murmur2 by default, as Java's clients); an explicit partition is used as given.
- A batch is ready when it holds ``batch_num_messages``, or when one more message like its last would take it past
  ``batch_size`` bytes, the request data limit or one record batch of ``message_max_bytes`` (estimated as assembly
  does), when its first message is ``linger_ms`` old, or on ``flush``/``close``. A full batch whose messages nobody
  else holds (keyless, no headers, their handles dropped) is kept as a chunk of values (:mod:`bruce.producer.bulk`).
- ``send_many`` queues many values by one call, all or none, as chunks ready at once; one :class:`Bulk` reports
  every value's fate (no handle or future per value).
- :meth:`Producer.create_topic` is Bruce's topic auto-creation (also used, with ``topic_autocreate``, for messages
  sent to an unknown topic).
- Long-lived work (senders, metadata refresh, pause, topic auto-creation) runs in one ``asyncio.TaskGroup``: a task
  that crashes ends the producer with its exception. The producer starts without waiting for Kafka: messages for topics
  not yet known wait for the first metadata (``await producer.ready()`` waits for it).
- The daemon may give a ``pack`` function: ready batches that wait for a broker are then held in its compact form
  (:mod:`bruce.producer.queues`), and :meth:`Producer.compact` packs the others on demand.
- ``close(deadline, reason)``: stop accepting, flush, wait for ACKs until the deadline, then discard what is left
  with ``reason`` (PRODUCER_CLOSED; the daemon's :meth:`Producer.shutdown` and its crash path use SERVER_SHUTDOWN).
- ``freeze_gc``: ``start`` runs a full collection, then ``gc.freeze()``: what the program holds at that moment (modules,
  configuration, caches) is no longer walked by the cyclic collector, whose full collections otherwise walk it again
  and again while messages are held. Off by default: it concerns the whole program (a cycle among those objects that
  later becomes garbage is not collected).
- ``message_timeout_ms`` (librdkafka's ``message.timeout.ms``; 0 = none): a periodic tick (a tenth of the timeout,
  10 ms to 1 s) discards as MESSAGE_TIMEOUT what was queued longer than that (see the dispatcher), so every wait of
  the API ends: awaiting a handle, ``flush()``, and ``ready()`` (whose default bound is the message timeout).
- The cluster view's side (``ready``, new views, refusals, the daemon's queries) is :mod:`bruce.producer.views`.
"""

from __future__ import annotations

import asyncio
import gc
import random
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from bruce.wire.compression import Codec
from bruce.wire.errors import UsageError
from bruce.wire.recordbatch_schema import HEADER_SIZE

from .backoff import PauseBackoff
from .bulk import Bulk, Chunk, chunk_of_unheld, measure, messages_of, queue_chunks
from .config import ProducerConfig
from .counters import Counters
from .dispatcher import Dispatcher
from .duplicates import DuplicateCheck
from .errors import MessageTooLarge, ProducerClosed, QueueFull
from .expiry import expire_loop
from .journal import PartJournal
from .message import (
    Message,
    OutcomeSink,
    check_bytes,
    check_headers,
    check_partition,
    check_partition_key,
    check_timestamp,
    check_topic,
    timestamps_in_range,
)
from .metadata import MetadataFetcher
from .partitioner import AnyPartitionCycle, key_to_partition_key
from .pause import PauseController
from .queues import Pack, PartitionQueue
from .reasons import DiscardReason
from .request import ALONE_OVERHEAD, LEGACY_MESSAGE_OVERHEAD, RECORD_OVERHEAD, Compression, CompressionPolicy
from .security import client_context
from .sender import Sender
from .sequencing import log_idempotence_off
from .state import ProducerState
from .topics import TopicCreator
from .transactions import TransactionalApi, TransactionManager
from .transport import Timeouts
from .trouble import BrokerTrouble
from .views import ProducerViews

_time_ns = time.time_ns
_new = object.__new__


class Producer(ProducerViews, TransactionalApi):
    """A non-blocking Kafka producer. ``async with Producer(ProducerConfig(...)) as p: handle = p.send(...)``."""

    def __init__(
        self,
        config: ProducerConfig | None = None,
        *,
        sink: OutcomeSink | None = None,
        compression: CompressionPolicy | None = None,
        require_topics: bool = False,
        rng: random.Random | None = None,
        pack: Pack | None = None,
        freeze_gc: bool = False,
    ) -> None:
        self.config = config = config or ProducerConfig()
        self._freeze_gc = freeze_gc
        client_context(config.security)  # certificates and keys load now: a bad one is a ConfigError here, not later
        self.counters = Counters()
        self._rng = rng or random.Random()
        if compression is None:
            fixed = Compression(Codec[config.compression_codec.upper()])
            compression = lambda topic, messages: fixed  # noqa: E731
        self._policy = compression
        self._timeouts = Timeouts(
            connect=config.connect_timeout_ms / 1000,
            socket=config.socket_timeout_ms / 1000,
            request=config.request_timeout_ms / 1000,
        )
        self._accepting = False
        self._started = False
        self.state: ProducerState | None = None  # with config.state_path: the durable idempotence state
        self._max_messages = config.queue_buffering_max_messages
        self._max_bytes = config.queue_buffering_max_kbytes * 1024
        self._batch_messages = config.batch_num_messages
        self._batch_bytes = config.batch_size
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
        self._mixed: set[PartitionQueue] = set()  # open batches holding a message with a key, headers or partition
        self._lingering: deque[tuple[float, PartitionQueue]] = deque()  # (open since, queue), oldest first
        self._linger_timer: asyncio.TimerHandle | None = None
        self._drained_future: asyncio.Future[None] | None = None  # what flush() waits on, while someone does
        self._senders: dict[int, Sender] = {}
        self._tasks: list[asyncio.Task[Any]] = []
        self._core: list[asyncio.Task[Any]] = []  # the refresh loop and the pause: alive as long as the producer
        self._group: asyncio.TaskGroup | None = None
        self._first_view: asyncio.Future[None] | None = None
        self._dispatcher = d = Dispatcher(config, self.counters, sink, cycle=AnyPartitionCycle(self._rng))
        self._duplicates = DuplicateCheck(d, self, config, self._spawn)
        if d.seq is not None:
            d.seq.on_duplicate = self._duplicates
        self._trouble = BrokerTrouble()
        self._fetcher = fetcher = MetadataFetcher(
            config, self.counters, self._timeouts, rng=self._rng, require_topics=require_topics, trouble=self._trouble
        )
        backoff = PauseBackoff(
            config.pause_rate_limit_initial_ms, config.pause_rate_limit_max_double, config.min_pause_delay_ms, self._rng
        )
        self._pause = PauseController(d, fetcher, self._senders.values, self._apply_view, self.counters, backoff)
        d.wake_broker = self._wake_broker
        d.on_pause = self._pause.request
        d.on_unknown_topic = lambda topic: fetcher.request()
        self._topics = TopicCreator(config, self.counters, d, fetcher, self._apply_view, self._spawn)
        d.on_autocreate = self._topics.start
        d.on_drained = self._drained
        d.on_progress = self._pause.progress
        d.fetches_begun = lambda: fetcher.begun
        fetcher.on_refused = self._refused
        self.keep_on_auth_failure = False  # the daemon keeps messages (within its budget) while brokers refuse it
        self._last_refusal = ""
        d.pack = pack
        self._txn = TransactionManager(self) if config.transactional_id is not None else None
        if d.seq is not None:
            d.seq.txn = self._txn
        if d.seq is None:
            log_idempotence_off(config)

    # ---------------------------------------------------------------- lifecycle

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        await self.close(None if exc is None else 0.0, error=exc)

    async def start(self) -> None:
        """Start the producer's tasks (metadata is fetched in the background; see :meth:`ready`)."""
        if self._started:
            raise UsageError("a Producer can be started once")
        self._started = True
        if self.config.state_path is not None:
            self.state = ProducerState(self.config.state_path)  # StateInUse before anything started
        if self._freeze_gc:  # the program's state so far is long-lived: the collector stops walking it
            gc.collect()
            gc.freeze()
        self._loop = loop = asyncio.get_running_loop()
        self._dispatcher.clock = loop.time
        self._first_view = loop.create_future()
        self._group = asyncio.TaskGroup()
        await self._group.__aenter__()
        d = self._dispatcher
        waiting = lambda: d.view is None or d.held_messages > 0  # noqa: E731
        self._spawn(self._fetcher.refresh_loop(self._apply_view, lambda: self._pause.pausing, waiting))
        self._spawn(self._pause.run())
        if self.config.message_timeout_ms:
            self._dispatcher.stamp = loop.time()
            self._spawn(expire_loop(self._dispatcher, loop, self.config.message_timeout_ms))
        self._core = list(self._tasks)
        self._fetcher.request()
        self._accepting = self._txn is None  # a transactional producer accepts within a transaction only
        if self.state is not None:  # settle what an earlier producer on the path left (bruce.producer.state)
            await self.state.settle(self)

    def journal_batches(self, journal: PartJournal) -> None:
        """Journal every idempotent batch before it is sent (:mod:`bruce.producer.journal`; the daemon's spool)."""
        self._dispatcher.journal = journal

    async def flush(self, timeout: float | None = None) -> int:
        """Send every batch now and wait (up to ``timeout`` s) until nothing is held; returns how many messages are
        still held (0 = everything has a fate). Without ``timeout`` the wait still ends: within ``message_timeout_ms``
        (plus ``request_timeout_ms`` for a request under way) every message is delivered or has failed."""
        d = self._dispatcher
        d.seal_all()
        if d.held_messages:
            if self._drained_future is None:
                self._drained_future = self._loop.create_future()
            try:
                async with asyncio.timeout(timeout):
                    await asyncio.shield(self._drained_future)
            except TimeoutError:
                pass
        return d.held_messages

    async def close(
        self,
        deadline: float | None = None,
        reason: DiscardReason = DiscardReason.PRODUCER_CLOSED,
        *,
        error: BaseException | None = None,
    ) -> None:
        """Stop accepting, flush, wait up to ``deadline`` s (default ``shutdown_max_delay_ms``) for ACKs, then discard
        what is left with ``reason`` (the daemon: SERVER_SHUTDOWN) and stop every task and connection.

        ``error`` is the exception that is ending the caller, if any: nothing is flushed or awaited then. A
        ``CancelledError`` (how a crashed producer task stops the task running the producer) goes to the task group,
        so ``close`` raises the crash (an ``ExceptionGroup``) or the cancellation; any other error is the caller's
        to raise. A task that crashed is raised by ``close`` in every case. Closing twice does nothing."""
        group = self._group
        if group is None:
            return
        self._accepting = False
        if deadline is None:
            deadline = self.config.shutdown_max_delay_ms / 1000
        if error is None and self._tasks_alive():
            await self.flush(deadline)
        d = self._dispatcher
        # From here on nothing may start: no sender, pause, fetch or auto-creation (the task group is ending).
        d.wake_broker = d.on_unknown_topic = d.on_autocreate = lambda _: None
        d.on_pause = lambda cause, answered: None
        for task in self._tasks:
            task.cancel()
        if self._linger_timer is not None:
            self._linger_timer.cancel()
        if self._txn is not None:
            self._txn.close()
        for sender in self._senders.values():
            left = sender.take_all()
            sender.close_connection()
            for part in left:
                part.queue.busy = False
                part.queue.in_flight = part.queue.staged = 0
                d.discard(part.queue.topic, part.messages, reason, "not acknowledged by the close deadline")
        self._duplicates.close(reason)
        d.discard_everything(reason, "not sent by the close deadline")
        self._group = None
        try:
            if isinstance(error, asyncio.CancelledError):
                await group.__aexit__(type(error), error, error.__traceback__)
            else:
                await group.__aexit__(None, None, None)
        finally:
            if self.state is not None:
                self.state.close()

    async def shutdown(self, deadline: float | None = None) -> None:
        """The daemon's graceful shutdown: like :meth:`close`, with SERVER_SHUTDOWN for what is left."""
        await self.close(deadline, DiscardReason.SERVER_SHUTDOWN)

    # ---------------------------------------------------------------- sending

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
    ) -> Message:
        """Queue one message; returns its delivery handle (``await`` it for ``(partition, offset)``).

        Routing: ``partition`` as given; else ``partition_key`` (Bruce's PartitionKey: a 32-bit number, signed or
        not, modulo all partitions, moving on to the next available one); else the key through the configured
        ``partitioner`` (murmur2 by default: where Java's clients put it) the same way; else any partition. A bad
        argument (``partition`` and ``partition_key`` together, a timestamp out of range, malformed headers, ...)
        raises :class:`UsageError` and queues nothing."""
        d = self._dispatcher
        if d.held_messages >= self._max_messages or not self._accepting:
            self._refuse(f"{d.held_messages} messages held (queue_buffering_max_messages)")
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
        if d.held_bytes + size > self._max_bytes:
            self._refuse(f"{d.held_bytes} bytes held (queue_buffering_max_kbytes)")
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
        d.accepted += 1
        d.held_messages += 1
        d.held_bytes += size
        if pkey is None:
            pq = d.sticky.get(topic) or d.next_sticky(topic)
            if pq is None:
                d.route(topic, [m])  # held until the topic is known, or discarded: no partition available
                return m
            if key is not None or headers is not None:
                self._mixed.add(pq)
        else:
            pq = d.keyed_queue(topic, m)
            if pq is None:
                return m  # held or discarded by keyed_queue
            self._mixed.add(pq)
        open_batch = pq.open
        if not open_batch:
            pq.open_since = since = self._loop.time()
            self._lingering.append((since, pq))
            if self._linger_timer is None:
                self._linger_timer = self._loop.call_at(since + self._linger, self._linger_expired)
        open_batch.append(m)
        pq.open_bytes = held = pq.open_bytes + size
        # Full at batch_num_messages, or when one more message like this one would not fit (see _chunk_bytes).
        if (
            len(open_batch) >= self._batch_messages
            or held + (len(open_batch) + 1) * RECORD_OVERHEAD + size > self._chunk_bytes
        ):
            self._seal(pq, True)
        return m

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
        count = len(values)
        if d.held_messages + count > self._max_messages or not self._accepting:
            self._refuse(f"{d.held_messages} messages held, {count} more asked (queue_buffering_max_messages)")
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
        if d.held_bytes + size > self._max_bytes:
            self._refuse(f"{d.held_bytes} bytes held, {size} more asked (queue_buffering_max_kbytes)")
        if not count:
            return Bulk([], 0)
        info = d.topic_info(topic)
        if keys is not None or info is None:  # per-value routing, or held until the topic is known: messages now
            messages = messages_of(values, keys, timestamp, partition, self._partitioner)
            chunk = Chunk.of(messages)
            self.submit(topic, messages)
            return Bulk([chunk], count)
        d.accepted += count
        d.held_messages += count
        d.held_bytes += size
        limits = (self._batch_messages, self._chunk_bytes)
        chunks = queue_chunks(d, topic, info, values, sizes, timestamp, partition, *limits, self._seal_open)
        return Bulk(chunks, count)

    def _seal_open(self, pq: PartitionQueue) -> None:
        """Seal ``pq``'s open batch before others are queued behind it (``send_many``)."""
        self._seal(pq, False)

    def _seal(self, pq: PartitionQueue, full: bool) -> None:
        """Seal ``pq``'s open batch (``full``: it reached the batch limits). A full batch that holds the only
        reference to each of its messages (their callers kept no handle), all keyless, without headers or partition,
        is kept as a :class:`Chunk` of values and timestamps instead: no object per message for the garbage
        collector to walk while it waits, encoded column by column, settled in one step (no one can tell: nobody
        holds those messages). The newest message, which ``send`` may be about to return, goes in as itself (the
        chunk's tail). Batches sealed by the linger stay messages: small, they may join others in one request."""
        plain = pq not in self._mixed  # every message keyless, without headers or partition (send keeps _mixed)
        self._mixed.discard(pq)
        if full and plain and pq.open_bytes + len(pq.open) * RECORD_OVERHEAD <= self._chunk_bytes:
            chunk = chunk_of_unheld(pq.open, pq.open_bytes)
            if chunk is not None:
                pq.open = chunk  # type: ignore[assignment]
        self._dispatcher.seal(pq)

    def _too_large(self, size: int) -> None:
        limit = self.config.message_max_bytes
        self.counters.inc("MsgSizeTooLarge")
        raise MessageTooLarge(
            f"MSG_SIZE_TOO_LARGE: {size} bytes of key and value cannot fit message_max_bytes ({limit}) with the "
            f"{limit - self._max_size} bytes a message takes besides them"
        )

    def _refuse(self, detail: str) -> None:
        if not self._accepting and self._txn is not None and self._group is not None:
            self._txn.refuse()  # raises: outside a transaction, or the transaction failed
        if not self._accepting:
            raise ProducerClosed("the producer is not accepting messages (not started, or closing)")
        self.counters.inc("QueueFull")
        raise QueueFull(detail)

    def submit(self, topic: str, messages: list[Message]) -> None:
        """The daemon's entry point: a ready batch for ``topic``. Each message routes by its own ``partition_key``
        (None = AnyPartition: the whole keyless group goes to one partition). Every message's fate reaches the
        :class:`OutcomeSink`. Queue limits do not apply (the daemon has its own memory budget). Raises
        :class:`ProducerClosed` before taking any message when the producer is not accepting."""
        if not self._accepting:
            raise ProducerClosed("the producer is not accepting messages (not started, or closing)")
        d = self._dispatcher
        d.admit(messages)
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

    # ---------------------------------------------------------------- topics

    async def create_topic(self, topic: str) -> DiscardReason | None:
        """Ask the brokers to create ``topic`` and wait until the metadata shows it (Bruce's auto-creation: a
        single-topic Metadata request allowing creation to each known broker in turn; then a refresh at once and
        after 3, 6 and 12 s, then every 12 s, until the topic appears), all within ``topic_create_timeout_ms``.
        Returns None once the topic is in the cluster view (at once if it already is), TOPIC_AUTOCREATE_FAIL when no
        broker agreed, TOPIC_CREATE_TIMEOUT when the deadline passed first (the cluster was asked, or could not be
        reached, and the topic has not appeared). Never raises for a broker failure; counted as
        ``TopicAutocreateOk/Fail/NoAnswer/Timeout``."""
        if self._first_view is None or self._group is None:
            raise ProducerClosed("the producer is not running")
        return await self._topics.create(topic)

    def compact(self) -> int:
        """With a ``pack`` function (the daemon's :meth:`~bruce.proxy.packed.Packer.pack`): store the loose ready
        batches waiting in the partition queues in its compact form where it accepts them (the daemon calls this
        when its memory budget runs short); they are unpacked when sent or rerouted. Returns how many messages were
        packed (0 without ``pack``)."""
        return self._dispatcher.compact()

    # ---------------------------------------------------------------- internals

    def _spawn(self, coro: Any) -> None:
        assert self._group is not None
        self._tasks = [t for t in self._tasks if not t.done()]
        self._tasks.append(self._group.create_task(coro))

    def _tasks_alive(self) -> bool:
        return not any(t.done() for t in self._core)

    def _wake_broker(self, broker: int) -> None:
        sender = self._senders.get(broker)
        if sender is None:
            sender = Sender(
                broker, self._dispatcher, self._policy, self._timeouts, self._trouble, self._fetcher.request
            )
            self._senders[broker] = sender
            self._spawn(sender.run())
        sender.wake()

    def _drained(self) -> None:
        drained, self._drained_future = self._drained_future, None
        if drained is not None and not drained.done():
            drained.set_result(None)


def _with_key(size: int, key: bytes | None) -> int:
    return size + (len(key) if key else 0)
