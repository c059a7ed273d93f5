"""Messages: what every floor above handles — the daemon's in-memory :class:`HeldMessage` and the memory budget
(:class:`MessageBudget`, ``--msg_buffer_max``) that every held message is charged to.

Modules: ``message`` (the message, its charge), ``budget`` (the budget).
Rule: imports nothing of :mod:`bruce.proxy` (the floor above ``spool``, under every other subsystem: see
docs/architecture.md#the-floors-of-bruceproxy).
"""

from __future__ import annotations

from .budget import BudgetError, MakeRoom, MessageBudget
from .message import MESSAGE_OVERHEAD, HeldMessage, message_charge

__all__ = ["MESSAGE_OVERHEAD", "BudgetError", "HeldMessage", "MakeRoom", "MessageBudget", "message_charge"]
