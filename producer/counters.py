"""Counters: named, monotonically increasing integers, optionally with labels (broker, topic, partition, reason).

Rules: incrementing is cheap (one dict operation); names are CamelCase like Bruce's (AckOk, ConnectorSocketTimeout);
label values are strings. Readers take a snapshot; nothing here does I/O.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

Labels = tuple[tuple[str, str], ...]


class Counters:
    """A registry of counters. ``inc("AckOk")``; ``inc("AckError", labels=(("code", "6"),))``."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: defaultdict[tuple[str, Labels], int] = defaultdict(int)

    def inc(self, name: str, n: int = 1, labels: Labels = ()) -> None:
        self._values[(name, labels)] += n

    def get(self, name: str, labels: Labels | None = None) -> int:
        """The value of one labelled counter, or (``labels=None``) the sum over all its labels."""
        if labels is not None:
            return self._values.get((name, labels), 0)
        return sum(v for (n, _), v in self._values.items() if n == name)

    def items(self) -> Iterator[tuple[str, Labels, int]]:
        """Every counter as (name, labels, value), sorted by name then labels."""
        for (name, labels), value in sorted(self._values.items()):
            yield name, labels, value

    def snapshot(self) -> dict[str, int]:
        """``{"Name" or "Name{k=v,...}": value}`` — a flat copy for reports and tests."""
        out = {}
        for name, labels, value in self.items():
            key = name + ("{" + ",".join(f"{k}={v}" for k, v in labels) + "}" if labels else "")
            out[key] = value
        return out
