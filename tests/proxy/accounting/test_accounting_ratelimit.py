"""Rate limiter: Bruce's msg_rate_limiter test, windows anchored at the first message, maxCount 0, unlimited, defaults,
and the bounded per-topic state."""

from __future__ import annotations

import pytest

from bruce.proxy.config.model import RateLimit
from bruce.proxy.routing.ratelimit import RateLimiter
from bruce.wire.errors import UsageError

# Bruce's test config: named configs (interval ms, max count | None = unlimited), a default and per-topic choices.
NAMED = {
    "default_conf": RateLimit(2, 4),
    "conf1": RateLimit(1, 0),
    "conf2": RateLimit(1, 1),
    "conf3": RateLimit(1, 2),
    "conf4": RateLimit(10, 0),
    "conf5": RateLimit(20, 3),
    "conf6": RateLimit(1, None),
}
TOPICS = {
    "topic1": "conf1",
    "topic2": "conf2",
    "topic3": "conf3",
    "topic4": "conf4",
    "topic5": "conf5",
    "topic6": "default_conf",
    "topic7": "conf6",
}


def bruce_lookup(topic: str) -> RateLimit:
    return NAMED[TOPICS.get(topic, "default_conf")]


# (topic, now, allowed) in order: Bruce's BasicTest with "would exceed" inverted.
BRUCE_SEQUENCE = [
    ("blah", 0, True),
    ("blah", 1, True),
    ("blah", 1, True),
    ("blah", 1, True),
    ("blah", 1, False),
    ("blah", 2, True),  # new window [2, 4)
    ("duh", 2, True),
    ("duh", 2, True),
    ("duh", 2, True),
    ("duh", 2, True),
    ("duh", 2, False),
    ("blah", 2, True),
    ("blah", 2, True),
    ("blah", 2, True),
    ("blah", 3, False),
    ("topic1", 4, False),  # max count 0: everything is dropped
    ("topic2", 4, True),
    ("topic2", 4, False),
    ("topic3", 5, True),
    ("topic4", 5, False),
    ("topic3", 5, True),
    ("topic3", 5, False),
    ("topic5", 10, True),  # window [10, 30)
    ("topic5", 20, True),
    ("topic5", 29, True),
    ("topic5", 29, False),
    ("topic5", 30, True),  # [30, 50)
    ("topic5", 40, True),
    ("topic5", 49, True),
    ("topic5", 50, True),  # [50, 70)
    ("topic5", 60, True),
    *[("topic7", 65, True)] * 25,  # unlimited
    ("topic5", 68, True),
    ("topic5", 69, False),
    ("blah", 70, True),
    ("blah", 71, True),
    ("blah", 71, True),
    ("blah", 71, True),
    ("topic6", 71, True),  # first message for topic6: its windows start at odd times
    ("topic6", 71, True),
    ("topic6", 71, True),
    ("blah", 71, False),
    ("topic6", 71, True),
    ("topic6", 71, False),
    ("topic6", 72, False),  # still in [71, 73)
    ("topic6", 172, True),  # [171, 173)
    ("topic6", 172, True),
    ("topic6", 172, True),
    ("topic6", 172, True),
    ("topic6", 173, True),  # [173, 175): a new window, so not discarded
    ("topic6", 173, True),
    ("topic6", 174, True),
    ("topic6", 174, True),
    ("topic6", 174, False),
]


def test_bruce_sequence() -> None:
    limiter = RateLimiter(bruce_lookup)
    got = [(topic, now, limiter.allow(topic, now)) for topic, now, _ in BRUCE_SEQUENCE]
    assert got == BRUCE_SEQUENCE


