"""What the status pages read: the :class:`StatusSource` protocol the daemon implements, and its value types.

Rules:
- Every method is synchronous, cheap and non-blocking: it runs on the daemon's event loop, inside an HTTP handler.
  It returns a snapshot (frozen values or fresh iterables), never a live structure the caller could change.
- Counters come as *counter sets*: ``(location, counters)`` pairs, where ``counters.items()`` yields ``(name, labels,
  value)`` like :class:`bruce.producer.counters.Counters`. Bruce shows each counter as ``[file, line].Name=value``;
  we have no file and line, so the location is the dotted name of the package that owns the counters (for example
  ``bruce.producer`` for the producer's, ``bruce.proxy`` for the daemon's). It is stable across releases.
- Times: ``ServerInfo.start_time`` is epoch seconds; metadata times are epoch milliseconds, 0 meaning "never".
- Broker rows are :class:`~bruce.producer.BrokerState` values (state, since, last error), filled by the producer;
  rate samples are :class:`~bruce.proxy.status.history.RateSample` values from the daemon's one-per-second ring.
- Gauges are for ``/metrics`` and the front page's totals: CamelCase names like the counters' (``MsgBufferUsedBytes``
  becomes ``bruce_msg_buffer_used_bytes``); a gauge's name must not collide with a counter's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from bruce.producer import BootstrapState, BrokerState, Labels

from ..accounting import DiscardReport
from .history import RateSample

__all__ = [
    "BootstrapState",
    "BrokerState",
    "CounterSet",
    "Gauge",
    "Labels",
    "MetadataTimes",
    "QueueStats",
    "RateSample",
    "ServerInfo",
    "StatusSource",
    "TopicQueue",
]


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """The daemon's identity: process id, version string, start time (epoch seconds)."""

    pid: int
    version: str
    start_time: float


@dataclass(frozen=True, slots=True)
class TopicQueue:
    """Messages of one topic by state (Bruce's ``/queues``): being batched, waiting to be sent, waiting for an ACK."""

    topic: str
    batch: int
    send_wait: int
    ack_wait: int


@dataclass(frozen=True, slots=True)
class QueueStats:
    """Per-topic queue counts (sorted by topic) and ``new``: messages received but not yet routed to a topic queue."""

    topics: tuple[TopicQueue, ...] = ()
    new: int = 0
    broker_problem: str | None = None  # why messages cannot go out now: "authentication failed: broker ..., ..."

    @property
    def total_batch(self) -> int:
        return sum(t.batch for t in self.topics)

    @property
    def total_send_wait(self) -> int:
        return sum(t.send_wait for t in self.topics)

    @property
    def total_ack_wait(self) -> int:
        return sum(t.ack_wait for t in self.topics)

    @property
    def total(self) -> int:
        """Every held message: new + batch + send_wait + ack_wait."""
        return self.new + self.total_batch + self.total_send_wait + self.total_ack_wait


@dataclass(frozen=True, slots=True)
class MetadataTimes:
    """When metadata was last fetched successfully, and when a fetch last changed it (epoch ms; 0 = never)."""

    last_updated_ms: int = 0
    last_modified_ms: int = 0
    broker_problem: str | None = None  # as QueueStats.broker_problem
    bootstrap: tuple[BootstrapState, ...] = ()  # the configured brokers and their last errors (the front page's)


@dataclass(frozen=True, slots=True)
class Gauge:
    """One gauge sample for ``/metrics``: a CamelCase name, a help text, a value and optional labels."""

    name: str
    help: str
    value: float
    labels: Labels = ()


class CounterSet(Protocol):
    """Anything with ``items()`` like :class:`bruce.producer.counters.Counters`."""

    def items(self) -> Iterator[tuple[str, Labels, int]]: ...


class StatusSource(Protocol):
    """What the daemon offers the status interface. Every method is synchronous and must not block."""

    def server_info(self) -> ServerInfo:
        """pid, version and start time."""
        ...

    def counter_sets(self) -> Iterable[tuple[str, CounterSet]]:
        """``(location, counters)`` pairs, in display order (see the module rules for ``location``)."""
        ...

    def discard_report(self) -> DiscardReport:
        """The discard tracker's report (``DiscardTracker.report()``; it counts as a discard query)."""
        ...

    def queue_stats(self) -> QueueStats:
        """Held messages by topic and state."""
        ...

    def metadata_times(self) -> MetadataTimes:
        """Last metadata fetch and last change."""
        ...

    def request_metadata_update(self) -> None:
        """Ask for a metadata refresh soon (POST ``/metadata_update``). Returns at once."""
        ...

    def msg_debug_command(self, command: str) -> str | None:
        """Run ``/msg_debug/<command>`` (``MessageDebugLog.handle_command``); None for an unknown command (404)."""
        ...

    def gauges(self) -> Iterable[Gauge]:
        """Current gauges for ``/metrics``: budget used and capacity, messages in flight, connected brokers, ..."""
        ...

    def broker_states(self) -> Sequence[BrokerState]:
        """Every known broker: address, connection state and since when, the last error and when (front page)."""
        ...

    def rate_samples(self) -> Sequence[RateSample]:
        """The recent totals, oldest first (front page rates and sparklines); may be empty."""
        ...
