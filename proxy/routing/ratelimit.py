"""Per-topic message rate limiting (Bruce's ``<topicRateLimiting>``, docs/bruce-compatibility.md#rate-limiting).

Rules:
- Fixed windows anchored at a topic's first message: a topic first seen at time ``t0`` with interval ``i`` has
  windows ``[t0 + n·i, t0 + (n+1)·i)``. Windows do not slide and do not restart at arbitrary times.
- Every message counts, the discarded ones too. A message is allowed while the count in its window is ``<= max_count``;
  ``max_count == 0`` drops every message of the topic; ``None`` (or no config for the topic) is unlimited.
- Time is a monotonic clock in integer milliseconds, passed in by the caller: the limiter never reads a clock, so it is
  pure and tests need no sleeping.
- Per-topic config comes from a lookup callable (``Config.rate_limit_for``) returning a
  :class:`~bruce.proxy.config.model.RateLimit` (``max_count`` None: unlimited) or None (unlimited). It is asked once
  per topic; the answer is kept with the topic's state.
- Bounded memory. Contract: only topics that passed validation (known to the cluster's metadata) reach the limiter,
  so the number of topics is bounded by the cluster. As a safety net the state is an LRU of at most ``max_topics``
  topics; an evicted topic starts a fresh window (anchored at its next message) and is counted in ``evictions``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable

from bruce.wire import UsageError

from ..config import RateLimit

RateLimitLookup = Callable[[str], RateLimit | None]

DEFAULT_MAX_TOPICS = 10_000


class _Window:
    """One limited topic's current window."""

    __slots__ = ("count", "interval", "max_count", "start")

    def __init__(self, start: int, interval: int, max_count: int) -> None:
        self.start = start
        self.interval = interval
        self.max_count = max_count
        self.count = 0


_UNLIMITED = _Window(0, 1, 0)  # shared marker for topics without a limit (never mutated)


class RateLimiter:
    """Decides, per message, whether a topic is over its rate limit.

    ``RateLimiter(None)`` is disabled (``enabled`` is False): the daemon should skip the call entirely with
    ``if limiter.enabled and not limiter.allow(topic, now_ms)``.
    """

    __slots__ = ("_lookup", "_max_topics", "_states", "enabled", "evictions")

    def __init__(self, lookup: RateLimitLookup | None, *, max_topics: int = DEFAULT_MAX_TOPICS) -> None:
        if max_topics < 1:
            raise UsageError(f"max_topics must be at least 1, got {max_topics}")
        self._lookup = lookup
        self._max_topics = max_topics
        self._states: OrderedDict[str, _Window] = OrderedDict()
        self.enabled = lookup is not None
        self.evictions = 0

    @classmethod
    def from_limits(
        cls, lookup: RateLimitLookup, limits: Iterable[RateLimit], *, max_topics: int = DEFAULT_MAX_TOPICS
    ) -> RateLimiter:
        """Bruce's fast path: disabled unless one of the configured ``limits`` has a max count, e.g.
        ``RateLimiter.from_limits(cfg.rate_limit_for, cfg.topic_rate_limiting.named_configs.values())``."""
        limited = any(limit.max_count is not None for limit in limits)
        return cls(lookup if limited else None, max_topics=max_topics)

    def allow(self, topic: str, now_ms: int) -> bool:
        """Count one message for ``topic`` at monotonic time ``now_ms``; False means discard it (RATE_LIMIT)."""
        states = self._states
        window = states.get(topic)
        if window is None:
            window = self._add(topic, now_ms)
        else:
            states.move_to_end(topic)
        if window is _UNLIMITED:
            return True
        if now_ms >= window.start + window.interval:
            window.start += (now_ms - window.start) // window.interval * window.interval
            window.count = 0
        window.count += 1
        return window.count <= window.max_count

    def __len__(self) -> int:
        """How many topics have state (limited or not)."""
        return len(self._states)

    def _add(self, topic: str, now_ms: int) -> _Window:
        limit = self._lookup(topic) if self._lookup is not None else None
        if limit is None or limit.max_count is None:
            window = _UNLIMITED
        else:
            interval, max_count = limit.interval_ms, limit.max_count
            if interval <= 0 or max_count < 0:
                raise UsageError(f"bad rate limit for topic {topic!r}: interval {interval} ms, max count {max_count}")
            window = _Window(now_ms, int(interval), int(max_count))
        if len(self._states) >= self._max_topics:
            self._states.popitem(last=False)
            self.evictions += 1
        self._states[topic] = window
        return window
