"""The public producer: ``Producer`` for library users and tools, plus the batch-level entry points of the daemon.

Rules:
- :meth:`Producer.create_topic` is Bruce's topic auto-creation (also used, with ``topic_autocreate``, for messages
  sent to an unknown topic).
- Long-lived work (senders, metadata refresh, pause, topic auto-creation) runs in one ``asyncio.TaskGroup``: a task
  that crashes ends the producer with its exception. The producer starts without waiting for Kafka: messages for topics
  not yet known wait for the first metadata (``await producer.ready()`` waits for it).
- The daemon may give a ``pack`` function: ready batches that wait for a broker are then held in its compact form
  (:mod:`bruce.producer.queues.partition_queue`), and :meth:`Producer.compact` packs the others on demand.
- ``close(deadline, reason)``: stop accepting, flush, wait for ACKs until the deadline, then discard what is left
  with ``reason`` (PRODUCER_CLOSED; the daemon's :meth:`Producer.shutdown` and its crash path use SERVER_SHUTDOWN).
- ``freeze_gc``: ``start`` runs a full collection, then ``gc.freeze()``: what the program holds at that moment (modules,
  configuration, caches) is no longer walked by the cyclic collector, whose full collections otherwise walk it again
  and again while messages are held. Off by default: it concerns the whole program (a cycle among those objects that
  later becomes garbage is not collected).
- ``message_timeout_ms`` (librdkafka's ``message.timeout.ms``; 0 = none): a periodic tick (a tenth of the timeout,
  10 ms to 1 s) discards as MESSAGE_TIMEOUT what was queued longer than that (see the dispatcher), so every wait of
  the API ends: awaiting a handle, ``flush()``, and ``ready()`` (whose default bound is the message timeout).
- Queueing (``send``, ``send_many``, the daemon's ``submit``; sealing and linger, their state and rules) is its
  base class's, :class:`~bruce.producer.queueing.Queueing`: ``send`` runs once per message, so it is the producer's
  own method, with no call in between. The cluster view's side (``ready``, new views, refusals, the daemon's queries)
  is handed over to a :class:`~bruce.producer.views.ProducerViews`, whose methods of the same names these are.
- Wiring: ``__init__`` builds each part once and gives it, at construction, what it hands on to. What a part asks of
  one built after it (the dispatcher of the pause, the topic creator and the senders; the metadata fetcher of the
  views; the sequencer of the duplicate check and the transaction) goes through one :class:`ProducerHooks`, given to
  each; no hook is set on a part after it was built. Once the producer closes, the hooks start nothing new.
"""

from __future__ import annotations

import asyncio
import gc
import random
from collections.abc import Coroutine
from typing import Any, Generic, cast

from bruce.wire import Codec, UsageError

from .config import ProducerConfig, client_context
from .counters import Counters
from .dispatch import Dispatcher, PauseController, RequestOutcomes, Sender, expire_loop
from .errors import ProducerClosed
from .idempotence import Batch, DuplicateCheck, PartJournal, ProducerState, log_idempotence_off
from .message import M, Message, OutcomeSink
from .metadata import AnyPartitionCycle, ClusterView, MetadataFetcher, TopicCreator
from .queueing import Queueing
from .queues import Compression, CompressionPolicy, Pack, PartitionQueue
from .reasons import DiscardReason
from .transactions import TransactionManager
from .transport import BrokerTrouble, PauseBackoff, Timeouts
from .views import BootstrapState, BrokerState, ProducerViews, TopicQueueStats


