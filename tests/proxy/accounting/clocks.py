"""A clock the test moves by hand, for the parts that take an injected clock (seconds or milliseconds alike)."""

from __future__ import annotations


class ManualClock:
    """Returns ``now`` until the test changes it."""

    def __init__(self, now: float = 0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
