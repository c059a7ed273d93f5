"""Accounting: every message's fate settled in one place, and what the operator sees of discards.

Modules: ``outcomes`` (delivered or discarded, budget and spool released, counted once), ``discards`` (Bruce's
anomaly tracker and discard reports), ``discard_log`` (the discard log file), ``msg_debug`` (message debug logs).
Rule: imports no part of :mod:`bruce.proxy.daemon`.
"""

from __future__ import annotations

from .discard_log import DiscardLog
from .discards import DiscardReport, DiscardTracker, PeriodReport, TopicInterval
from .msg_debug import MessageDebugLog
from .outcomes import Accounting, AccountingCounters, Outcomes

__all__ = [
    "Accounting",
    "AccountingCounters",
    "DiscardLog",
    "DiscardReport",
    "DiscardTracker",
    "MessageDebugLog",
    "Outcomes",
    "PeriodReport",
    "TopicInterval",
]
