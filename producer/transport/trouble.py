"""Broker trouble in the log: a broker that cannot be reached is said once, summarised while it lasts, and its
recovery is said once. Never a line per attempt, so a broker down for days costs a line per summary interval.

Rules:
- Brokers are named ``host:port`` (bootstrap brokers, metadata brokers and produce connections alike).
- :meth:`BrokerTrouble.failed` (a failed connect — DNS failure, refused, timed out, failed negotiation — or a failed
  metadata request): the first failure of an episode logs a WARNING with the reason; later ones are counted, and
  once :data:`SUMMARY_INTERVAL` seconds have passed since the episode's last line, one WARNING summarises them (how
  long, how many attempts, the last reason).
- :meth:`BrokerTrouble.reachable` (a connection negotiated, or a metadata answer): ends the episode with one WARNING
  line (how long it lasted, how many attempts failed). A broker never in trouble logs nothing.
- The last error of each broker in trouble (and of one that refused authentication, :meth:`BrokerTrouble.refused`,
  which the producer logs itself) is kept with its wall-clock time for the status page (:meth:`last_error`) until
  the broker answers. Bounded by the brokers named in the config and the metadata.
- Logger ``bruce.producer``; the clock is ``time.monotonic`` unless one is given (tests).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("bruce.producer")

SUMMARY_INTERVAL = 30.0  # seconds between two lines about one broker's ongoing trouble


@dataclass(slots=True)
class _Episode:
    since: float
    logged: float  # when the last line about it was written
    attempts: int
    reason: str


class BrokerTrouble:
    """Per-broker trouble episodes, for the log (see the module rules)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, interval: float = SUMMARY_INTERVAL) -> None:
        self._clock = clock
        self._interval = interval
        self._episodes: dict[str, _Episode] = {}
        self._last: dict[str, tuple[str, float]] = {}  # node -> (last error, epoch s)

    def failed(self, node: str, reason: str) -> None:
        """An attempt to reach ``node`` (``host:port``) failed for ``reason``."""
        self._last[node] = (reason, time.time())
        now = self._clock()
        episode = self._episodes.get(node)
        if episode is None:
            self._episodes[node] = _Episode(now, now, 1, reason)
            log.warning("broker %s unreachable: %s", node, reason)
            return
        episode.attempts += 1
        episode.reason = reason
        if now - episode.logged >= self._interval:
            episode.logged = now
            log.warning(
                "broker %s unreachable for %.0f s: %d failed attempts, last: %s",
                node,
                now - episode.since,
                episode.attempts,
                reason,
            )

    def reachable(self, node: str) -> None:
        """``node`` answered: the end of its trouble, if it had any."""
        self._last.pop(node, None)
        if not self._episodes:
            return
        episode = self._episodes.pop(node, None)
        if episode is not None:
            log.warning(
                "broker %s reachable again after %.1f s (%d failed attempts)",
                node,
                self._clock() - episode.since,
                episode.attempts,
            )

    def refused(self, node: str, reason: str) -> None:
        """``node`` refused authentication (TLS or SASL): kept for :meth:`last_error`, not logged here."""
        self._last[node] = (reason, time.time())

    def last_error(self, node: str) -> tuple[str, float] | None:
        """The last error in reaching ``node`` and when (epoch s), or None since it last answered."""
        return self._last.get(node)

    def unreachable(self) -> list[str]:
        """The brokers in trouble now, sorted."""
        return sorted(self._episodes)
