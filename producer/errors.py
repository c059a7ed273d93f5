"""The producer's errors, under the shared tree of ``bruce.wire.errors``.

Rules: every error carries ``reason`` (the name that reaches counters and reports). Local misuse (bad config, bad
arguments) is a :class:`UsageError`; a broker that breaks the protocol is :class:`BrokerProtocolError` (malformed input
from a peer); a failed message surfaces as :class:`DeliveryError` with its :class:`DiscardReason`.
"""

from __future__ import annotations

from bruce.wire import BruceError, MalformedInput, UsageError

from .reasons import DiscardReason


class ConfigError(UsageError):
    """A producer setting is invalid; the message names the setting and what it accepts."""

    reason = "BAD_CONFIG"


class MessageTooLarge(UsageError):
    """``send`` refused a message whose key and value cannot fit the broker's ``message.max.bytes`` even alone
    (librdkafka's MSG_SIZE_TOO_LARGE, raised at produce time as confluent-kafka does). Nothing was queued."""

    reason = "MSG_SIZE_TOO_LARGE"


class ArgumentTypeError(UsageError, TypeError):
    """An argument of the wrong type (a bytes topic, ...): a :class:`UsageError` that is also a ``TypeError``."""


class QueueFull(BruceError):
    """``send`` refused a message because a queue limit (messages or bytes) is reached. Nothing was queued."""

    reason = "QUEUE_FULL"


class ProducerClosed(BruceError):
    """The producer is not running (not started yet, closing or closed)."""

    reason = DiscardReason.PRODUCER_CLOSED


class DeliveryError(BruceError):
    """A message was not delivered. ``reason`` is its :class:`DiscardReason`; ``topic`` names where it was going ("" for
    the producer as a whole: :meth:`Producer.ready` refused with AUTHENTICATION_FAILED)."""

    def __init__(self, reason: DiscardReason, topic: str, detail: str = "") -> None:
        what = f"message for topic {topic!r}" if topic else "messages"
        super().__init__(f"{what} not delivered: {reason}" + (f" ({detail})" if detail else ""))
        self.reason = reason
        self.topic = topic
        self.detail = detail


class BrokerProtocolError(MalformedInput):
    """A broker sent something the protocol does not allow (bad frame size, unknown correlation id, ...)."""

    reason = "PROTOCOL_ERROR"


class TransportError(BruceError):
    """A connection to a broker failed. ``reason`` is a :class:`bruce.producer.acks.Failure` name."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message, reason=reason)
