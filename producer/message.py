"""A message in the producer, which is also its caller's delivery handle, and the outcome sink interface.

Rules:
- A :class:`Message` has exactly one fate, set once: delivered (``partition``, ``offset``) or failed (``error``, a
  :class:`DeliveryError` whose ``reason`` is a :class:`DiscardReason`). It may carry ``possible_duplicate`` either way.
- Awaiting a message waits for its fate: it returns ``(partition, offset)`` or raises its :class:`DeliveryError`. No
  future exists until someone awaits a message that is still in flight (the hot path creates none). A message of
  ``send_many`` has its group instead (:mod:`bruce.producer.bulk`), told how many of its messages settled per batch.
- ``partition_key`` routes with PartitionKey semantics; ``pinned`` means ``partition_key`` *is* the partition (an
  explicit partition); neither ⇒ AnyPartition. ``size`` (key + value bytes) is what queue limits and Bruce's produce
  request data limit count.
- ``send``'s arguments are checked here (``check_*``), each raising :class:`UsageError` with what is wrong.
- ``timestamp`` (epoch ms) lies in [:data:`TIMESTAMP_MIN`, :data:`TIMESTAMP_MAX`], ±2**62: any two such timestamps
  fit in one record batch (whose timestamp deltas are varlongs). ``send`` refuses others; ``submit`` discards them
  as MALFORMED.
- The :class:`OutcomeSink` (implemented by the daemon) hears about every message's fate, per batch, in the event loop;
  it must not block or raise. Its ``sent`` hook is optional: the producer looks for it once, at construction.
- One message type through a producer: ``Producer[M]`` takes batches of ``M`` (a :class:`Message` or a subclass, such
  as the daemon's, that adds its own fields) and gives its sink back those same objects, typed ``M``
  (:data:`M`; ``Message`` when not said).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from bruce.wire import UsageError

from .errors import ArgumentTypeError, DeliveryError
from .reasons import DiscardReason

TIMESTAMP_MIN, TIMESTAMP_MAX = -(2**62), 2**62 - 1


class Message:
    """One message to produce. Create through ``Producer.send`` or directly for ``Producer.submit``; a subclass may
    add slots (the daemon adds its own bookkeeping)."""

    __slots__ = (
        "_fate",
        "attempts",
        "headers",
        "key",
        "partition",
        "partition_key",
        "pinned",
        "possible_duplicate",
        "size",
        "timestamp",
        "value",
    )

    def __init__(
        self,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Sequence[tuple[str, bytes | None]] | None = None,
        partition_key: int | None = None,
        pinned: bool = False,
    ) -> None:
        # Producer.send builds its messages without calling this (the call costs more than the stores): a slot
        # added here is set there too.
        self.key = key
        self.value = value
        self.timestamp = timestamp  # epoch ms: the record's CreateTime (magic 1 and 2)
        self.headers = headers
        self.partition_key = partition_key
        self.pinned = pinned
        self.size = (len(key) if key else 0) + (len(value) if value else 0)
        self.attempts = 0  # failed delivery attempts (ACK errors that resend or pause)
        self.possible_duplicate = False
        self.partition = -1  # set when delivered
        # In flight: None, the future someone awaits, or the group that reports it (send_many's). Delivered: the
        # offset (-1 with acks=0). Failed: the error.
        self._fate: asyncio.Future[None] | int | DeliveryError | Any = None

    @property
    def done(self) -> bool:
        return self.partition >= 0 or type(self._fate) is DeliveryError

    @property
    def offset(self) -> int:
        """The offset once delivered (-1 with acks=0, or while not delivered)."""
        fate = self._fate
        return fate if self.partition >= 0 and type(fate) is int else -1

    @property
    def error(self) -> DeliveryError | None:
        fate = self._fate
        return fate if type(fate) is DeliveryError else None

    def result(self) -> tuple[int, int]:
        """``(partition, offset)`` once delivered (offset -1 with acks=0); raises the :class:`DeliveryError` if it
        failed, or ``asyncio.InvalidStateError`` while in flight."""
        fate = self._fate
        if type(fate) is DeliveryError:
            raise fate
        if self.partition < 0:
            raise asyncio.InvalidStateError("message not yet delivered")
        return self.partition, fate  # type: ignore[return-value]  # done, not failed: the offset

    def __await__(self) -> Generator[Any, None, tuple[int, int]]:
        if not self.done:
            fate = self._fate
            if fate is None:
                fate = self._fate = asyncio.get_running_loop().create_future()
            elif not isinstance(fate, asyncio.Future):
                fate = fate.future()  # type: ignore[union-attr]  # a group (send_many): set once all of its messages have a fate
            yield from asyncio.shield(fate).__await__()
        return self.result()

    def __repr__(self) -> str:
        error = self.error
        state = f"error={error.reason}" if error else f"p={self.partition} o={self.offset}"
        return f"<Message {self.size} B attempts={self.attempts} {state}>"


_BYTES = (bytes, bytearray, memoryview)


def check_bytes(data: object, what: str) -> None:
    """``send``'s check of a key or value (None aside): :class:`UsageError` unless bytes-like."""
    if not isinstance(data, _BYTES):
        raise UsageError(f"{what} must be bytes, bytearray, memoryview or None, not {type(data).__name__}")


