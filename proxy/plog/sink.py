"""Where the plog listeners hand their messages: the interface the daemon implements.

Rules:
- Every message a listener takes in (an unboxed datagram, a reassembled multipart message, a TCP line) is offered to
  :meth:`PlogSink.submit` exactly once; from then on its fate is the sink's: ``True`` means accepted (the daemon
  delivers it or discards it later with a reason), ``False`` means not accepted, already counted and reported by the
  sink (budget full, shutting down, ...). The listeners only count how many were refused, per listener.
- Every input a listener drops itself — a malformed packet, an invalid fragment, a multipart message with a bad
  checksum, incomplete or too large for the reassembly buffer, a message without a topic, an over-long or cut-off TCP
  line — is reported to :meth:`PlogSink.reject` exactly once, with the discard reason and its first bytes. Commands
  (``PING``, ``STAT``, ...) and repeated fragments are not messages and reach neither method.
  So, per listener, ``submitted + rejected`` is every message it read (the daemon's ``received``).
- Inputs that cannot push back (UDP) submit regardless of the budget. Inputs that can (TCP) ask
  :meth:`PlogSink.budget_available` before each message; when it says no they stop reading, keep what they already
  read, and register with :meth:`PlogSink.notify_when_free` to resume. A closing connection calls
  :meth:`PlogSink.cancel_notify`.
- All methods are called from the event loop thread, never concurrently; none may block. None raises for a
  well-formed call; if one does (a bug), or the listener itself fails unexpectedly, the listener stops reading and
  hands the error to :meth:`PlogSink.fail`, which must stop the daemon with it (never swallow it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from bruce.producer import DiscardReason


class PlogSink(Protocol):
    """The daemon's intake, as seen by the plog listeners."""

    def submit(self, topic: str, key: bytes | None, value: bytes, *, partition_key: int | None, listener: str) -> bool:
        """Offer one message. ``key`` is the Kafka record key (plog's ``pk:`` tag, UTF-8) or ``None``;
        ``partition_key`` places a keyed message as plog's producer did (:func:`bruce.wire.plog.plog_partition_key`),
        ``None`` for any partition; ``listener`` names the listener it came from. ``False`` = not accepted (the sink
        counted why)."""
        ...

    def reject(self, reason: DiscardReason, data: bytes, *, topic: str | None, listener: str) -> None:
        """A message the listener dropped itself: ``MALFORMED`` (bad packet, bad checksum, incomplete, cut-off line),
        ``LONG_MSG`` (too large) with ``topic=None``, or ``BAD_TOPIC`` with the topic (``"null"``). ``data`` holds
        its first bytes (the sink keeps a bounded prefix)."""
        ...

    def budget_available(self, size: int) -> bool:
        """Whether a message of ``size`` bytes should be submitted now: it fits the memory budget, or it never
        could (then submitting discards it, rather than waiting forever)."""
        ...

    def notify_when_free(self, callback: Callable[[], object], size: int) -> None:
        """Call ``callback()`` once, soon after a message of ``size`` bytes would fit (never from inside this call).

        Registering the same callback again before it ran replaces the size.
        """
        ...

    def cancel_notify(self, callback: Callable[[], object]) -> None:
        """Forget a callback registered with :meth:`notify_when_free` (no error if it is not registered)."""
        ...

    def fail(self, error: Exception, *, listener: str) -> None:
        """``listener`` hit an unexpected error (a bug) and stopped reading: stop the daemon with ``error``."""
        ...
