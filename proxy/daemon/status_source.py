"""The daemon's answers to the status pages: a :class:`~bruce.proxy.status.source.StatusSource` over its parts.

Rules:
- Snapshots only, read synchronously on the event loop (the status server's rule). Nothing here changes the daemon's
  state except what the pages are for: a metadata refresh request and the message debug commands.
- ``/queues``: ``batch`` is the daemon's open batches plus the producer's; ``send_wait`` and ``ack_wait`` are the
  producer's; ``new`` is what the router still holds (waiting for the first metadata, or parked while its topic is
  created). Their sum is every message in flight, so ``/queues`` agrees with the accounting.
- The pages show the serving process's PID (with ``--daemon``, the child's: the one in the log and the init script's
  pid file), never the one that built the daemon.
- :meth:`DaemonStatus.sample` is called once a second by the daemon's timer task: it adds the accounting totals to
  the bounded ring of rate samples the front page draws its rates and sparklines from.
- Counter sets, in display order: ``bruce.proxy`` (intake, budget, router, discards, debug log),
  ``bruce.proxy.accounting`` (received / delivered / discarded totals), the inputs' own (``bruce.proxy.plog``: per
  plog listener), ``bruce.producer``; the status server adds its own.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence

from bruce.producer import Counters, Producer

from ..accounting import AccountingCounters, DiscardReport, DiscardTracker, MessageDebugLog, Outcomes
from ..config import package_version
from ..messages import HeldMessage
from ..routing import Batcher, Router
from ..status import (
    BrokerState,
    CounterSet,
    Gauge,
    MetadataTimes,
    QueueStats,
    RateHistory,
    RateSample,
    ServerInfo,
    TopicQueue,
)


class DaemonStatus:
    """The :class:`StatusSource` of one running daemon."""

    def __init__(
        self,
        *,
        counters: Counters,
        outcomes: Outcomes,
        tracker: DiscardTracker,
        debug: MessageDebugLog,
        router: Router,
        batcher: Batcher,
        producer: Producer[HeldMessage],
        extra_gauges: Callable[[], Iterable[Gauge]] = tuple,
        extra_counter_sets: Iterable[tuple[str, CounterSet]] = (),
        start_time: float | None = None,
    ) -> None:
        self._version = package_version()
        self._start_time = time.time() if start_time is None else start_time
        self._counters = counters
        self._accounting = AccountingCounters(outcomes)
        self._outcomes = outcomes
        self._tracker = tracker
        self._debug = debug
        self._router = router
        self._batcher = batcher
        self._producer = producer
        self._extra_gauges = extra_gauges
        self._extra_counter_sets = tuple(extra_counter_sets)
        self._history = RateHistory()

    def server_info(self) -> ServerInfo:
        """The process id is read when asked: the daemon is built before ``--daemon`` forks, and serves in the child."""
        return ServerInfo(os.getpid(), self._version, self._start_time)

    def counter_sets(self) -> Iterable[tuple[str, CounterSet]]:
        return [
            ("bruce.proxy", self._counters),
            ("bruce.proxy.accounting", self._accounting),
            *self._extra_counter_sets,
            ("bruce.producer", self._producer.counters),
        ]

    def discard_report(self) -> DiscardReport:
        return self._tracker.report()

    def queue_stats(self) -> QueueStats:
        rows: dict[str, list[int]] = {}
        for topic, n in self._batcher.batching_counts().items():
            rows.setdefault(topic, [0, 0, 0])[0] += n
        for topic, q in self._producer.queue_stats().items():
            row = rows.setdefault(topic, [0, 0, 0])
            row[0] += q.batching
            row[1] += q.send_wait
            row[2] += q.ack_wait
        topics = tuple(TopicQueue(topic, *row) for topic, row in sorted(rows.items()))
        return QueueStats(topics=topics, new=self._router.held, broker_problem=self._producer.authentication_failure)

    def metadata_times(self) -> MetadataTimes:
        updated, modified = self._producer.metadata_times()
        return MetadataTimes(
            updated, modified, self._producer.authentication_failure, self._producer.bootstrap_states()
        )

    def request_metadata_update(self) -> None:
        self._producer.request_metadata_refresh()

    def msg_debug_command(self, command: str) -> str | None:
        return self._debug.handle_command(command)

    def gauges(self) -> Iterable[Gauge]:
        budget = self._outcomes.budget
        producer = self._producer
        return [
            Gauge("MsgInFlight", "Messages received and not yet delivered or discarded.", self._outcomes.in_flight),
            Gauge("MsgBufferUsedBytes", "Bytes of the message budget held by messages in flight.", budget.used),
            Gauge("MsgBufferCapacityBytes", "The message budget (--msg_buffer_max), in bytes.", budget.capacity),
            Gauge("MsgBufferHighWaterBytes", "The most bytes of the budget ever held at once.", budget.high_water),
            Gauge("MsgDebugActive", "1 while message debug logging is on.", int(self._debug.active)),
            Gauge("ConnectedBrokers", "Brokers with an open produce connection.", producer.connected_brokers()),
            Gauge("InFlightRequests", "Produce requests written and not yet answered.", producer.requests_in_flight()),
            Gauge(
                "BrokerAuthenticationFailed",
                "1 while brokers refuse our TLS or SASL authentication (the pages say why).",
                int(producer.authentication_failure is not None),
            ),
            *self._extra_gauges(),
        ]

    def broker_states(self) -> Sequence[BrokerState]:
        return self._producer.broker_states()

    def rate_samples(self) -> Sequence[RateSample]:
        return self._history.samples()

    def sample(self, now: float | None = None) -> None:
        """Add the current totals to the rate ring (the daemon calls this once a second)."""
        a = self._outcomes.snapshot()
        t = time.time() if now is None else now
        self._history.sample(t, a.received, a.delivered, a.discarded, self._outcomes.delivered_by_topic)
