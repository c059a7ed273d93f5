"""The durable spool as its users see it before and after the daemon opens it: one :class:`SpoolSlot`.

Rules:
- The daemon builds its parts first and opens the spool only when it runs (another daemon holding it stops that start,
  ``SpoolLocked``); whoever uses the spool (the inputs, the accounting) is given the slot at construction and reads
  ``slot.spool`` (None: no spool, or not opened yet). Only :meth:`SpoolSlot.open` fills it, once.
"""

from __future__ import annotations

from collections.abc import Callable

from .settings import SpoolConfig
from .spool import Spool


class SpoolSlot:
    """The spool, once opened (``spool`` is None until then, and always without a spool)."""

    __slots__ = ("spool",)

    def __init__(self, spool: Spool | None = None) -> None:
        self.spool = spool  # (tests and tools may give one already open)

    def open(self, config: SpoolConfig, *, on_behind: Callable[[], None] | None = None) -> Spool:
        """Open the spool (:meth:`Spool.open`: ``SpoolLocked`` when another daemon has it; ``on_behind``, its
        cursor's) and hold it here."""
        if self.spool is not None:
            raise RuntimeError("the spool is open already")
        self.spool = spool = Spool.open(config, on_behind=on_behind)
        return spool
