"""The daemon: the input socket, router, batcher, producer, accounting and status server wired together and run.

Rules:
- Startup in Bruce's order (docs/bruce-compatibility.md#startup): :meth:`Daemon.preflight` (the large-datagram check,
  then the status port test-bind) runs before anything starts, before ``--daemon`` forks; :meth:`Daemon.run` then opens
  the input socket (it accepts at once, before Kafka is reachable: messages wait in the router, bounded by the budget),
  starts the producer (the first metadata is fetched in the background, with backoff, until it succeeds or the daemon
  stops), the plog listeners (a port that cannot be bound stops the start with
  :class:`~bruce.proxy.daemon.plog_inputs.PlogStartError`), the router and the status server. Unlike Bruce, the status
  server does not wait for the first metadata: a daemon that cannot reach Kafka is visible on its pages.
- Every long-lived task (the datagram intake, the plog listeners' watch, the timers, topic creations) lives in one
  ``asyncio.TaskGroup``; the producer's tasks live in its own group, entered by the same task. A task that crashes (an
  input's reading, the router it calls, a timer) stops the daemon: what is held is counted as SERVER_SHUTDOWN,
  everything is closed, the accounting is logged, and :meth:`Daemon.run` raises the error (the command exits 1).
- Shutdown (docs/architecture.md#p7-shutdown-order), after :meth:`Daemon.request_shutdown` (SIGTERM/SIGINT, or a plog
  ``KILL`` on a listener that enables it): stop accepting input → drain what the kernel still holds (the datagram
  socket, then the plog listeners: their sockets, the lines TCP connections hold; incomplete multipart messages are
  discarded) → flush the batches (messages still waiting for the first metadata or for their topic's creation wait for
  it within the deadline, like any held message; stderr says how many are held and how long the wait may last) → wait
  for ACKs until ``shutdown_max_delay`` after the request → count what is left as SERVER_SHUTDOWN → close the broker
  connections → stop the status server. A second request skips the waiting but still drains and accounts. The stop
  and the crash path's settling are :mod:`bruce.proxy.daemon.shutdown`.
- Accounting: :class:`~bruce.proxy.accounting.outcomes.Outcomes` settles every message; ``received = delivered +
  discarded + in flight`` holds between callbacks (:meth:`Daemon.accounting`).
- Memory: every held message holds its charge in the budget (``--msg_buffer_max``). A batch that must wait in the
  producer's queues for a broker (paused, or no leader) is packed (:mod:`bruce.proxy.routing.packed`: ~12 bytes per
  message beside its key and value, instead of a few hundred as loose objects), which gives back most of its charge;
  when a new message does not fit, the rest is packed first; only what still does not fit is NO_MEM.
- Inputs: the datagram intake and the plog listeners (:class:`~bruce.proxy.daemon.plog_inputs.PlogInputs`: the config
  file's ``[[plog.listener]]`` tables, then ``--plog_udp`` and ``--plog_tcp``). Each creates messages with the same
  budget, hands them to the router (its sink, given at construction), reports its discards to ``outcomes`` and
  registers its read count with ``outcomes.add_input``.
- The durable spool (``--spool_dir``, :mod:`bruce.proxy.daemon.spooling`): opened first in :meth:`Daemon.run` (another
  daemon holding it stops the start: ``SpoolLocked``), replayed into the router before the datagram intake is read
  (its own input of the accounting), appended to by the inputs before routing, marked done by every fate but
  SERVER_SHUTDOWN (:mod:`bruce.proxy.accounting.outcomes`), ticked by the timer task (its fsync policy) and closed last.
  What the inputs hold on disk only (no room in the budget) is routed by the ``DiskBacklog`` task as room comes back (at
  a stop too, after the inputs are drained, until the deadline). A spooled message a stop leaves undelivered is kept,
  not discarded: it stays in the spool for the next start (``MsgKeptInSpool``, the exit summary).
- Under systemd (``$NOTIFY_SOCKET``, :mod:`bruce.proxy.daemon.systemd`): a task of the group pings the watchdog and says
  READY once the input socket is open and the first metadata arrived (:attr:`Daemon.metadata_ready`), with the
  counts in STATUS; :meth:`Daemon.request_shutdown` says STOPPING.
- With the embedded broker (no broker configured), tansu has no topics yet: unknown topics are created on first use
  (tansu creates them with 4 partitions).
"""

from __future__ import annotations

