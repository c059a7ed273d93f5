"""Topic creation: Bruce's auto-creation, for :meth:`Producer.create_topic` and for messages sent to an unknown topic
with ``topic_autocreate``.

Rules:
- Creating: a single-topic Metadata request allowing creation, to each known broker in turn; then a refresh at once
  and after :data:`~bruce.producer.metadata.fetcher.AUTOCREATE_CHECKS` (3, 6 and 12 s), then every 12 s, until the topic
  is in the cluster view; all within ``topic_create_timeout_ms``.
- The outcome: None once the topic is in the view, TOPIC_AUTOCREATE_FAIL when no broker agreed, TOPIC_CREATE_TIMEOUT
  when the deadline passed first. Never raises for a broker failure; counted as
  ``TopicAutocreateOk/Fail/NoAnswer/Timeout``.
- For an unknown topic's messages, one creation runs per topic at a time (a task in the producer's group); when it
  fails, the dispatcher discards the messages waiting for the topic with the failure's reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from ..config import ProducerConfig
from ..counters import Counters
from ..reasons import DiscardReason
from . import fetcher
from .cluster import ClusterView, Topic
from .fetcher import MetadataFetcher, MetadataUnavailable

_DETAIL = {
    DiscardReason.TOPIC_AUTOCREATE_FAIL: "no broker agreed to create the topic",
    DiscardReason.TOPIC_CREATE_TIMEOUT: "the topic was not in metadata by the creation deadline",
}


class WaitingTopics(Protocol):
    """Where the messages of unknown topics wait (:class:`~bruce.producer.dispatch.Dispatcher` is one)."""

    def topic_info(self, topic: str) -> Topic | None: ...

    def fail_unknown(self, topic: str, reason: DiscardReason, detail: str) -> None: ...


class TopicCreator:
    """Creates topics and waits for them to appear (see the module rules)."""

    def __init__(
        self,
        config: ProducerConfig,
        counters: Counters,
        dispatcher: WaitingTopics,
        fetcher: MetadataFetcher,
        apply_view: Callable[[ClusterView, int], None],
        spawn: Callable[[Coroutine[Any, Any, None]], object],
    ) -> None:
        self.config = config
        self.counters = counters
        self.dispatcher = dispatcher
        self.fetcher = fetcher
        self.apply_view = apply_view
        self.spawn = spawn
        self._creating: set[str] = set()

    async def create(self, topic: str) -> DiscardReason | None:
        """Create ``topic`` and wait for it, within ``topic_create_timeout_ms``: None, or why it failed."""
        if self.dispatcher.topic_info(topic) is not None:
            return None
        try:
            async with asyncio.timeout(self.config.topic_create_timeout_ms / 1000):
                return await self._create_and_wait(topic)
        except TimeoutError:
            self.counters.inc("TopicAutocreateTimeout")
            return DiscardReason.TOPIC_CREATE_TIMEOUT

    def start(self, topic: str) -> None:
        """Create ``topic`` in the background for the messages waiting for it (once at a time per topic)."""
        if topic not in self._creating:
            self._creating.add(topic)
            self.spawn(self._autocreate(topic))

    async def _create_and_wait(self, topic: str) -> DiscardReason | None:
        d = self.dispatcher
        if not await self.fetcher.autocreate(topic):
            return DiscardReason.TOPIC_AUTOCREATE_FAIL
        delays = iter(fetcher.AUTOCREATE_CHECKS)  # read when used: tests shorten them
        delay = 0.0  # the first look at once: a broker that creates on request (tansu) shows the topic already
        while True:  # ended by create's deadline
            await asyncio.sleep(delay)
            delay = next(delays, delay)
            if d.topic_info(topic) is not None:  # another refresh found it meanwhile
                return None
            try:
                view, number = await self.fetcher.fetch()
            except MetadataUnavailable:
                continue
            self.apply_view(view, number)
            if view.topic(topic) is not None:
                return None

    async def _autocreate(self, topic: str) -> None:
        try:
            failure = await self.create(topic)
        finally:
            self._creating.discard(topic)
        if failure is not None:  # None: the new view has routed the topic's messages
            self.dispatcher.fail_unknown(topic, failure, _DETAIL[failure])
