"""The pause: stop dispatching, collect what is unsent and unacknowledged, refresh metadata with Bruce's pause backoff,
and reroute preserving order (docs/bruce-compatibility.md#pause-and-backoff).

Rules:
- One pause at a time; triggers that arrive during a pause are merged into it.
- Steps: no new requests (the dispatcher is already ``paused``) → wait for outstanding ACKs until
  ``dispatcher_restart_max_delay_ms`` → close every connection (what is still unacknowledged comes back as possible
  duplicates) → wait → fetch metadata, retrying with the reconnect backoff (at most ``reconnect_backoff_max_ms``
  apart) → install the view (reroute) → resume.
- The wait: Bruce's ``PauseBackoff.next_delay`` when a trigger was an answer from a broker (an error ACK, a response
  that makes no sense). When no broker answered (lost connection, timeout) the broker is probed
  instead: the reconnect backoff (0 the first time, then ``reconnect_backoff_ms`` doubling up to
  ``reconnect_backoff_max_ms``; reset by a produce response), so delivery resumes within about
  ``reconnect_backoff_max_ms`` of the broker accepting connections again, and a broker that keeps dropping
  connections still costs at most one pause per ``reconnect_backoff_max_ms``.
- Every wait is bounded except the metadata retry, which backs off up to its cap and ends with the producer.
- Each pause is logged (WARNING, logger ``bruce.producer``) with the trigger that started it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from ..counters import Counters
from ..metadata import ClusterView, MetadataFetcher
from ..transport import ExponentialBackoff, PauseBackoff
from .dispatcher import Dispatcher
from .sender import Sender

log = logging.getLogger("bruce.producer")


class PauseController:
    def __init__(
        self,
        dispatcher: Dispatcher,
        fetcher: MetadataFetcher,
        senders: Callable[[], Iterable[Sender]],
        apply: Callable[[ClusterView, int], None],
        counters: Counters,
        backoff: PauseBackoff,
    ) -> None:
        self.dispatcher = dispatcher
        self.fetcher = fetcher
        self.senders = senders
        self.apply = apply
        self.counters = counters
        self.backoff = backoff
        config = dispatcher.config
        self.probe = ExponentialBackoff(config.reconnect_backoff_ms, config.reconnect_backoff_max_ms)
        self.wanted = asyncio.Event()
        self.pausing = False
        self.cause = ""  # what asked for the pause under way (or the next one)
        self.answered = False  # a trigger of the pause under way (or the next one) was a broker's answer
        self._progress = asyncio.Event()

    def request(self, cause: str, answered: bool = False) -> None:
        """Pause soon (merged with a pause that has not yet fetched metadata); ``cause`` is for the log;
        ``answered``: a broker's answer asked for it (Bruce's pause backoff applies)."""
        if not self.wanted.is_set():
            self.cause = cause
        self.answered = self.answered or answered
        self.wanted.set()

    def progress(self, answered: bool = False) -> None:
        """A request was answered (``answered``) or failed: the wait for outstanding ACKs may be over."""
        if answered:
            self.probe.reset()
        self._progress.set()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        config = self.dispatcher.config
        while True:
            await self.wanted.wait()
            self.pausing = True
            self.counters.inc("Pause")
            log.warning("pause: %s", self.cause)
            deadline = loop.time() + config.dispatcher_restart_max_delay_ms / 1000
            while any(s.outstanding for s in self.senders()) and loop.time() < deadline:
                self._progress.clear()
                try:
                    async with asyncio.timeout(deadline - loop.time()):
                        await self._progress.wait()
                except TimeoutError:
                    break
            for sender in self.senders():
                sender.close_connection()
            delay = self.backoff.next_delay(loop.time() * 1000) if self.answered else self.probe.next_delay()
            await asyncio.sleep(delay / 1000)
            self.wanted.clear()  # triggers until now are served by this pause
            self.answered = False
            view, number = await self.fetcher.fetch_with_retry()
            self.fetcher.restart_timer()  # before applying: a refresh the view asks for must survive it
            self.apply(view, number)
            self.pausing = False
            self.dispatcher.resume()
