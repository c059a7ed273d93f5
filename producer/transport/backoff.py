"""Delays between retries: Bruce's pause backoff, and exponential backoff with jitter for reconnects and metadata.

Rules: pure — the caller passes the current time (monotonic milliseconds) and may pass its own ``random.Random``;
nothing sleeps here. Every delay is bounded by its configuration.

:class:`PauseBackoff` is Bruce's (docs/bruce-compatibility.md#pause-and-backoff): the first pause waits only the
minimum pause delay. Later pauses inside a window of ``initial << (max_double + 2)`` ms from the window's start wait a
random delay in [0.5·b, 1.5·b] minus the time since the last counted pause, where b starts at ``initial`` and doubles
up to ``max_double`` times; a pause after the window starts a new window with no delay. The result is never below
``min_pause``.
"""

from __future__ import annotations

import random


class PauseBackoff:
    __slots__ = (
        "_base",
        "_doublings",
        "_initial",
        "_last_event",
        "_max_double",
        "_min_pause",
        "_rng",
        "_window",
        "_window_start",
    )

    def __init__(self, initial_ms: int, max_double: int, min_pause_ms: int, rng: random.Random | None = None) -> None:
        self._initial = initial_ms
        self._max_double = max_double
        self._min_pause = min_pause_ms
        self._rng = rng or random.Random()
        self._window = initial_ms << (max_double + 2)
        self._window_start: float | None = None
        self._last_event = 0.0
        self._base = initial_ms
        self._doublings = 0

    def next_delay(self, now_ms: float) -> float:
        """How long (ms) to wait before fetching metadata for a pause that happens at ``now_ms``."""
        if self._window_start is None or now_ms - self._window_start > self._window:
            self._base, self._doublings = self._initial, 0
            self._window_start = now_ms
            self._last_event = now_ms
            return self._min_pause
        delay = self._rng.uniform(0.5 * self._base, 1.5 * self._base)
        if self._doublings < self._max_double:
            self._base *= 2
            self._doublings += 1
        since_last = now_ms - self._last_event
        if since_last < delay:
            return max(self._min_pause, delay - since_last)
        self._last_event = now_ms
        return self._min_pause


class ExponentialBackoff:
    """``initial`` doubling to ``maximum`` per consecutive failure, each delay jittered to [0.8·d, 1.2·d]
    (librdkafka's reconnect backoff). :meth:`reset` after a success."""

    __slots__ = ("_failures", "_initial", "_maximum", "_rng")

    def __init__(self, initial_ms: int, maximum_ms: int, rng: random.Random | None = None) -> None:
        self._initial = initial_ms
        self._maximum = maximum_ms
        self._rng = rng or random.Random()
        self._failures = 0

    def next_delay(self) -> float:
        """Record a failure and return how long (ms) to wait before the next attempt (0 before the first retry)."""
        self._failures += 1
        if self._failures == 1:
            return 0.0
        base = min(self._maximum, self._initial * 2 ** min(self._failures - 2, 30))
        delay: float = min(self._maximum, base * self._rng.uniform(0.8, 1.2))
        return delay

    def reset(self) -> None:
        self._failures = 0


def jittered(interval_ms: float, rng: random.Random, fraction: float = 0.2) -> float:
    """``interval_ms`` ± ``fraction`` (uniform): Bruce's metadata refresh interval jitter."""
    return interval_ms * rng.uniform(1 - fraction, 1 + fraction)