class Producer(Queueing, Generic[M]):
    """A non-blocking Kafka producer. ``async with Producer(ProducerConfig(...)) as p: handle = p.send(...)``.

    ``M`` is the type of message the daemon submits (a :class:`Message` subclass): its sink and its ``pack`` get those
    same objects back."""

    def __init__(
        self,
        config: ProducerConfig | None = None,
        *,
        sink: OutcomeSink[M] | None = None,
        compression: CompressionPolicy | None = None,
        require_topics: bool = False,
        rng: random.Random | None = None,
        pack: Pack[M] | None = None,
        freeze_gc: bool = False,
        keep_on_auth_failure: bool = False,
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
        self._started = False
        self.state: ProducerState | None = None  # with config.state_path: the durable idempotence state
        self._drained_future: asyncio.Future[None] | None = None  # what flush() waits on, while someone does
        self._senders: dict[int, Sender] = {}
        self._tasks: list[asyncio.Task[Any]] = []
        self._core: list[asyncio.Task[Any]] = []  # the refresh loop and the pause: alive as long as the producer
        self._group: asyncio.TaskGroup | None = None
        self._trouble = BrokerTrouble()
        # Each part is built once, given what it hands on to; what a part asks of one built after it goes through the
        # hooks (the pause, the topic creator, the views, the duplicate check and the transaction need the dispatcher).
        self._hooks = hooks = ProducerHooks(self)
        self._fetcher = fetcher = MetadataFetcher(
            config,
            self.counters,
            self._timeouts,
            rng=self._rng,
            require_topics=require_topics,
            trouble=self._trouble,
            on_refused=hooks.refused,
        )
        self._dispatcher = d = Dispatcher(
            config,
            self.counters,
            # The producer gives the sink and pack only the messages submitted to it (M), or made by send (a daemon
            # never sends): inside, every message is a Message.
            cast("OutcomeSink[Message] | None", sink),
            hooks=hooks,
            cycle=AnyPartitionCycle(self._rng),
            pack=cast("Pack[Message] | None", pack),
            txn=hooks if config.transactional_id is not None else None,
            on_duplicate=hooks.duplicate_answer,
        )
        self._ledger = d.ledger
        self._views = views = ProducerViews(
            config, d, fetcher, self._senders, self._wake_broker, keep_on_auth_failure=keep_on_auth_failure
        )
        self._outcomes = RequestOutcomes(d)
        self._duplicates = DuplicateCheck(d, views, config, self._spawn)
        backoff = PauseBackoff(
            config.pause_rate_limit_initial_ms, config.pause_rate_limit_max_double, config.min_pause_delay_ms, self._rng
        )
        self._pause = PauseController(d, fetcher, self._senders.values, views.apply, self.counters, backoff)
        self._topics = TopicCreator(config, self.counters, d, fetcher, views.apply, self._spawn)
        self._txn = None
        if config.transactional_id is not None:
            self._txn = TransactionManager(
                config,
                self.counters,
                d,
                self._timeouts,
                running=lambda: self._group is not None,
                accepting=self._accept,
                flush=self.flush,
                spawn=self._spawn,
            )
        super().__init__(config, self.counters, d, self._txn, running=lambda: self._group is not None)  # queueing
        if d.seq is None:
            log_idempotence_off(config)

    # ---------------------------------------------------------------- lifecycle

    async def __aenter__(self) -> Producer[M]:
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
            self.state = ProducerState(self.config.state_path, self.config.state_sync_ms)  # StateInUse first
        if self._freeze_gc:  # the program's state so far is long-lived: the collector stops walking it
            gc.collect()
            gc.freeze()
        self._loop = loop = asyncio.get_running_loop()
        self._start_queueing(loop)
        self._dispatcher.clock = loop.time
        self._views.start(loop)
        self._group = asyncio.TaskGroup()
        await self._group.__aenter__()
        d = self._dispatcher
        ledger = self._ledger
        waiting = lambda: d.view is None or ledger.held_messages > 0  # noqa: E731
        self._spawn(self._fetcher.refresh_loop(self._views.apply, lambda: self._pause.pausing, waiting))
        self._spawn(self._pause.run())
        if self.config.message_timeout_ms:
            self._dispatcher.stamp = loop.time()
            self._spawn(expire_loop(self._dispatcher, loop, self.config.message_timeout_ms))
        if self.state is not None:
            self._spawn(self.state.sync_loop())
        self._core = list(self._tasks)
        self._fetcher.request()
        self._accepting = self._txn is None  # a transactional producer accepts within a transaction only
        if (
            self.state is not None
        ):  # settle what an earlier producer on the path left (bruce.producer.idempotence.state_path)
            try:
                await self.state.settle(self)
            except BaseException as e:  # StateMismatch: nothing of this producer's may stay running
                await self.close(0.0, error=e)
                raise

    def journal_batches(self, journal: PartJournal) -> None:
        """Journal every idempotent batch before it is sent (:mod:`bruce.producer.idempotence.journal`; the daemon's
        spool); nothing to journal when the producer is not idempotent."""
        if self._dispatcher.seq is not None:
            self._dispatcher.seq.journal = journal

    async def flush(self, timeout: float | None = None) -> int:
        """Send every batch now and wait (up to ``timeout`` s) until nothing is held; returns how many messages are
        still held (0 = everything has a fate). Without ``timeout`` the wait still ends: within ``message_timeout_ms``
        (plus ``request_timeout_ms`` for a request under way) every message is delivered or has failed."""
        self._dispatcher.seal_all()
        if self._ledger.held_messages:
            if self._drained_future is None:
                self._drained_future = self._loop.create_future()
            try:
                async with asyncio.timeout(timeout):
                    await asyncio.shield(self._drained_future)
            except TimeoutError:
                pass
        return self._ledger.held_messages

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
        self._hooks.stopping = True  # from here on nothing may start (the task group is ending)
        for task in self._tasks:
            task.cancel()
        self._stop_queueing()
        if self._txn is not None:
            self._txn.close()
        for sender in self._senders.values():
            left = sender.take_all()
            sender.close_connection()
            for part in left:
                part.queue.busy = False
                part.queue.in_flight = part.queue.staged = 0
                self._ledger.discard(part.queue.topic, part.messages, reason, "not acknowledged by the close deadline")
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

    # ---------------------------------------------------------------- queueing (bruce.producer.queueing)

    # send and send_many are the base class's (Queueing): per message, no call in between.

    def submit(self, topic: str, messages: list[M]) -> None:
        """The daemon's entry point: a ready batch for ``topic``. Each message routes by its own ``partition_key``
        (None = AnyPartition: the whole keyless group goes to one partition). Every message's fate reaches the
        :class:`OutcomeSink`. Queue limits do not apply (the daemon has its own memory budget). Raises
        :class:`ProducerClosed` before taking any message when the producer is not accepting."""
        self._submit(topic, cast("list[Message]", messages))  # M is a Message

    # ---------------------------------------------------------------- topics

    # Transactions (librdkafka's names): they need ``transactional_id``.

    def _transactions(self) -> TransactionManager:
        if self._txn is None:
            raise UsageError("transactions need the transactional_id setting (transactional.id)")
        return self._txn

    async def init_transactions(self, timeout: float | None = None) -> None:
        """Get the producer id of ``transactional_id`` from its coordinator, fencing any older producer of that id
        and finishing a transaction it left open. Once per producer, after ``start``."""
        await self._transactions().init(timeout)

    def begin_transaction(self) -> None:
        """Open a transaction: ``send`` is accepted until commit or abort."""
        self._transactions().begin()

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """Deliver every message of the transaction, then commit it. Raises :class:`TransactionError`."""
        await self._transactions().commit(timeout)

    async def abort_transaction(self, timeout: float | None = None) -> None:
        """Discard what was not written, then abort the transaction: its records are never read by a read_committed
        consumer. Raises :class:`TransactionError`."""
        await self._transactions().abort(timeout)

    async def create_topic(self, topic: str) -> DiscardReason | None:
        """Ask the brokers to create ``topic`` and wait until the metadata shows it (Bruce's auto-creation: a
        single-topic Metadata request allowing creation to each known broker in turn; then a refresh at once and
        after 3, 6 and 12 s, then every 12 s, until the topic appears), all within ``topic_create_timeout_ms``.
        Returns None once the topic is in the cluster view (at once if it already is), TOPIC_AUTOCREATE_FAIL when no
        broker agreed, TOPIC_CREATE_TIMEOUT when the deadline passed first (the cluster was asked, or could not be
        reached, and the topic has not appeared). Never raises for a broker failure; counted as
        ``TopicAutocreateOk/Fail/NoAnswer/Timeout``."""
        if self._views.first_view is None or self._group is None:
            raise ProducerClosed("the producer is not running")
        return await self._topics.create(topic)

    def compact(self) -> int:
        """With a ``pack`` function (the daemon's :meth:`bruce.proxy.routing.packed.Packer.pack`): store the loose ready
        batches waiting in the partition queues in its compact form where it accepts them (the daemon calls this
        when its memory budget runs short); they are unpacked when sent or rerouted. Returns how many messages were
        packed (0 without ``pack``)."""
        return self._dispatcher.compact()

    # ---------------------------------------------------------------- the cluster view (bruce.producer.views)

    async def ready(self, timeout: float | None = None) -> ClusterView:
        """Wait (up to ``timeout`` s; None: ``message_timeout_ms``, if set) for the first cluster view; raises
        ``TimeoutError``, or a :class:`DeliveryError` (AUTHENTICATION_FAILED) when every bootstrap broker refused
        authentication."""
        return await self._views.ready(timeout)

    @property
    def keep_on_auth_failure(self) -> bool:
        """The daemon's choice (given at construction): keep the messages (within its budget) while every broker
        refuses authentication, rather than fail them and :meth:`ready`."""
        return self._views.keep_on_auth_failure

    @property
    def authentication_failure(self) -> str | None:
        """Why brokers refuse us (TLS or SASL), while they do: names the broker and the mechanism; else None."""
        return self._views.authentication_failure

    def cluster(self) -> ClusterView | None:
        """The current cluster view (None before the first metadata)."""
        return self._views.cluster()

    def available_partitions(self, topic: str) -> tuple[int, ...] | None:
        """The topic's available partitions; None if the topic is unknown (BAD_TOPIC), () if none is available."""
        return self._views.available_partitions(topic)

    def request_metadata_refresh(self) -> None:
        """Refresh metadata soon (POST /metadata_update); merged and rate-limited."""
        self._views.request_metadata_refresh()

    def metadata_times(self) -> tuple[int, int]:
        """(last updated, last modified) in epoch ms; 0 before the first metadata."""
        return self._views.metadata_times()

    def connected_brokers(self) -> int:
        """Brokers with an open produce connection (metadata connections are short-lived and not counted)."""
        return self._views.connected_brokers()

    def broker_states(self) -> tuple[BrokerState, ...]:
        """Every broker of the current metadata (and any sender left from an earlier one), by node id."""
        return self._views.broker_states()

    def bootstrap_states(self) -> tuple[BootstrapState, ...]:
        """Each configured bootstrap broker with the last error in reaching it (what the log said)."""
        return self._views.bootstrap_states()

    def requests_in_flight(self) -> int:
        """Produce requests written and not yet answered, over all brokers (always 0 with acks=0)."""
        return self._views.requests_in_flight()

    def queue_stats(self) -> dict[str, TopicQueueStats]:
        """Held messages per topic and state (Bruce's ``/queues``)."""
        return self._views.queue_stats()

    @property
    def accepted(self) -> int:
        return self._ledger.accepted

    @property
    def delivered(self) -> int:
        return self._ledger.delivered

    @property
    def discarded(self) -> int:
        return self._ledger.discarded

    @property
    def held(self) -> int:
        """Messages accepted and not yet delivered or discarded."""
        return self._ledger.held_messages

    # ---------------------------------------------------------------- internals

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        assert self._group is not None
        self._tasks = [t for t in self._tasks if not t.done()]
        task = self._group.create_task(coro)
        self._tasks.append(task)
        return task

    def _accept(self, on: bool) -> None:
        self._accepting = on

    def _tasks_alive(self) -> bool:
        return not any(t.done() for t in self._core)

    def _wake_broker(self, broker: int) -> None:
        sender = self._senders.get(broker)
        if sender is None:
            sender = Sender(
                broker,
                self._dispatcher,
                self._outcomes,
                self._policy,
                self._timeouts,
                self._trouble,
                self._fetcher.request,
            )
            self._senders[broker] = sender
            self._spawn(sender.run())
        sender.wake()

    def _drained(self) -> None:
        drained, self._drained_future = self._drained_future, None
        if drained is not None and not drained.done():
            drained.set_result(None)


class ProducerHooks:
    """What the producer's parts ask of the parts built after them, each call handed on to the part that serves it:
    the dispatcher's :class:`~bruce.producer.dispatch.DispatchHooks`, the metadata fetcher's refusals, and the
    sequencer's duplicate answers and transaction. ``stopping`` (the producer closes): start nothing more — no sender,
    pause, metadata fetch or auto-creation."""

    __slots__ = ("_p", "stopping")

    def __init__(self, producer: Producer[Any]) -> None:
        self._p = producer
        self.stopping = False

    # The dispatcher's DispatchHooks.

    def wake_broker(self, broker: int) -> None:
        if not self.stopping:
            self._p._wake_broker(broker)

    def pause(self, cause: str, answered: bool) -> None:
        if not self.stopping:
            self._p._pause.request(cause, answered)

    def unknown_topic(self, topic: str) -> None:
        if not self.stopping:
            self._p._fetcher.request()

    def autocreate(self, topic: str) -> None:
        if not self.stopping:
            self._p._topics.start(topic)

    def drained(self) -> None:
        self._p._drained()

    def progress(self, answered: bool) -> None:
        self._p._pause.progress(answered)

    def fetches_begun(self) -> int:
        return self._p._fetcher.begun

    # The metadata fetcher's and the sequencer's.

    def refused(self, detail: str) -> None:
        self._p._views.refused(detail)

    def duplicate_answer(
        self, pq: PartitionQueue, batch: Batch, messages: list[Message], size: int, since: float
    ) -> None:
        self._p._duplicates(pq, batch, messages, size, since)

    # A transactional producer's Transaction (the sequencer's).

    def admit(self, pq: PartitionQueue) -> bool:
        return self._p._transactions().admit(pq)

    def produce_failed(self, name: str, given_up: bool) -> None:
        self._p._transactions().produce_failed(name, given_up)

    def idempotence_ended(self, name: str, why: str) -> None:
        self._p._transactions().idempotence_ended(name, why)
