"""The delivery handle ``send`` returns for a message held in a batch of columns (:class:`Handle`).

Rules:
- ``send`` keeps a keyless message without headers or partition as a value and a timestamp appended to its partition's
  open batch, a :class:`~bruce.producer.bulk.Chunk` being filled; the handle is the batch and the message's index in
  it. No other object exists per message: a caller that drops the handle leaves nothing behind for the garbage
  collector to walk while the batch fills and waits.
- A handle reads as the :class:`~bruce.producer.message.Message` it stands for (the same attributes, ``result()``,
  ``await``): from the batch's columns and its fates (settled in one step), or, once something read the batch one
  message at a time (a resend, a discard, a sink), from the message made for it, which the batch then keeps.
- Read-only: the producer owns the batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

from .bulk import Chunk
from .errors import DeliveryError
from .message import Message


class Handle:
    """One message of ``send`` kept in its batch's columns: its delivery handle (``await`` it for ``(partition,
    offset)``), read as a :class:`~bruce.producer.message.Message`."""

    __slots__ = ("_chunk", "_index")

    _chunk: Chunk
    _index: int

    key = None
    headers = None
    partition_key = None
    pinned = False

    def _message(self) -> Message | None:
        members = self._chunk.members
        return members[self._index] if members is not None else None

    @property
    def value(self) -> bytes | None:
        return self._chunk.values[self._index]

    @property
    def timestamp(self) -> int:
        stamps = self._chunk.timestamp
        return stamps if isinstance(stamps, int) else stamps[self._index]

    @property
    def size(self) -> int:
        value = self.value
        return len(value) if value else 0

    @property
    def attempts(self) -> int:
        m = self._message()
        return m.attempts if m is not None else 0

    @property
    def possible_duplicate(self) -> bool:
        m = self._message()
        return m.possible_duplicate if m is not None else False

    @property
    def partition(self) -> int:
        """The partition once delivered, else -1."""
        m = self._message()
        if m is not None:
            return m.partition
        partitions = self._chunk.partitions
        return partitions[self._index] if partitions is not None else -1

    @property
    def offset(self) -> int:
        """The offset once delivered (-1 with acks=0, or while not delivered)."""
        m = self._message()
        if m is not None:
            return m.offset
        chunk = self._chunk
        if chunk.offsets is None or self._index in chunk.errors:
            return -1
        return chunk.offsets[self._index]

    @property
    def error(self) -> DeliveryError | None:
        m = self._message()
        return m.error if m is not None else self._chunk.errors.get(self._index)

    @property
    def done(self) -> bool:
        m = self._message()
        return m.done if m is not None else self._chunk.offsets is not None

    def result(self) -> tuple[int, int]:
        """``(partition, offset)`` once delivered (offset -1 with acks=0); raises the :class:`DeliveryError` if it
        failed, or ``asyncio.InvalidStateError`` while in flight."""
        m = self._message()
        if m is not None:
            return m.result()
        error = self.error
        if error is not None:
            raise error
        if not self.done:
            raise asyncio.InvalidStateError("message not yet delivered")
        return self.partition, self.offset

    def __await__(self) -> Generator[Any, None, tuple[int, int]]:
        if not self.done:
            m = self._message()
            if m is not None:
                return (yield from m.__await__())
            yield from asyncio.shield(self._chunk.future()).__await__()
        return self.result()

    def __repr__(self) -> str:
        error = self.error
        state = f"error={error.reason}" if error else f"p={self.partition} o={self.offset}"
        return f"<Message {self.size} B attempts={self.attempts} {state}>"


def handle(chunk: Chunk, index: int) -> Handle:
    """The handle of ``chunk``'s value at ``index`` (``send``'s hot path builds it inline, the same way)."""
    h = object.__new__(Handle)
    h._chunk = chunk
    h._index = index
    return h
