"""The one decision point for delivery failures: (error code | transport failure, protocol generation) → action.

Rules:
- :func:`classify` is pure and total: every int and every :class:`Failure` maps to exactly one :class:`Decision`.
- The legacy path (Kafka 0.8 protocol: no ApiVersions, or ``protocol="v0"``) follows Bruce's table exactly
  (docs/bruce-compatibility.md#error-acks): 2 → resend at once on the same broker; 3, 5, 6, 7 → pause; every other
  non-zero code → discard with KAFKA_ERROR_ACK.
- The modern path follows each code's meaning in Kafka's table: invalid metadata (stale leader, unknown partition, ...)
  → pause; other retriable codes → resend after a backoff; anything else, and codes we do not know → discard.
- Resend and pause caused by an ACK count as a failed attempt for each message; transport failures do not, but the
  messages that were written and not acknowledged become possible duplicates.
- The idempotent path (``idempotent=True``, modern path only; bruce.producer.idempotence.sequencer uses it) is the
  modern table with the idempotent producer's codes (KIP-98): DUPLICATE_SEQUENCE_NUMBER is success (the batch was
  stored by an earlier send); OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID, INVALID_PRODUCER_EPOCH and
  PRODUCER_FENCED are :attr:`Action.SEQUENCE`, which
  :meth:`bruce.producer.idempotence.sequence_state.Idempotence.on_answer` turns into resend, pause or discard from the
  partition's sequence state; transport failures are no possible duplicates (a resend keeps its sequence, so the
  broker drops a copy it already holds).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, StrEnum
from functools import cache

from bruce.wire import errorcodes

from .reasons import DiscardReason


class Action(Enum):
    OK = "ok"
    RESEND = "resend"
    DISCARD = "discard"
    PAUSE = "pause"
    SEQUENCE = "sequence"  # idempotent path: the partition's sequence state decides (bruce.producer.idempotence)


class Failure(StrEnum):
    """Transport failures (Bruce's other pause triggers, docs/bruce-compatibility.md#error-acks). The value is the
    counter suffix."""

    CONNECT_FAIL = "ConnectFail"
    SOCKET_ERROR = "SocketError"
    BROKER_CLOSE = "SocketBrokerClose"
    SOCKET_TIMEOUT = "SocketTimeout"
    REQUEST_TIMEOUT = "RequestTimeout"
    PROTOCOL_ERROR = "ProtocolError"  # unparseable response, correlation mismatch, unexpected topic/partition
    AUTHENTICATION = "AuthenticationFailed"  # SASL refused, or the broker's TLS certificate refused


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    counts_attempt: bool = False  # the messages' failed-attempt count goes up
    reason: DiscardReason | None = None  # set for DISCARD
    name: str = ""  # error name for counters and logs
    idempotent: bool = False  # decided on the idempotent path

    @property
    def possible_duplicate(self) -> bool:
        """Written but unacknowledged messages may have been stored: true for transport failures, unless the producer
        is idempotent (its resend carries the same sequence numbers, which the broker deduplicates)."""
        return self.action is Action.PAUSE and not self.counts_attempt and not self.idempotent


OK = Decision(Action.OK, name="NONE")
_LEGACY_RESEND = frozenset({2})
_LEGACY_PAUSE = frozenset({3, 5, 6, 7})
DUPLICATE_SEQUENCE_NUMBER = 46
# OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, UNKNOWN_PRODUCER_ID, PRODUCER_FENCED
SEQUENCE_ERRORS = frozenset({45, 47, 59, 90})


@cache
def classify(outcome: int | Failure, legacy: bool, idempotent: bool = False) -> Decision:
    """The action for one partition's ACK error code, or for a transport failure of a whole request. ``idempotent``
    selects the idempotent producer's table (ignored on the legacy path, which cannot be idempotent)."""
    idempotent = idempotent and not legacy
    if isinstance(outcome, Failure):
        return Decision(Action.PAUSE, name=outcome.value, idempotent=idempotent)
    if outcome == 0:
        return OK
    known = errorcodes.BY_CODE.get(outcome)
    name = known.name if known is not None else f"UNDOCUMENTED_{outcome}"
    if idempotent and outcome == DUPLICATE_SEQUENCE_NUMBER:
        return Decision(Action.OK, name=name, idempotent=True)
    if idempotent and outcome in SEQUENCE_ERRORS:
        return Decision(Action.SEQUENCE, name=name, idempotent=True)
    if legacy:
        if outcome in _LEGACY_RESEND:
            return Decision(Action.RESEND, counts_attempt=True, name=name)
        if outcome in _LEGACY_PAUSE:
            return Decision(Action.PAUSE, counts_attempt=True, name=name)
    elif known is not None and known.invalid_metadata:
        return Decision(Action.PAUSE, counts_attempt=True, name=name, idempotent=idempotent)
    elif known is not None and known.retriable:
        return Decision(Action.RESEND, counts_attempt=True, name=name, idempotent=idempotent)
    return Decision(Action.DISCARD, reason=DiscardReason.KAFKA_ERROR_ACK, name=name, idempotent=idempotent)
