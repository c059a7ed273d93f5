"""Fetching the cluster view: bootstrap, periodic and on-demand refresh, topic auto-creation.

Rules:
- A fetch asks one broker for all topics: a random known broker first, then the others in turn. Known brokers start as
  the configured bootstrap servers and become each good answer's broker list (docs/bruce-compatibility.md#metadata).
  When none of them answers, the same round goes on to the configured bootstrap servers the list lacks (as Kafka's
  clients re-bootstrap): a broker that moved to a new address is found again through the bootstrap list. Each attempt
  is bounded by the connect and request timeouts; a failed or bad answer (:class:`BadMetadata`) moves on to the next
  broker.
- :meth:`MetadataFetcher.fetch_with_retry` retries whole rounds with the reconnect backoff (``reconnect_backoff_ms``
  doubling to ``reconnect_backoff_max_ms``, jittered) until it succeeds or is cancelled.
- Each broker's failures and recovery go to the trouble log (:mod:`bruce.producer.transport.trouble`).
- Counters (Bruce's names, counted as Bruce counts them: per episode, not per retry): ``GetMetadataSuccess`` per
  good round; ``GetMetadataFail`` once when a round fails after a good one (or at the start), the retries until the
  next good round being the same refresh; ``InitialGetMetadataFail`` likewise before the first view;
  ``ConnectFailOnTryGetMetadata{broker}`` when a broker's request fails for the first time since it last answered.
  Every failed request counts ``MetadataBrokerFail{broker}``.
- Fetches are numbered as they begin (:attr:`MetadataFetcher.begun`); each answer comes with its fetch's number, so
  whoever applies it can tell whether the fetch began after something it waits for (see the dispatcher's unknown
  topics), whatever the clocks say.
- Refreshes run every ``metadata_refresh_interval_ms`` ±20 %, on demand (:meth:`request`), and never closer together
  than ``metadata_min_interval_ms``; on-demand requests that arrive meanwhile are merged into one fetch. A refresh
  failure backs off up to ``metadata_retry_backoff_max_ms``; while messages wait (no view yet, or messages held) the
  reconnect backoff spaces the retries instead (``reconnect_backoff_ms`` doubling to ``reconnect_backoff_max_ms``,
  jittered, whichever is shorter). No storm is possible: at most one fetch is under way.
- A round in which a broker refused authentication (TLS or SASL) sets :attr:`MetadataFetcher.auth_failure`, and calls
  ``on_refused`` when every broker did; a round without refusals clears it. Retries keep their backoff.
- Auto-creation (docs/bruce-compatibility.md#topic-auto-creation): a single-topic request (allowing creation) to each
  broker in turn; success is the topic answered with error 0 or 5. Then the view is refreshed after 3, 6 and 12 s until
  the topic shows up.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable

from bruce.wire import METADATA, MetadataResponse, metadata_request

from ..config import ProducerConfig
from ..counters import Counters
from ..errors import TransportError
from ..transport import AuthenticationFailed, BrokerTrouble, ExponentialBackoff, Timeouts, jittered, open_connection
from .cluster import BadMetadata, ClusterView, build_view

AUTOCREATE_CHECKS = (3.0, 6.0, 12.0)  # seconds between refreshes after a topic was auto-created


class MetadataUnavailable(TransportError):
    """No known broker gave a usable Metadata answer."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"no broker answered metadata: {detail}", reason="GET_METADATA_FAIL")


