"""The bulk path: many values queued by one call (:meth:`Producer.send_many`), and the handle that reports their fates.

Rules:
- Keyless values for a known topic are held as :class:`Chunk`\\ s: a slice of the caller's values and their timestamp,
  at most a batch (``batch_num_messages`` values, ``batch_size`` bytes) each, queued ready in one partition queue
  (the compact form :mod:`bruce.producer.queues` holds like a packed batch). Their :class:`Message` objects are made
  only when the chunk is taken for a request (or expires, or is drained at close): while values wait, the garbage
  collector sees one list per chunk, not one object per value.
- Keyed values, and values for a topic not yet known, become messages at once and are routed as the daemon's
  batches are (:meth:`Producer.submit`'s path); their chunks are born unpacked.

- Each message of a chunk reports to it (its waiter, see :func:`bruce.producer.message.resolve_delivered`): counted
  per batch, not per message. Once all have a fate the chunk keeps them compactly (offsets and partitions in arrays,
  errors by index) and lets the messages go, so delivered values hold no object the collector walks.
- :class:`Bulk` is the caller's handle: awaiting it waits on one future per chunk (none per value);
  :meth:`Bulk.results` then gives each value's ``(partition, offset)`` or :class:`DeliveryError`, in order.
- Pure bookkeeping: no clock, no I/O; the only asyncio object is the future made for whoever awaits a chunk.
"""

from __future__ import annotations

import asyncio
from array import array
from bisect import bisect_right
from collections.abc import Generator, Iterator, Sequence
from itertools import accumulate, repeat
from operator import add, attrgetter
from typing import Any

from bruce.wire.recordbatch import build_value_batch

from .errors import DeliveryError
from .message import Message, resolve_delivered, resolve_failed


class Chunk:
    """Values of one ``send_many`` call queued together in one partition queue, and the group their messages report
    to. While nothing needs them one by one the values stay as they are: the queue hands the chunk whole to a request
    (when it is full, :attr:`travels_whole`, or nothing after it could join it), which encodes it column by column
    (:meth:`encode`) and settles it in one step (:meth:`settle_delivered`, :meth:`settle_failed`). Anything that
    reads it as messages (iteration, indexing, :meth:`unpack`) makes them, once; they report their fates to the chunk
    (:meth:`settled`). Settled, the fates are kept compactly (partitions and offsets in arrays, errors by index) and
    the messages let go."""

    __slots__ = (
        "_future",
        "_left",
        "_members",
        "count",
        "errors",
        "offsets",
        "partitions",
        "size",
        "tail",
        "timestamp",
        "travels_whole",
        "values",
    )

    def __init__(
        self,
        values: Sequence[bytes | None],
        size: int,
        timestamp: int | list[int],
        full: bool = False,
        tail: Message | None = None,
    ) -> None:
        self.values = values
        self.travels_whole = full  # a full batch: PartitionQueue.take hands it to a request as it is, never joined
        self.count = len(values)
        # A message that is the last value (send's newest, whose handle its caller may keep): it settles as itself.
        self.tail = tail
        self._left = self.count - (tail is not None)  # the other values without a fate
        self.size = size  # Σ value bytes
        self.timestamp = timestamp  # of every value, or one per value
        self._members: list[Message] | None = None  # the messages, once made
        self.offsets: array[int] | None = None  # once settled (-1: failed, or acks=0)
        self.partitions: array[int] | None = None
        self.errors: dict[int, DeliveryError] = {}  # once settled: index → error of the values that failed
        self._future: asyncio.Future[None] | None = None  # made for whoever awaits the chunk

    @classmethod
    def of(cls, messages: list[Message]) -> Chunk:
        """A chunk of messages made at once (keyed values, an unknown topic), which report to it."""
        chunk = cls([m.value for m in messages], sum(m.size for m in messages), 0)
        chunk._members = messages
        for m in messages:
            m._fate = chunk
        return chunk

    # ---------------------------------------------------------------- as a queued batch and a request's messages

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[Message]:
        return iter(self.unpack())

    def __getitem__(self, index: Any) -> Any:
        return self.unpack()[index]

    def unpack(self) -> list[Message]:
        """The chunk's messages, made on the first call (with their fates, if the chunk is settled already)."""
        members = self._members
        if members is None:
            stamps = self.timestamp
            values = self.values if self.tail is None else self.values[:-1]
            if type(stamps) is int:
                members = [_Member(v, stamps, self) for v in values]
            else:
                members = [_Member(v, ts, self) for v, ts in zip(values, stamps, strict=False)]  # type: ignore[arg-type]
            if self.tail is not None:
                members.append(self.tail)
            self._members = members
            if self.offsets is not None:
                for m, partition, offset in zip(members[: len(values)], self.partitions, self.offsets, strict=False):  # type: ignore[arg-type]
                    m.partition, m._fate = partition, offset
                for i, error in self.errors.items():
                    if i < len(values):
                        members[i].partition, members[i]._fate = -1, error
        return members

    def encode(self, codec: int, level: int | None) -> bytes | None:
        """The record batch of the values (keyless, at the chunk's timestamps), or None once messages were made
        (they may have changed: the caller encodes those)."""
        if self._members is not None:
            return None
        return build_value_batch(self.values, self.timestamp, codec=codec, level=level)  # type: ignore[arg-type]

    def settle_delivered(self, partition: int, base_offset: int) -> bool:
        """Delivered at consecutive offsets (-1: acks=0), in one step; False when messages were made (they settle)."""
        if self._members is not None:
            return False
        n = self.count
        self.partitions = array("i", [partition]) * n
        self.offsets = array("q", range(base_offset, base_offset + n)) if base_offset >= 0 else array("q", [-1]) * n
        if self.tail is not None:
            resolve_delivered([self.tail], partition, self.offsets[-1])
        self._done()
        return True

    def settle_failed(self, error: DeliveryError) -> bool:
        """Failed with ``error``, in one step; False when messages were made (they settle)."""
        if self._members is not None:
            return False
        n = self.count
        self.partitions = array("i", [-1]) * n
        self.offsets = array("q", [-1]) * n
        self.errors = dict.fromkeys(range(n), error)
        if self.tail is not None:
            resolve_failed([self.tail], error.reason, error.topic, error.detail)
        self._done()
        return True

    def settled(self, n: int) -> None:
        """``n`` of the chunk's messages just got their fate (from :func:`bruce.producer.message._wake`)."""
        self._left -= n
        if self._left:
            return
        if self.tail is not None:  # send's: nobody reads its fates here (each message has its own)
            self._done()
            return
        messages = self._members or []
        fates = list(map(_FATE, messages))
        if set(map(type, fates)) == {int}:
            self.offsets = array("q", fates)
        else:
            self.errors = {i: f for i, f in enumerate(fates) if type(f) is not int}
            self.offsets = array("q", (f if type(f) is int else -1 for f in fates))
        self.partitions = array("i", map(_PARTITION, messages))
        self._members = None  # let go: made again from the values if someone reads them
        self._done()

    def _done(self) -> None:
        self._left = 0
        if self._future is not None and not self._future.done():
            self._future.set_result(None)

    @property
    def done(self) -> bool:
        return self.offsets is not None

    @property
    def made(self) -> bool:
        """Whether its messages exist now (read one by one, and not yet let go)."""
        return self._members is not None

    def future(self) -> asyncio.Future[None]:
        """A future set once every value of the chunk has a fate."""
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
            if self.done:
                self._future.set_result(None)
        return self._future