def check_topic(topic: object) -> None:
    """``send``'s check of a topic that is not a ``str``: refused at once, naming the argument (a bytes topic would
    otherwise fail later as an unknown topic)."""
    hint = " (decode it: topic names are text)" if isinstance(topic, _BYTES) else ""
    raise ArgumentTypeError(f"topic must be a str, not {type(topic).__name__}{hint}")


def check_partition(partition: object, partition_key: object) -> None:
    """``send``'s check of an explicit partition: an int ≥ 0, and no ``partition_key`` beside it."""
    if partition_key is not None:
        raise UsageError("give a partition or a partition_key, not both")
    if type(partition) is not int or partition < 0:
        raise UsageError(f"partition must be an int ≥ 0, not {partition!r}")


def check_partition_key(partition_key: object) -> None:
    """``send``'s check of a partition key: an int of 32 bits, signed or not."""
    if type(partition_key) is not int or not -(2**31) <= partition_key < 2**32:
        raise UsageError(f"partition_key must be an int of 32 bits (signed or not), not {partition_key!r}")


def check_timestamp(timestamp: object) -> None:
    """``send``'s check of a given timestamp: an int within [TIMESTAMP_MIN, TIMESTAMP_MAX]."""
    if type(timestamp) is not int or not TIMESTAMP_MIN <= timestamp <= TIMESTAMP_MAX:
        raise UsageError(f"timestamp must be an int of epoch milliseconds within ±2**62, not {timestamp!r}")


def check_headers(headers: object) -> None:
    """``send``'s check of headers: (str, bytes-like or None) pairs, each name encodable as UTF-8."""
    try:
        for name, value in headers:  # type: ignore[attr-defined]  # anything: checked here
            name.encode()
            if value is not None and not isinstance(value, _BYTES):
                raise TypeError
    except (TypeError, ValueError, AttributeError):
        raise UsageError(f"headers must be (str, bytes or None) pairs, not {headers!r}") from None


def timestamps_in_range(messages: Sequence[Message]) -> bool:
    """Whether every message's timestamp lies in [TIMESTAMP_MIN, TIMESTAMP_MAX] (see the module rules)."""
    if len(messages) == 1:
        return TIMESTAMP_MIN <= messages[0].timestamp <= TIMESTAMP_MAX
    stamps = [m.timestamp for m in messages]
    return min(stamps) >= TIMESTAMP_MIN and max(stamps) <= TIMESTAMP_MAX


