"""The producer's errors, under the shared tree of ``bruce.wire.errors``.

Rules: every error carries ``reason`` (the name that reaches counters and reports). Local misuse (bad config, bad
arguments) is a :class:`UsageError`; a broker that breaks the protocol is :class:`BrokerProtocolError` (malformed input
from a peer); a failed message surfaces as :class:`DeliveryError` with its :class:`DiscardReason`.
"""

from __future__ import annotations

import re

from bruce.wire import BruceError, MalformedInput, UsageError

from .reasons import DiscardReason


class ConfigError(UsageError):
    """A setting refused: a producer setting (the message names it and what it accepts), or the daemon's command line
    or config file. The message is one line a person can act on: where — ``source`` (the file) and ``line``, then
    ``where`` (an element path such as ``batching/namedConfigs/config[name="low_latency"]/time``, or an option such as
    ``--required_acks``) —, then ``problem``; control characters are written ``\\uXXXX``. ``path``: the
    format-neutral location (section and key names, list indexes) of a problem found in a configuration's values,
    which the daemon's file loaders name in their own syntax (:meth:`located`)."""

    reason = "BAD_CONFIG"

    def __init__(
        self,
        problem: str,
        *,
        source: str | None = None,
        where: str | None = None,
        line: int | None = None,
        path: tuple[str | int, ...] | None = None,
    ) -> None:
        self.problem = problem
        self.source = source
        self.where = where
        self.line = line
        self.path = path
        super().__init__(_compose(problem, source, where, line))

    def located(self, *, source: str | None, where: str | None, line: int | None = None) -> ConfigError:
        """The same problem, placed in a file (the daemon's loaders call this on problems found by its model's
        checks)."""
        return ConfigError(self.problem, source=source, where=where, line=line, path=self.path)


def _compose(problem: str, source: str | None, where: str | None, line: int | None) -> str:
    place = ""
    if source is not None:
        place = source if line is None else f"{source}, line {line}"
    elif line is not None:
        place = f"line {line}"
    if where:
        place = f"{place}: {where}" if place else where
    message = f"{place}: {problem}" if place else problem
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04X}", message)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


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