def test_windows_are_anchored_at_the_first_message() -> None:
    limiter = RateLimiter(lambda topic: RateLimit(2, 1))
    assert limiter.allow("t", 71)
    assert not limiter.allow("t", 72)  # [71, 73)
    # Boundaries are odd: 171 and 172 share [171, 173), 173 starts a new window.
    assert limiter.allow("t", 171)
    assert not limiter.allow("t", 172)
    assert limiter.allow("t", 173)
    assert not limiter.allow("t", 174)
    # A long silence does not re-anchor: 1000 is inside [999, 1001).
    assert limiter.allow("t", 1000)
    assert not limiter.allow("t", 1000)
    assert limiter.allow("t", 1001)


def test_every_message_counts_discarded_ones_too() -> None:
    limiter = RateLimiter(lambda topic: RateLimit(100, 2))
    results = [limiter.allow("t", 0) for _ in range(5)]
    assert results == [True, True, False, False, False]
    assert [limiter.allow("t", 100) for _ in range(3)] == [True, True, False]


def test_max_count_zero_drops_every_message() -> None:
    limiter = RateLimiter(lambda topic: RateLimit(1000, 0))
    assert not any(limiter.allow("t", now) for now in range(0, 10_000, 7))


@pytest.mark.parametrize("answer", [None, RateLimit(1000, None)])
def test_unlimited(answer: RateLimit | None) -> None:
    limiter = RateLimiter(lambda topic: answer)
    assert all(limiter.allow("t", 0) for _ in range(10_000))


def test_default_config_applies_to_topics_without_their_own() -> None:
    limiter = RateLimiter(bruce_lookup)
    # Unknown topics get the default (2 ms, 4); each has its own counter.
    for topic in ("a", "b"):
        assert [limiter.allow(topic, 0) for _ in range(5)] == [True, True, True, True, False]
    assert [limiter.allow("topic2", 0) for _ in range(2)] == [True, False]  # its own config (1, 1)


def test_disabled_limiter() -> None:
    limiter = RateLimiter(None)
    assert not limiter.enabled
    assert all(limiter.allow("t", 0) for _ in range(100))
    assert RateLimiter(bruce_lookup).enabled


def test_lookup_is_asked_once_per_topic() -> None:
    asked: list[str] = []

    def lookup(topic: str) -> RateLimit:
        asked.append(topic)
        return RateLimit(10, 5)

    limiter = RateLimiter(lookup)
    for now in range(100):
        limiter.allow("a", now)
        limiter.allow("b", now)
    assert asked == ["a", "b"]


def test_state_is_bounded_and_least_recently_used_topics_go_first() -> None:
    limiter = RateLimiter(lambda topic: RateLimit(1000, 1), max_topics=3)
    for topic in ("a", "b", "c"):
        assert limiter.allow(topic, 0)
    assert not limiter.allow("a", 1)  # "a" is now the most recently used
    assert limiter.allow("d", 1)  # evicts "b", the least recently used
    assert len(limiter) == 3 and limiter.evictions == 1
    assert not limiter.allow("a", 2)  # "a" kept its window
    assert limiter.allow("b", 2)  # "b" starts afresh
    for i in range(10_000):  # adversarial topic names cannot grow the state
        limiter.allow(f"x{i}", 3)
    assert len(limiter) == 3


@pytest.mark.parametrize("bad", [RateLimit(0, 1), RateLimit(-5, 1), RateLimit(10, -1)])
def test_bad_config_is_a_clear_error(bad: RateLimit) -> None:
    limiter = RateLimiter(lambda topic: bad)
    with pytest.raises(UsageError, match="bad rate limit for topic 't'"):
        limiter.allow("t", 0)


def test_config_model_limits_and_bruce_fast_path() -> None:
    named = {"slow": RateLimit(interval_ms=1000, max_count=2), "free": RateLimit(interval_ms=1, max_count=None)}
    lookup = {"a": named["slow"], "b": named["free"]}.__getitem__
    limiter = RateLimiter.from_limits(lookup, named.values())
    assert limiter.enabled
    assert [limiter.allow("a", 0) for _ in range(3)] == [True, True, False]
    assert all(limiter.allow("b", 0) for _ in range(100))
    unlimited_only = RateLimiter.from_limits(lookup, [named["free"]])
    assert not unlimited_only.enabled