def resolve_delivered(messages: Sequence[Message], partition: int, base_offset: int) -> None:
    """Mark ``messages`` delivered at consecutive offsets from ``base_offset`` (-1 stays -1: acks=0). A group in
    compact form (``send_many``'s chunk) settles in one step."""
    if type(messages) is not list and getattr(messages, "settle_delivered", _no)(partition, base_offset):
        return
    step = 1 if base_offset >= 0 else 0
    offset = base_offset
    waiters = None
    for m in messages:
        waiter = m._fate
        m.partition = partition
        m._fate = offset
        offset += step
        if waiter is not None:
            if waiters is None:
                waiters = [waiter]
            else:
                waiters.append(waiter)
    if waiters is not None:
        _wake(waiters)


def resolve_failed(messages: Sequence[Message], reason: DiscardReason, topic: str, detail: str = "") -> None:
    error = DeliveryError(reason, topic, detail)
    if type(messages) is not list and getattr(messages, "settle_failed", _no)(error):
        return
    waiters = []
    for m in messages:
        waiter = m._fate
        m._fate = error
        if waiter is not None:
            waiters.append(waiter)
    if waiters:
        _wake(waiters)


def _no(*args: object) -> bool:
    return False


def _wake(waiters: list[Any]) -> None:
    """Tell the waiters of messages that just got their fate: a future (someone awaits the message) is set; a group
    (:class:`bruce.producer.bulk.Chunk`: the values of one ``send_many``) hears how many of its messages settled."""
    if len(waiters) == 1:
        counts: Any = ((waiters[0], 1),)
    else:
        counts = ((w, waiters.count(w)) for w in set(waiters))  # a few groups at most: each counted in C
    for waiter, n in counts:
        if isinstance(waiter, asyncio.Future):
            if not waiter.done():
                waiter.set_result(None)
        else:
            waiter.settled(n)


if TYPE_CHECKING:  # a default (Message) for the type checker; Python 3.11's TypeVar has none, nor needs one
    from typing_extensions import TypeVar

    M = TypeVar("M", bound="Message", default="Message")
    M_contra = TypeVar("M_contra", bound="Message", default="Message", contravariant=True)
else:
    from typing import TypeVar

    M = TypeVar("M", bound="Message")
    M_contra = TypeVar("M_contra", bound="Message", contravariant=True)


class OutcomeSink(Protocol[M_contra]):
    """Where the producer reports each message's fate, one call per batch (the daemon's accounting), with the
    messages it was given (``M_contra``: the producer's type of message).

    ``sent`` is optional: a sink without it (or one that inherits this class's no-op) is not called per request."""

    def sent(self, topic: str, partition: int, messages: Sequence[M_contra]) -> None:
        """Optional. A produce request carrying ``messages`` was written to the broker's connection (handed to the
        socket; the kernel may still hold part of it). Called again for each resend; before ``delivered`` with
        acks=0."""

    def delivered(self, topic: str, partition: int, base_offset: int, messages: Sequence[M_contra]) -> None:
        """Acknowledged by the broker (``base_offset`` -1 when acks=0). Each message's offset is set."""

    def discarded(self, topic: str, messages: Sequence[M_contra], reason: DiscardReason) -> None:
        """Given up with ``reason``; the producer holds none of them any more."""

    def possible_duplicates(self, topic: str, messages: Sequence[M_contra]) -> None:
        """Written, then the connection failed before the ACK: they will be sent again (Bruce's DUP)."""


def sent_hook(sink: object) -> Callable[[str, int, Sequence[Message]], None] | None:
    """The sink's ``sent`` method, or None when it has none (or only :class:`OutcomeSink`'s no-op)."""
    hook = getattr(sink, "sent", None)
    if hook is None or getattr(type(sink), "sent", None) is OutcomeSink.sent:
        return None
    return hook  # type: ignore[no-any-return]  # a sink's sent method, as OutcomeSink declares it
