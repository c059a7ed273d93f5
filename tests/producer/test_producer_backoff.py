"""Bruce's pause backoff and the exponential backoff with jitter."""

from __future__ import annotations

import random

from bruce.producer.transport.backoff import ExponentialBackoff, PauseBackoff, jittered


def test_first_pause_waits_only_the_minimum() -> None:
    backoff = PauseBackoff(5000, 4, 5000, random.Random(1))
    assert backoff.next_delay(1_000_000) == 5000


def test_pauses_in_the_window_double_with_jitter_up_to_max_double() -> None:
    backoff = PauseBackoff(5000, 4, 0, random.Random(2))
    now = 0.0
    backoff.next_delay(now)
    bases = [5000, 10000, 20000, 40000, 80000, 80000]
    for base in bases:
        delay = backoff.next_delay(now)  # no time passed since the last counted pause
        assert 0.5 * base <= delay <= 1.5 * base


def test_time_since_the_last_pause_is_subtracted() -> None:
    backoff = PauseBackoff(1000, 2, 0, random.Random(3))
    backoff.next_delay(0)
    delay = backoff.next_delay(400)  # random in [500, 1500], minus 400 ms already waited
    assert 100 <= delay <= 1100


def test_a_pause_long_after_the_last_one_counts_and_returns_the_minimum() -> None:
    backoff = PauseBackoff(1000, 2, 50, random.Random(4))
    backoff.next_delay(0)
    assert backoff.next_delay(5000) == 50  # 5 s > any delay in [500, 1500]: no wait beyond the minimum


def test_window_resets_after_quiet_time() -> None:
    backoff = PauseBackoff(1000, 2, 0, random.Random(5))  # window = 1000 << 4 = 16 s
    backoff.next_delay(0)
    for t in (1, 2, 3):
        backoff.next_delay(t)
    assert backoff.next_delay(20_000) == 0  # a new window: no delay, base back to the initial value
    delay = backoff.next_delay(20_000)
    assert 500 <= delay <= 1500


def test_minimum_pause_applies_to_every_delay() -> None:
    backoff = PauseBackoff(10, 2, 5000, random.Random(6))
    assert all(backoff.next_delay(t) >= 5000 for t in range(0, 100, 10))


def test_exponential_backoff_is_bounded_and_resets() -> None:
    backoff = ExponentialBackoff(100, 1000, random.Random(7))
    delays = [backoff.next_delay() for _ in range(10)]
    assert delays[0] == 0
    assert 80 <= delays[1] <= 120 and 160 <= delays[2] <= 240
    assert all(d <= 1000 for d in delays) and delays[-1] >= 800
    backoff.reset()
    assert backoff.next_delay() == 0


def test_refresh_jitter_is_within_twenty_percent() -> None:
    rng = random.Random(8)
    values = [jittered(1000, rng) for _ in range(1000)]
    assert min(values) >= 800 and max(values) <= 1200 and max(values) - min(values) > 300
