"""A broker's connection health, as the status pages show it (their rows: :mod:`bruce.producer.views`).

Rules:
- :class:`BrokerHealth` is a sender's connection state (``connected``, ``connect failed``, ``authentication failed``,
  ``disconnected``, ``idle``: no produce connection opened yet), keyed by node id, changed only on transitions
  (connect, connect failure, connection lost), never per message; times are wall-clock (epoch s) for the pages.
- The log's account of broker trouble is :mod:`bruce.producer.transport.trouble`, a separate concern on purpose: it is
  keyed by address (bootstrap and metadata brokers too, which have no sender), counts failed attempts per episode on the
  monotonic clock, and only rate-limits lines; a connection lost mid-request is a state here, not trouble there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

CONNECTED, CONNECT_FAILED, DISCONNECTED, IDLE = "connected", "connect failed", "disconnected", "idle"
AUTH_FAILED = "authentication failed"


@dataclass(slots=True)
class BrokerHealth:
    """A sender's connection state for the status pages: the state, since when (epoch s), the last error's text and
    time. Changed only on transitions (connect, connect failure, connection lost), never per message."""

    state: str = IDLE
    since: float = 0.0
    last_error: str = ""
    last_error_at: float = 0.0

    def note(self, state: str, error: str = "") -> None:
        now = time.time()
        if state != self.state:
            self.state, self.since = state, now
        if error:
            self.last_error, self.last_error_at = error, now
