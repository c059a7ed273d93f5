"""The transactional producer: its states and requests (``manager``) and its link to the transaction coordinator
(``coordinator``).

Rule: the highest wing of :mod:`bruce.producer`; imports the top-level vocabulary and the wings below it (see
docs/architecture.md#the-floors-of-bruceproducer).
"""

from __future__ import annotations

from .manager import TransactionError, TransactionManager

__all__ = ["TransactionError", "TransactionManager"]
