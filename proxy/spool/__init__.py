"""The durable spool: every accepted message on disk before it is routed, replayed after any crash.

Rules: one entry point, :class:`Spool` (open, append, tick, replay, done_many, close); the on-disk format is
:mod:`.format` (spec and fast codec), recovery of one segment is :mod:`.scan`, of the directory :mod:`.recovery`
(with the list of segments, :mod:`.manifest`, and where the newest one ends, :mod:`.tail`), completion tracking
:mod:`.tracker`, the directory lock :mod:`.lock`.
Nothing here imports the daemon: the daemon calls in (docs/spool.md).
"""

from __future__ import annotations

from .format import SpoolFields, SpoolMessage, SpoolRecord, parse_done
from .lock import SpoolLocked
from .scan import scan_segment
from .settings import FullPolicy, SpoolConfig
from .slot import SpoolSlot
from .spool import NOT_SPOOLED, SPOOL_FULL, Spool

__all__ = [
    "NOT_SPOOLED",
    "SPOOL_FULL",
    "FullPolicy",
    "Spool",
    "SpoolConfig",
    "SpoolFields",
    "SpoolLocked",
    "SpoolMessage",
    "SpoolRecord",
    "SpoolSlot",
    "parse_done",
    "scan_segment",
]
