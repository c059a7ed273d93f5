"""Idempotent producers' sequence numbers, per producer and partition: gaps and repeats flagged.

Rules:
- Key: (producer id, topic, partition). A batch's records carry sequences ``base .. base + count - 1`` (wrapping
  after 2**31 - 1). The next batch of the same epoch should start right after; a later start is a gap, an earlier
  one a repeat (a retry, or a duplicate). A new epoch starts a new run (sequences restart at 0).
- In a log (Fetch answers, where the caller gives each batch's offset) a batch at or before the latest offset seen
  for its key is the same batch read again (another consumer, or a seek back), not a repeat: it is skipped. A repeat
  there is a batch at a new offset with sequences already seen — a duplicate written to the log.
- Bounded: at most ``max_keys`` keys, the least recently seen forgotten first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable

MAX_KEYS = 100_000
_WRAP = 1 << 31


class Sequences:
    """Expected next sequence per (producer id, topic, partition)."""

    def __init__(self, *, max_keys: int = MAX_KEYS) -> None:
        self.max_keys = max_keys
        self.state: OrderedDict[Hashable, tuple[int, int, int]] = OrderedDict()  # key -> (epoch, next seq, offset)
        self.gaps = 0
        self.repeats = 0

    def observe(self, key: Hashable, epoch: int, base_sequence: int, count: int, base_offset: int = -1) -> str | None:
        """Note a batch; a description of the gap or repeat it shows, or None."""
        nxt = (base_sequence + count) % _WRAP
        previous = self.state.get(key)
        if previous is not None and 0 <= base_offset <= previous[2]:  # the same log batch read again
            return None
        self.state[key] = (epoch, nxt, base_offset)
        self.state.move_to_end(key)
        if len(self.state) > self.max_keys:
            self.state.popitem(last=False)
        if previous is None:
            return None
        last_epoch, expected, _ = previous
        if epoch != last_epoch:
            return None if base_sequence == 0 else f"new epoch {epoch} starts at sequence {base_sequence}, not 0"
        if base_sequence == expected:
            return None
        ahead = (base_sequence - expected) % _WRAP
        if ahead < _WRAP // 2:
            self.gaps += 1
            return f"gap: expected sequence {expected}, got {base_sequence} ({ahead} missing)"
        self.repeats += 1
        self.state[key] = previous if (expected - nxt) % _WRAP < _WRAP // 2 else self.state[key]
        return f"repeat: sequence {base_sequence}..{base_sequence + count - 1} already seen (expected {expected})"
