"""Where the plog listeners hand their messages: the interface the daemon implements.

Rules:
- Every message a listener takes in (an unboxed datagram, a reassembled multipart message, a TCP line) is offered to
  :meth:`PlogSink.submit` exactly once; from then on its fate is the sink's: ``True`` means accepted (the daemon
  delivers it or discards it later with a reason), ``False`` means not accepted, already counted and reported by the
  sink (budget full, bad topic, ...). The listeners only count how many were refused, per listener.
- Inputs that cannot push back (UDP) submit regardless of the budget. Inputs that can (TCP) ask
  :meth:`PlogSink.budget_available` before each message; when it says no they stop reading, keep what they already
  read, and register with :meth:`PlogSink.notify_when_free` to resume. A closing connection calls
  :meth:`PlogSink.cancel_notify`.
- All methods are called from the event loop thread, never concurrently; none may block or raise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class PlogSink(Protocol):
    """The daemon's intake, as seen by the plog listeners."""

    def submit(self, topic: str, key: bytes | None, value: bytes, *, partition_key: int | None, listener: str) -> bool:
        """Offer one message. ``key`` is the Kafka record key (plog's ``pk:`` tag, UTF-8) or ``None``;
        ``partition_key`` is an explicit partition key (plog input never has one, so always ``None`` here);
        ``listener`` names the listener it came from. ``False`` = not accepted (the sink counted why)."""
        ...

    def budget_available(self) -> bool:
        """Whether a new message would find room in the memory budget now."""
        ...

    def notify_when_free(self, callback: Callable[[], object]) -> None:
        """Call ``callback()`` once when the budget has room again (at once if it already has).

        Registering the same callback again before it ran has no further effect.
        """
        ...

    def cancel_notify(self, callback: Callable[[], object]) -> None:
        """Forget a callback registered with :meth:`notify_when_free` (no error if it is not registered)."""
        ...