class MetadataFetcher:
    def __init__(
        self,
        config: ProducerConfig,
        counters: Counters,
        timeouts: Timeouts,
        *,
        rng: random.Random | None = None,
        require_topics: bool = False,
        trouble: BrokerTrouble | None = None,
        on_refused: Callable[[str], None] = lambda detail: None,
    ) -> None:
        """``on_refused`` is told when every broker of a round refused authentication (see the module's rules)."""
        self.config = config
        self.counters = counters
        self.timeouts = timeouts
        self.rng = rng or random.Random()
        self.require_topics = require_topics
        self.trouble = trouble or BrokerTrouble()
        self.known: list[tuple[str, int]] = list(config.brokers)
        self.view: ClusterView | None = None
        self.begun = 0  # fetches begun so far: the last one's number
        self.last_updated_ms = 0  # wall clock of the last good answer
        self.last_modified_ms = 0  # wall clock of the last answer that changed the view
        self._wanted = asyncio.Event()
        self._last = 0.0  # loop time of the last refresh (or of the pause that replaced it)
        self._busy = asyncio.Lock()
        self.last_failure: str | None = None  # why the last round failed (for ready()'s timeout)
        self.auth_failure: str | None = None  # why the last round failed, when every broker refused authentication
        self._failing = False  # the last round failed: later failed rounds are the same episode (counters)
        self._failing_nodes: set[str] = set()  # brokers whose metadata request failed since they last answered
        self.on_refused = on_refused

    def request(self) -> None:
        """Ask for a refresh soon (merged with others, rate-limited)."""
        self._wanted.set()

    async def fetch(self) -> tuple[ClusterView, int]:
        """One round over the known brokers: the view and the fetch's number; raises :class:`MetadataUnavailable`."""
        async with self._busy:
            self.begun += 1
            number = self.begun
            order = list(self.known)
            if len(order) > 1:
                first = order.pop(self.rng.randrange(len(order)))
                order.insert(0, first)
            order += [b for b in self.config.brokers if b not in order]  # re-bootstrap, last
            errors = []
            refused = 0
            for host, port in order:
                node = f"{host}:{port}"
                try:
                    view = await self._ask(host, port)
                except (TransportError, BadMetadata) as e:
                    self.counters.inc("MetadataBrokerFail", labels=(("broker", node),))
                    if isinstance(e, TransportError) and node not in self._failing_nodes:
                        self._failing_nodes.add(node)
                        self.counters.inc("ConnectFailOnTryGetMetadata", labels=(("broker", node),))
                    if isinstance(e, AuthenticationFailed):  # reachable, but refusing us: logged by the producer
                        refused += 1
                        self.trouble.refused(node, str(e))
                        self.counters.inc("ConnectorAuthenticationFailed", labels=(("broker", node),))
                    else:
                        self.trouble.failed(node, f"metadata request failed: {e}")
                    errors.append(str(e) if isinstance(e, AuthenticationFailed) else f"{node}: {e}")
                    continue
                self.trouble.reachable(node)
                self._failing_nodes.discard(node)
                self.auth_failure = None
                self.last_failure = None
                self._failing = False
                self.counters.inc("GetMetadataSuccess")
                self._accept(view)
                return view, number
            # sorted when refused: the same refusals read the same whichever broker was asked first
            detail = "; ".join(sorted(errors) if refused else errors) or "no brokers known"
            self.auth_failure = detail if refused else None
            self.last_failure = detail
            if not self._failing:
                self._failing = True
                self.counters.inc("GetMetadataFail")
                if self.view is None:
                    self.counters.inc("InitialGetMetadataFail")
            if order and refused == len(order):
                self.on_refused(detail)
            raise MetadataUnavailable(detail)

    async def fetch_with_retry(self) -> tuple[ClusterView, int]:
        backoff = ExponentialBackoff(self.config.reconnect_backoff_ms, self.config.reconnect_backoff_max_ms, self.rng)
        while True:
            try:
                return await self.fetch()
            except MetadataUnavailable:
                await asyncio.sleep(backoff.next_delay() / 1000)

    async def refresh_loop(
        self,
        apply: Callable[[ClusterView, int], None],
        paused: Callable[[], bool],
        waiting: Callable[[], bool] = lambda: False,
    ) -> None:
        """Periodic and on-demand refreshes, for the producer's task group. ``waiting()``: messages wait for a view
        (failed fetches are then retried with the reconnect backoff, at least every ``reconnect_backoff_max_ms``)."""
        loop = asyncio.get_running_loop()
        config = self.config
        backoff = ExponentialBackoff(config.metadata_min_interval_ms, config.metadata_retry_backoff_max_ms, self.rng)
        probe = ExponentialBackoff(config.reconnect_backoff_ms, config.reconnect_backoff_max_ms, self.rng)
        min_interval = self.config.metadata_min_interval_ms / 1000
        self._last = loop.time() - min_interval  # the first fetch need not wait
        while True:
            interval = jittered(self.config.metadata_refresh_interval_ms, self.rng) / 1000
            while not self._wanted.is_set() and (remaining := self._last + interval - loop.time()) > 0:
                try:
                    async with asyncio.timeout(remaining):
                        await self._wanted.wait()
                except TimeoutError:
                    pass  # the timer may have been restarted meanwhile: look again
            gap = min_interval - (loop.time() - self._last)
            if gap > 0:
                await asyncio.sleep(gap)
            self._wanted.clear()
            if paused():
                self._last = loop.time()  # the pause fetches metadata itself
                continue
            try:
                view, number = await self.fetch()
            except MetadataUnavailable:
                delay = backoff.next_delay() / 1000
                if waiting():  # the reconnect backoff instead; the gap below adds min_interval back
                    delay = min(delay, probe.next_delay() / 1000 - min_interval)
                self._last = loop.time() + delay
                self._wanted.set()  # retry after the backoff
                continue
            backoff.reset()
            probe.reset()
            self._last = loop.time()
            apply(view, number)

    def restart_timer(self) -> None:
        """A successful pause refreshed metadata: the periodic timer starts over (Bruce)."""
        self._last = asyncio.get_running_loop().time()
        self._wanted.clear()

    async def autocreate(self, topic: str) -> bool:
        """Ask each broker in turn to create ``topic``; True when one accepted (error 0 or 5)."""
        for host, port in list(self.known):
            try:
                answer = await self._metadata(host, port, [topic], allow_auto_topic_creation=True)
            except TransportError:
                continue
            for t in answer.topics:
                if t.name == topic:
                    if t.error_code in (0, 5):
                        self.counters.inc("TopicAutocreateOk")
                        return True
                    self.counters.inc("TopicAutocreateFail", labels=(("code", str(t.error_code)),))
                    return False
        self.counters.inc("TopicAutocreateNoAnswer")
        return False

    async def _ask(self, host: str, port: int) -> ClusterView:
        answer = await self._metadata(host, port, None, allow_auto_topic_creation=False)
        return build_view(
            answer.brokers, answer.topics, require_topics=self.require_topics, cluster_id=answer.cluster_id
        )

    async def _metadata(
        self, host: str, port: int, topics: list[str] | None, *, allow_auto_topic_creation: bool
    ) -> MetadataResponse:
        """One Metadata request on a connection of its own (``topics=None``: every topic)."""
        config = self.config
        conn = await open_connection(
            host, port, config.wire_client_id, self.timeouts, config.protocol, security=config.security
        )
        try:
            version = conn.versions.version(METADATA)  # type: ignore[union-attr]  # negotiated
            request = metadata_request(topics, version=version, allow_auto_topic_creation=allow_auto_topic_creation)
            answer: MetadataResponse = await conn.request(request, version)
            return answer
        finally:
            conn.close()

    def _accept(self, view: ClusterView) -> None:
        now_ms = int(time.time() * 1000)
        self.last_updated_ms = now_ms
        if not view.same_as(self.view):
            self.last_modified_ms = now_ms
            self.counters.inc("MetadataChanged")
        self.view = view
        self.known = [(b.host, b.port) for b in view.brokers.values()]
