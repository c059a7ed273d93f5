"""Recent rates for the front page: a small ring of samples of the daemon's running totals.

Rules:
- A :class:`RateSample` is the totals at one moment (wall clock, epoch seconds): received, delivered, discarded, and
  delivered per topic. The daemon takes one per second on its timer task (:meth:`RateHistory.sample`); nothing is
  sampled per message.
- Bounded: the ring keeps :data:`MAX_SAMPLES` samples (a minute and a bit at one per second), each with at most
  :data:`MAX_TOPICS` topics (the ones with the most deliveries); older samples fall off.
- Rates are differences of totals over elapsed time, every one over the same window: from the oldest kept sample
  within :data:`WINDOW_S` of the newest to the newest (:func:`window_span` long; shorter while the daemon is younger
  than that). :func:`rate` gives the window's rate, :func:`series` the rate per interval between neighbouring
  samples (the sparklines). A topic missing from a sample that holds fewer than :data:`MAX_TOPICS` topics had no
  delivery yet (0), so a topic's rate and the totals' cover the same seconds; missing from a full sample, its count
  is unknown and so is its rate (None). Fewer than two samples give no rate (None), never a made-up zero.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

MAX_SAMPLES = 61
MAX_TOPICS = 50
WINDOW_S = 60.0


@dataclass(frozen=True, slots=True)
class RateSample:
    """The daemon's totals at time ``t`` (epoch seconds)."""

    t: float
    received: int
    delivered: int
    discarded: int
    topics: tuple[tuple[str, int], ...] = ()  # (topic, delivered), at most MAX_TOPICS

    def topic(self, name: str) -> int | None:
        """Delivered to ``name`` so far; None when the sample does not hold the topic."""
        for topic, n in self.topics:
            if topic == name:
                return n
        return None


class RateHistory:
    """The ring of the last :data:`MAX_SAMPLES` samples, oldest first."""

    def __init__(self, maxlen: int = MAX_SAMPLES) -> None:
        self._samples: deque[RateSample] = deque(maxlen=maxlen)

    def sample(self, t: float, received: int, delivered: int, discarded: int, topics: Mapping[str, int]) -> None:
        """Record the totals at ``t``; keeps the :data:`MAX_TOPICS` topics with the most deliveries."""
        top = sorted(topics.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_TOPICS]
        self._samples.append(RateSample(t, received, delivered, discarded, tuple(sorted(top))))

    def samples(self) -> tuple[RateSample, ...]:
        return tuple(self._samples)


Value = Callable[[RateSample], int | None]


def window(samples: Sequence[RateSample]) -> Sequence[RateSample]:
    """The samples within :data:`WINDOW_S` of the newest one."""
    if not samples:
        return samples
    newest = samples[-1].t
    return [s for s in samples if newest - s.t <= WINDOW_S]


def window_span(samples: Sequence[RateSample]) -> float | None:
    """The seconds the window covers (every rate's), or None without two samples."""
    w = window(samples)
    return w[-1].t - w[0].t if len(w) >= 2 and w[-1].t > w[0].t else None


def _value(s: RateSample, value: Value) -> int | None:
    v = value(s)
    return 0 if v is None and len(s.topics) < MAX_TOPICS else v  # a topic not in a sample with room had none yet


def rate(samples: Sequence[RateSample], value: Value) -> float | None:
    """Per second over the window: (newest - oldest) / :func:`window_span`; None when a value is unknown."""
    w = window(samples)
    if len(w) < 2 or w[-1].t <= w[0].t:
        return None
    v0, v1 = _value(w[0], value), value(w[-1])
    if v0 is None or v1 is None:
        return None
    return max(0, v1 - v0) / (w[-1].t - w[0].t)


def series(samples: Sequence[RateSample], value: Value) -> list[float]:
    """Per-second rates between neighbouring samples of the window (a counter that went back counts as 0)."""
    out = []
    for a, b in pairwise(window(samples)):
        va, vb = _value(a, value), value(b)
        if va is not None and vb is not None and b.t > a.t:
            out.append(max(0, vb - va) / (b.t - a.t))
    return out