_FATE = attrgetter("_fate")
_PARTITION = attrgetter("partition")


class _Member(Message):
    """A message of a chunk: a keyless value and the chunk's timestamp, reporting to the chunk."""

    __slots__ = ()

    def __init__(self, value: bytes | None, timestamp: int, chunk: Chunk) -> None:  # every field, as Message's does
        self.key = None
        self.value = value
        self.timestamp = timestamp
        self.headers = None
        self.partition_key = None
        self.pinned = False
        self.size = len(value) if value else 0
        self.attempts = 0
        self.possible_duplicate = False
        self.partition = -1
        self._fate = chunk


def split(sizes: list[int], max_count: int, max_bytes: int, overhead: int = 0) -> list[tuple[int, int]]:
    """``[start, end)`` ranges cutting values of byte sizes ``sizes`` into batches of at most ``max_count`` values and
    ``max_bytes`` bytes, each value counting ``overhead`` bytes more (a value larger than that goes alone)."""
    n = len(sizes)
    ends = list(accumulate(map(add, sizes, repeat(overhead))))
    out = []
    start = 0
    while start < n:
        end = min(n, start + max_count)
        base = ends[start - 1] if start else 0
        if ends[end - 1] - base > max_bytes:  # cut by bytes: the last end within the limit (at least one value)
            end = max(start + 1, bisect_right(ends, base + max_bytes, start, end))
        out.append((start, end))
        start = end
    return out or [(0, 0)]


class Bulk:
    """What became of the values of one ``send_many`` call. ``await bulk`` waits until every one has a fate (and
    returns the Bulk)."""

    __slots__ = ("_chunks", "count")

    def __init__(self, chunks: list[Chunk], count: int) -> None:
        self._chunks = chunks
        self.count = count  # how many values

    def __len__(self) -> int:
        return self.count

    def __await__(self) -> Generator[Any, None, Bulk]:
        for chunk in self._chunks:
            if not chunk.done:
                yield from asyncio.shield(chunk.future()).__await__()
        return self

    @property
    def done(self) -> bool:
        """Whether every value has a fate."""
        return all(chunk.done for chunk in self._chunks)

    def results(self) -> list[tuple[int, int] | DeliveryError]:
        """Each value's fate, in the order given: ``(partition, offset)`` (offset -1 with acks=0) or its
        :class:`DeliveryError`. Raises ``asyncio.InvalidStateError`` until :attr:`done`."""
        if not self.done:
            raise asyncio.InvalidStateError("not every value has a fate yet (await the Bulk first)")
        out: list[tuple[int, int] | DeliveryError] = []
        for chunk in self._chunks:
            fates: list[Any] = list(zip(chunk.partitions, chunk.offsets, strict=True))  # type: ignore[arg-type]
            for i, error in chunk.errors.items():
                fates[i] = error
            out += fates
        return out

    def failures(self) -> list[tuple[int, DeliveryError]]:
        """``(index, error)`` of every value that failed, in order (empty: all delivered). Only once :attr:`done`."""
        if not self.done:
            raise asyncio.InvalidStateError("not every value has a fate yet (await the Bulk first)")
        out = []
        start = 0
        for chunk in self._chunks:
            out += [(start + i, error) for i, error in sorted(chunk.errors.items())]
            start += chunk.count
        return out

    @property
    def delivered(self) -> int:
        """How many values are delivered (so far: counted per settled batch)."""
        return sum(len(c.offsets) - len(c.errors) for c in self._chunks if c.offsets is not None)

    def __repr__(self) -> str:
        return f"<Bulk {self.count} values, {self.delivered} delivered>"
