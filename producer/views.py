"""The producer's cluster view and what the daemon reads from it: :class:`ProducerViews`, one per
:class:`~bruce.producer.producer.Producer` (whose methods of the same names hand over to it).

Rules:
- It owns the first-view future, the last refusal and ``keep_on_auth_failure``; it reads the dispatcher, the senders
  (the producer's dict, shared) and the metadata fetcher; every method runs in the event loop's thread, never blocks.
- Each cluster view the metadata fetcher gets is installed by :meth:`ProducerViews.apply` (the dispatcher reroutes;
  senders of brokers no longer in it close); the first one completes :meth:`ProducerViews.ready`'s future and, with
  idempotence wanted, wakes the lowest broker's sender so the producer id (and whether idempotence is on) is settled
  at start.
- A metadata round refused by every broker (TLS or SASL) is logged once per distinct refusal; before the first view,
  library use fails :meth:`ready` and every held message with AUTHENTICATION_FAILED (the daemon keeps them:
  ``keep_on_auth_failure``).
- The queries (cluster, partitions, metadata times, brokers, requests, queue statistics, counts) are read-only
  snapshots for the daemon's status pages and accounting; their rows are :class:`BrokerState` (a broker's address and
  its sender's :class:`~bruce.producer.transport.health.BrokerHealth`), :class:`BootstrapState` and
  :class:`TopicQueueStats` (one topic's held messages by state).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from .config import ProducerConfig
from .dispatch import Dispatcher, Sender
from .errors import DeliveryError, ProducerClosed
from .metadata import ClusterView, MetadataFetcher
from .reasons import DiscardReason
from .transport import BrokerHealth

log = logging.getLogger("bruce.producer")


@dataclass(frozen=True, slots=True)
class TopicQueueStats:
    """Messages of one topic by state (Bruce's /queues): accumulating, waiting to be sent, waiting for an ACK."""

    batching: int
    send_wait: int
    ack_wait: int


@dataclass(frozen=True, slots=True)
class BootstrapState:
    """One configured bootstrap broker (``host:port``) and the last error in reaching it for metadata (DNS failure,
    refused, timed out, TLS or SASL refusal; ``""`` and 0 when none since it last answered)."""

    address: str
    last_error: str = ""
    last_error_at: float = 0.0


@dataclass(frozen=True, slots=True)
class BrokerState:
    """One broker as the status pages show it: address, connection state (``connected``, ``connect failed``,
    ``disconnected``, ``idle``: no produce connection opened yet), since when (epoch s; 0 = since start), and the
    last error's text and time (``""`` and 0 when none)."""

    node_id: int
    host: str
    port: int
    state: str
    since: float = 0.0
    last_error: str = ""
    last_error_at: float = 0.0


class ProducerViews:
    """The cluster view's side of one producer (see the module's rules)."""

    def __init__(
        self,
        config: ProducerConfig,
        dispatcher: Dispatcher,
        fetcher: MetadataFetcher,
        senders: dict[int, Sender],
        wake_broker: Callable[[int], None],
        *,
        keep_on_auth_failure: bool = False,
    ) -> None:
        self.config = config
        self.d = dispatcher
        self.fetcher = fetcher
        self.senders = senders  # the producer's, by broker
        self.wake_broker = wake_broker
        self.keep_on_auth_failure = (
            keep_on_auth_failure  # the daemon keeps messages (within its budget) while brokers refuse it
        )
        self.first_view: asyncio.Future[None] | None = None  # set by start: done at the first view
        self._last_refusal = ""
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """The producer starts: from now on :meth:`ready` waits for the first view."""
        self._loop = loop
        self.first_view = loop.create_future()

    async def ready(self, timeout: float | None = None) -> ClusterView:
        """Wait (up to ``timeout`` s; None: ``message_timeout_ms``, if set) for the first cluster view; raises
        ``TimeoutError``, or a :class:`DeliveryError` (AUTHENTICATION_FAILED) when every bootstrap broker refused
        authentication."""
        if self.first_view is None:
            raise ProducerClosed("the producer is not started")
        if timeout is None and self.config.message_timeout_ms:
            timeout = self.config.message_timeout_ms / 1000
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(self.first_view)
        except TimeoutError:
            why = self.fetcher.last_failure or "no broker has answered yet"
            raise TimeoutError(f"no cluster metadata within {timeout} s: {why}") from None
        assert self.d.view is not None
        return self.d.view

    # ---------------------------------------------------------------- new views

    def apply(self, view: ClusterView, fetch: int) -> None:
        """Install ``view`` (from the metadata fetch numbered ``fetch``)."""
        d = self.d
        d.apply_view(view, fetch)
        for broker, sender in self.senders.items():
            if broker not in view.brokers:
                sender.close_connection()
        if self.first_view is not None and self.first_view.done() and self.first_view.exception() is not None:
            assert self._loop is not None
            self.first_view = self._loop.create_future()  # refused before, accepted now
        if self.first_view is not None and not self.first_view.done():
            self.first_view.set_result(None)
            if d.seq is not None and view.brokers:  # the producer id (and whether idempotence is on) at start
                broker = min(view.brokers)
                self.wake_broker(broker)
                self.senders[broker].warm = True

    @property
    def authentication_failure(self) -> str | None:
        """Why brokers refuse us (TLS or SASL), while they do: names the broker and the mechanism; else None."""
        return self.fetcher.auth_failure or next(
            (s.auth_failure for s in self.senders.values() if s.auth_failure), None
        )

    def refused(self, detail: str) -> None:
        """A metadata round was refused by every broker: before the first view, library use fails :meth:`ready` and
        the messages waiting for it, rather than hold them while nothing can change (the daemon keeps them). Logged
        once per distinct refusal, not per retry."""
        if detail != self._last_refusal:
            self._last_refusal = detail
            log.error("%s; retrying with backoff", detail)
        if self.d.view is not None or self.keep_on_auth_failure:
            return
        if self.first_view is not None and not self.first_view.done():
            self.first_view.set_exception(DeliveryError(DiscardReason.AUTHENTICATION_FAILED, "", detail))
            self.first_view.exception()  # retrieved: ready() raises it to whoever waits
        self.d.discard_everything(DiscardReason.AUTHENTICATION_FAILED, detail)

    # ---------------------------------------------------------------- the daemon's queries

    def cluster(self) -> ClusterView | None:
        """The current cluster view (None before the first metadata)."""
        return self.d.view

    def available_partitions(self, topic: str) -> tuple[int, ...] | None:
        """The topic's available partitions; None if the topic is unknown (BAD_TOPIC), () if none is available."""
        info = self.d.topic_info(topic)
        return None if info is None else info.available

    def request_metadata_refresh(self) -> None:
        """Refresh metadata soon (POST /metadata_update); merged and rate-limited."""
        self.fetcher.request()

    def metadata_times(self) -> tuple[int, int]:
        """(last updated, last modified) in epoch ms; 0 before the first metadata."""
        return self.fetcher.last_updated_ms, self.fetcher.last_modified_ms

    def connected_brokers(self) -> int:
        """Brokers with an open produce connection (metadata connections are short-lived and not counted)."""
        return sum(1 for s in self.senders.values() if s.connection is not None and s.connection.alive)

    def broker_states(self) -> tuple[BrokerState, ...]:
        """Every broker of the current metadata (and any sender left from an earlier one), by node id."""
        view = self.d.view
        brokers = dict(view.brokers) if view is not None else {}
        out = []
        for node_id in sorted(brokers.keys() | self.senders.keys()):
            b = brokers.get(node_id)
            sender = self.senders.get(node_id)
            h = sender.health if sender is not None else BrokerHealth()
            host, port = (b.host, b.port) if b is not None else ("?", 0)
            out.append(BrokerState(node_id, host, port, h.state, h.since, h.last_error, h.last_error_at))
        return tuple(out)

    def bootstrap_states(self) -> tuple[BootstrapState, ...]:
        """Each configured bootstrap broker with the last error in reaching it (what the log said)."""
        out = []
        for host, port in self.config.brokers:
            address = f"{host}:{port}"
            error, at = self.fetcher.trouble.last_error(address) or ("", 0.0)
            out.append(BootstrapState(address, error, at))
        return tuple(out)

    def requests_in_flight(self) -> int:
        """Produce requests written and not yet answered, over all brokers (always 0 with acks=0)."""
        return sum(s.outstanding for s in self.senders.values())

    def queue_stats(self) -> dict[str, TopicQueueStats]:
        """Held messages per topic and state (Bruce's ``/queues``)."""
        out: dict[str, list[int]] = {}
        d = self.d
        for pq in d.all_queues():
            row = out.setdefault(pq.topic, [0, 0, 0])
            row[0] += len(pq.open)
            row[1] += pq.ready_count + pq.staged + pq.waiting
            row[2] += pq.in_flight
        for topic, (messages, _, _) in d.unknown.items():
            out.setdefault(topic, [0, 0, 0])[1] += len(messages)
        return {topic: TopicQueueStats(*row) for topic, row in sorted(out.items())}