import asyncio
import logging
import resource
import signal
import time
from typing import Any

from bruce.client import default_socket_path
from bruce.producer import Counters, DiscardReason, Producer, ProducerClosed

from ..accounting import Accounting, DiscardLog, DiscardTracker, MessageDebugLog, Outcomes
from ..config import NOTICE, Config, ConfigError, Options, check_descriptors, producer_config
from ..intake import DEFAULT_READER, DatagramIntake, MessageSink, check_large_datagrams
from ..messages import HeldMessage, MakeRoom, MessageBudget
from ..routing import Batcher, Packer, RateLimiter, Router, TopicCompression, message_overhead
from ..spool import Spool, SpoolSlot
from ..status import StatusServer, check_status_port
from .assembly import LegacyOutput, check_plog_listeners, plog_listeners, tick_for
from .exactly_once import SpoolJournal, why_at_least_once
from .plog_inputs import PlogInputs
from .shutdown import Shutdown, logged
from .spooling import DiskBacklog, Replay, SpoolStatus, spool_config
from .status_source import DaemonStatus
from .systemd import from_environment, supervise

log = logging.getLogger("bruce.proxy.daemon.daemon")

SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Daemon:
    """One bruce daemon. ``Daemon(options, config)``; ``preflight()``; ``await run()`` until shut down."""

    def __init__(self, options: Options, config: Config, *, reader: str = DEFAULT_READER) -> None:
        """Build the parts, each given at construction what it hands on to (module rules: the path of a message is
        datagram → intake → router → batcher → producer → accounting; every stage hands its discards to the
        accounting). Each part is built before the parts that hand it something, so this reads from the end of the
        path back to its start: the accounting, the producer, the batcher, the router, then the inputs."""
        self.options = options
        self.config = config
        embedded = options.use_embedded_broker
        self.counters = counters = Counters()
        self.spool_slot = SpoolSlot()  # the durable spool: opened by run(), seen by the inputs and the accounting
        make_room = MakeRoom()  # a full budget packs the batches waiting in the producer's queues (connected below)
        self.budget = budget = MessageBudget(options.msg_buffer_max_bytes, counters=counters, on_full=make_room)
        limit = config.batching.message_max_bytes - message_overhead(options.kafka_protocol)

        # -- accounting: every fate ends here (the discards of every stage, the producer's outcomes)
        self.discard_log = (
            DiscardLog(
                options.discard_log_path,
                prefix_size=options.discard_log_bad_msg_prefix_size,
                max_file_bytes=options.discard_log_max_file_size_bytes,
                max_archive_bytes=options.discard_log_max_archive_size_bytes,
                counters=counters,
            )
            if options.discard_log_path
            else None
        )
        self.tracker = DiscardTracker(
            interval_s=options.discard_report_interval,
            prefix_size=options.discard_report_bad_msg_prefix_size,
            counters=counters,
            discard_log=self.discard_log,
            log_discards=not options.no_log_discard,
            quiet_until_queried=embedded,  # trying bruce out: nobody monitors /discards (yet)
            message_limit=limit,
        )
        self.debug = MessageDebugLog(
            options.debug_dir,
            time_limit_s=options.msg_debug_time_limit,
            byte_limit=options.msg_debug_byte_limit,
            counters=counters,
        )
        self.outcomes = outcomes = Outcomes(budget, self.tracker, self.debug, spool=self.spool_slot)

        # -- the producer: batches to Kafka; their fates to the accounting
        self.producer: Producer[HeldMessage] = Producer(
            producer_config(options, config),
            sink=outcomes,
            compression=TopicCompression(config),
            require_topics=True,  # topics listed but all in error: ask another broker (docs/producer.md#metadata)
            pack=Packer(budget).pack,  # batches waiting for a broker held packed (their charge shrinks)
            keep_on_auth_failure=True,  # held within the budget while brokers refuse us; retried
        )
        make_room.connect(self.producer.compact)

        # -- the batcher: complete batches to the producer
        self.batcher = Batcher(config.batching_for, self._submit)

        # -- the router: Bruce's checks, then the batcher; its discards to the accounting
        self.autocreate = options.topic_autocreate or embedded
        self.router = Router(
            cluster=self.producer.cluster,
            batcher=self.batcher,
            discard=outcomes.discard_routed,
            message_max_bytes=config.batching.message_max_bytes,
            message_overhead=message_overhead(options.kafka_protocol),
            rate_limiter=RateLimiter.from_limits(
                config.rate_limit_for, config.topic_rate_limiting.named_configs.values()
            ),
            create_topic=self._create_topic if self.autocreate else None,
            debug=self.debug,
            counters=counters,
        )
        route: MessageSink = self.router
        if options.use_old_output_format:
            route = LegacyOutput(self.router, omit_timestamp=options.omit_timestamp)
        self.route = route

        # -- the inputs: their messages to the router, their discards to the accounting
        self.intake = DatagramIntake(
            options.receive_socket_name,
            sink=route,
            discards=outcomes,
            budget=budget,
            counters=counters,
            spool=self.spool_slot,
            mode=options.receive_socket_mode,
            private_dir=options.receive_socket_name == default_socket_path(),
            max_input_msg_size=options.max_input_msg_size,
            reader=reader,
        )
        self.plog = PlogInputs(
            plog_listeners(options, config),
            sink=route,
            budget=budget,
            outcomes=outcomes,
            spool=self.spool_slot,
            counters=counters,
            on_kill=self.request_shutdown,
        )
        self.spool_config = spool_config(options)
        self._replay: Replay | None = None  # the spool's replay into the router (another input), made by run()
        self._journal: SpoolJournal | None = None
        self._backlog: DiskBacklog | None = None  # routes what the inputs hold on disk only
        outcomes.add_input(lambda: self.intake.datagrams)
        outcomes.add_input(lambda: self.plog.received)
        outcomes.add_input(lambda: 0 if self._replay is None else self._replay.received)

        # -- what the operator sees
        spool_status = SpoolStatus(lambda: self.spool)
        self.status_source = DaemonStatus(
            counters=counters,
            outcomes=outcomes,
            tracker=self.tracker,
            debug=self.debug,
            router=self.router,
            batcher=self.batcher,
            producer=self.producer,
            extra_gauges=lambda: [*self.plog.gauges(), *spool_status.gauges()],
            extra_counter_sets=[
                *([("bruce.proxy.plog", self.plog.counter_set())] if self.plog.listeners else ()),
                *([("bruce.proxy.spool", spool_status)] if self.spool_config is not None else ()),
            ],
        )
        self.status = StatusServer(
            self.status_source, metrics=not options.no_metrics, allowed_hosts=options.status_allowed_hosts
        )
        self.ready = asyncio.Event()  # set once the socket accepts and the status server answers
        self.metadata_ready = asyncio.Event()  # set once the first metadata arrived (systemd's READY=1 then)
        self._systemd = from_environment()  # None unless started by systemd with Type=notify
        self._stop = asyncio.Event()
        self._force = asyncio.Event()
        self._group: asyncio.TaskGroup | None = None
        self._creations: set[asyncio.Task[Any]] = set()
        self._tick = tick_for(config)
        self._stopping = Shutdown(
            options,
            intake=self.intake,
            plog=self.plog,
            router=self.router,
            batcher=self.batcher,
            producer=self.producer,
            status=self.status,
            debug=self.debug,
            discard_log=self.discard_log,
            outcomes=self.outcomes,
            creations=self._creations,
            force=self._force,
            close_spool=self._close_spool,
        )

    # -- public --------------------------------------------------------------------------------------------------------

    def preflight(self) -> None:
        """Bruce's startup checks, before anything starts: no two plog listeners on one port or name
        (:class:`ConfigError`), can clients send datagrams of ``--max_input_msg_size``
        (:class:`~bruce.proxy.intake.socket_path.IntakeError`), is the socket path usable (its private directory, no
        live socket there: :class:`~bruce.proxy.intake.socket_path.SocketPathError`), and is the status port free
        (``StatusBindError``: another daemon is probably running)."""
        options = self.options
        check_plog_listeners(options, self.config)
        if options.use_old_input_format:
            raise ConfigError(
                'Bruce\'s oldest input format ("topic<space>body" datagrams) is not supported; clients must send '
                "AnyPartition or PartitionKey datagrams (docs/migrating-from-bruce.md)",
                where="--use_old_input_format",
            )
        check_large_datagrams(options.max_input_msg_size, allow_large_unix_datagrams=options.allow_large_unix_datagrams)
        self.intake.check_path()
        check_descriptors([x.config for x in self.plog.listeners], resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        if options.status_port:
            check_status_port(options.status_bind_host, options.status_port)

    def accounting(self) -> Accounting:
        """``received``, ``delivered``, ``discarded`` and ``in_flight``, read together."""
        return self.outcomes.snapshot()

    @property
    def status_url(self) -> str:
        """``http://host:port`` of the status server (once :attr:`ready`)."""
        return self.status.url

    @property
    def socket_path(self) -> str:
        return str(self.intake.path)

    @property
    def stopping(self) -> bool:
        """A shutdown was requested."""
        return self._stop.is_set()

    def request_shutdown(self) -> None:
        """Begin the orderly shutdown; a second call stops waiting for ACKs (everything is still accounted for)."""
        if self._stop.is_set():
            if not self._force.is_set():
                log.warning("second stop request: no longer waiting for acknowledgements")
                self._force.set()
            return
        log.info("shutting down: up to %d ms to deliver what is held", self.options.shutdown_max_delay)
        if self._systemd is not None:
            self._systemd.send(STOPPING=1, STATUS=f"stopping: {self._systemd_status()}")
        self._stop.set()

    async def run(self, *, handle_signals: bool = False) -> None:
        """Start, serve until :meth:`request_shutdown` (or SIGTERM/SIGINT with ``handle_signals``), shut down in
        order. Raises the error of a task that crashed."""
        loop = asyncio.get_running_loop()
        if handle_signals:
            for sig in SHUTDOWN_SIGNALS:
                loop.add_signal_handler(sig, self._on_signal, sig)
        try:
            await self._run()
        finally:
            if self._systemd is not None:
                self._systemd.close()
            if handle_signals:
                for sig in SHUTDOWN_SIGNALS:
                    loop.remove_signal_handler(sig)

    # -- running -------------------------------------------------------------------------------------------------------

    async def _run(self) -> None:
        self._open_spool()  # the first thing that can fail here (another daemon holds it): nothing else has started
        try:
            self.intake.open()
        except BaseException:
            self._close_spool()
            raise
        self.debug.start()
        if self.discard_log is not None:
            self.discard_log.start()
        try:
            await self.producer.start()
        except BaseException:
            await self._stopping.close_local()
            raise
        try:
            await self.plog.start()
            await self.status.start(self.options.status_bind_host, self.options.status_port)
        except BaseException:
            self._stopping.settle_held()
            await self.producer.shutdown(0)
            await self._stopping.close_local()
            raise
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                group.create_task(self._serve_intake(), name="bruce-intake")
                group.create_task(self.plog.serve(), name="bruce-plog")
                timers = group.create_task(self._timers(), name="bruce-timers")
                first = group.create_task(self._first_metadata(), name="bruce-first-metadata")
                tasks = [timers, first]
                if self._backlog is not None:
                    tasks.append(group.create_task(self._backlog.run(), name="bruce-spool-backlog"))
                if self._systemd is not None:
                    notify = supervise(self._systemd, self.metadata_ready, self._systemd_status)
                    tasks.append(group.create_task(notify, name="bruce-systemd"))
                self.ready.set()
                await self._stop.wait()
                await self._stopping.stop(loop_time=asyncio.get_running_loop().time)
                for task in (*tasks, *self._creations):
                    task.cancel()
        except asyncio.CancelledError as cancelled:
            # A producer task crashed (its group cancels this task), or this task was cancelled: the producer's
            # group raises the crash, if there is one, once it is handed the cancellation.
            self._stopping.settle_held()
            try:
                await self.producer.close(0.0, DiscardReason.SERVER_SHUTDOWN, error=cancelled)
            finally:
                await self._stopping.close_local()
                self._stopping.log_accounting(failed=True)
            raise
        except BaseException as error:
            log.error("a daemon task failed; stopping", exc_info=error)
            self._stopping.settle_held()
            with logged("the producer"):
                await self.producer.shutdown(0)
            await self._stopping.close_local()
            self._stopping.log_accounting(failed=True)
            raise
        finally:
            self._group = None

    @property
    def spool(self) -> Spool | None:
        """The durable spool, once :meth:`run` opened it (None without one)."""
        return self.spool_slot.spool

    def _open_spool(self) -> None:
        """Open the durable spool, when configured, and connect it to the inputs and the outcomes."""
        if self.spool_config is None:
            return
        behind = asyncio.Event()  # the spool's cursor fell behind: the disk backlog reads it back (given to both)
        spool = self.spool_slot.open(self.spool_config, on_behind=behind.set)  # SpoolLocked: another daemon has it
        self._journal = SpoolJournal(
            spool, self.producer, self.counters, why_off=why_at_least_once(self.producer.config)
        )
        self._replay = Replay(
            spool,
            sink=self.route,
            budget=self.budget,
            outcomes=self.outcomes,
            counters=self.counters,
            settle=self._journal.settle,
        )
        self._backlog = DiskBacklog(
            spool, behind=behind, sink=self.route, budget=self.budget, outcomes=self.outcomes, counters=self.counters
        )
        self._stopping.spool_opened(self._backlog)
        log.info("spool %s: %d segments, %d bytes to replay", spool.directory, spool.segments, spool.bytes)

    def _close_spool(self) -> None:
        """Close the spool last (what is not done stays for the next start); idempotent."""
        if self.spool is not None:
            if self._journal is not None:
                with logged("the batch journal"):
                    self._journal.close()
            with logged("the spool"):
                self.spool.close()

    async def _serve_intake(self) -> None:
        """Replay the spool into the router, then read the input socket (unless a stop came first)."""
        if self._replay is not None:
            await self._replay.run(self._stop.is_set)
        if not self._stop.is_set():
            await self.intake.serve()

    def _on_signal(self, sig: signal.Signals) -> None:
        log.log(NOTICE, "received %s", sig.name)
        self.request_shutdown()

    async def _first_metadata(self) -> None:
        """Route the messages that arrived before the first metadata as soon as it is there."""
        while True:
            try:
                view = await self.producer.ready()
                break
            except TimeoutError:  # --message_timeout_ms bounds each wait; the first metadata is awaited until it comes
                continue
        self.router.refresh(time.monotonic())
        log.log(NOTICE, "connected to Kafka: %d brokers, %d topics", len(view.brokers), len(view.topics))
        self.metadata_ready.set()

    def _systemd_status(self) -> str:
        """The ``STATUS=`` line systemctl status shows: the accounting totals and the connected brokers."""
        a = self.accounting()
        connected = self.producer.connected_brokers()
        return (
            f"{a.received} received, {a.delivered} delivered, {a.discarded} discarded, {a.in_flight} in flight; "
            f"{connected} brokers connected"
        )

    async def _timers(self) -> None:
        """Batch deadlines, the router's look at the view, the debug log's tick, the status rate sample and the
        discard-query watchdog.

        Sleeps until the next batch deadline, but never longer than the shortest batch time (and 50 ms): a batch
        opened meanwhile cannot have an earlier deadline than one tick away, so every batch ships on time without a
        hook on the hot path."""
        batcher, router = self.batcher, self.router
        now = time.monotonic()
        next_second = now + 1.0
        watchdog_every = self.options.discard_report_interval + 1
        next_watchdog = now + watchdog_every
        while True:
            now = time.monotonic()
            batcher.expire(now)
            router.refresh(now)
            if self.spool is not None:
                self.spool.tick(now)
                if self._journal is not None:
                    self._journal.tick(now)
            if now >= next_second:
                next_second = now + 1.0
                self.debug.tick()
                self.status_source.sample()
                if now >= next_watchdog:
                    next_watchdog = now + watchdog_every
                    self.tracker.check_query_rate()
            wake = min(now + self._tick, next_second)
            deadline = batcher.next_deadline()
            if deadline is not None and deadline < wake:
                wake = deadline
            await asyncio.sleep(max(0.0, wake - time.monotonic()))

    def _submit(self, topic: str, messages: list[HeldMessage]) -> None:
        """The batcher's output: a complete batch to the producer; once the producer no longer takes any (closed,
        or failed), the batch is discarded as SERVER_SHUTDOWN instead."""
        try:
            self.producer.submit(topic, messages)
        except ProducerClosed:  # raised before the producer takes any of them
            for msg in messages:
                self.outcomes.discard_routed(msg, DiscardReason.SERVER_SHUTDOWN)

    def _create_topic(self, topic: str) -> None:
        """The router's callback for a topic to create (``--topic_autocreate``)."""
        if self._group is None:
            self.router.creation_done(topic, DiscardReason.SERVER_SHUTDOWN, time.monotonic())
            return
        task = self._group.create_task(self._create(topic), name=f"bruce-create-topic-{topic}")
        self._creations.add(task)
        task.add_done_callback(self._creations.discard)

    async def _create(self, topic: str) -> None:
        log.info("creating topic %r", topic)
        failure = await self.producer.create_topic(topic)
        self.router.creation_done(topic, failure, time.monotonic())
