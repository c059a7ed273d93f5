"""The spool's settings (docs/spool.md): where it lives, segment size, fsync period, size limit and what a full spool
does. Rule: checked when made — an impossible setting raises :class:`~bruce.wire.UsageError` naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from bruce.wire import UsageError

from .format import HEADER_SIZE


class FullPolicy(StrEnum):
    """What ``append`` does when the spool holds ``max_bytes``."""

    MEMORY = "memory"  # hold new messages in memory only (the memory budget still applies), counted
    DISCARD = "discard"  # discard new messages as SPOOL_FULL


@dataclass(frozen=True, slots=True)
class SpoolConfig:
    directory: Path
    segment_bytes: int = 16 * 1024 * 1024
    fsync_ms: int = 100
    max_bytes: int = 1024 * 1024 * 1024
    full_policy: FullPolicy = FullPolicy.MEMORY
    replay_burst: int = 1024  # records per burst handed out by replay()
    done_every_ms: int = 1000  # tick() saves the done bitmaps of partly done segments this often (0: at close only)

    def __post_init__(self) -> None:
        if (
            self.segment_bytes <= HEADER_SIZE
            or self.max_bytes <= 0
            or self.fsync_ms < 0
            or self.replay_burst <= 0
            or self.done_every_ms < 0
        ):
            raise UsageError(f"invalid spool settings: {self}")
