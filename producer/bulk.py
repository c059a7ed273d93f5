"""Batches held as values (:class:`Chunk`) — ``send_many``'s, and ``send``'s keyless messages without headers — and
``send_many``'s handle (:class:`Bulk`).

Rules:
- A chunk is a batch's values (the caller's, sliced) and timestamps (one, or one per value), keyless and without
  headers, queued ready in one partition queue like a packed batch (:mod:`bruce.producer.queues.partition_queue`). While
  it waits the garbage collector sees a few lists, not one object per value.
- ``send_many`` cuts its keyless values into chunks of at most ``batch_num_messages`` values whose bytes fit
  ``batch_size``, the request data limit and one record batch (estimated as assembly does); keyed values, and values
  for a topic not yet known, become messages at once and are routed as ``submit`` routes (their chunk is made of
  those messages). ``send`` fills an open chunk (:meth:`Chunk.opened`, one value and timestamp appended per message,
  :mod:`bruce.producer.handle` points into it) until :meth:`Chunk.sealed`; once its messages are made, such a chunk
  keeps them after they settle (its handles read them).
- A full chunk (or one with nothing after it to join) goes to a request whole: encoded column by column
  (:func:`bruce.wire.recordbatch.build_value_batch`) and settled in one step (partitions in an array, offsets as a
  range).
  Anything that reads it one message at a time (a resend, a discard's sizes, a sink, assembly cutting it) makes its
  messages, once; each reports to the chunk as its waiter (:func:`bruce.producer.message.resolve_delivered`), counted
  per batch; once all have a fate the chunk keeps them in the arrays and lets the messages go.
- :class:`Bulk`: awaiting it waits on one future per chunk (none per value); :meth:`Bulk.results` then gives each
  value's ``(partition, offset)`` or :class:`DeliveryError`, in order.
- Pure bookkeeping: no clock, no I/O; the only asyncio object is the future made for whoever awaits a chunk.
"""

from __future__ import annotations

import asyncio
from array import array
from bisect import bisect_right
from collections.abc import Callable, Generator, Iterator, Sequence
from itertools import accumulate
from operator import attrgetter
from typing import Any

from bruce.wire import UsageError, build_value_batch

from .dispatch import Dispatcher
from .errors import DeliveryError
from .message import Message, check_bytes
from .metadata import Topic, explicit_partition, key_to_partition_key
from .queues import RECORD_OVERHEAD, PartitionQueue
from .reasons import DiscardReason


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
        "count",
        "errors",
        "keeps",
        "members",
        "offsets",
        "partitions",
        "size",
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
    ) -> None:
        self.values = values
        self.travels_whole = full  # a full batch: PartitionQueue.take hands it to a request as it is, never joined
        self.count = len(values)
        self._left = self.count  # the values without a fate
        self.size = size  # Σ value bytes
        self.timestamp = timestamp  # of every value, or one per value
        self.members: list[Message] | None = None  # the messages, once made
        self.keeps = False  # send's: the messages, once made, stay (its handles read them)
        self.offsets: Sequence[int] | None = None  # once settled (-1: failed, or acks=0); consecutive: a range
        self.partitions: array[int] | None = None
        self.errors: dict[int, DeliveryError] = {}  # once settled: index → error of the values that failed
        self._future: asyncio.Future[None] | None = None  # made for whoever awaits the chunk

    @classmethod
    def of(cls, messages: list[Message]) -> Chunk:
        """A chunk of messages made at once (keyed values, an unknown topic), which report to it."""
        chunk = cls([m.value for m in messages], sum(m.size for m in messages), 0)
        chunk.members = messages
        for m in messages:
            m._fate = chunk
        return chunk

    @classmethod
    def opened(cls, value: bytes | None, timestamp: int) -> Chunk:
        """``send``'s open batch, with its first value: ``send`` appends to :attr:`values` and :attr:`timestamp` (a
        list) until :meth:`sealed`."""
        chunk = cls([value], 0, [timestamp])
        chunk.keeps = True
        return chunk

    def sealed(self, size: int) -> None:
        """No more values (``size``: their bytes): the open batch is ready (:meth:`PartitionQueue.seal
        <bruce.producer.queues.partition_queue.PartitionQueue.seal>`)."""
        if self.members is None:
            self.count = self._left = len(self.values)
        self.size = size

    # ---------------------------------------------------------------- as a queued batch and a request's messages

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.unpack())

    def __getitem__(self, index: Any) -> Any:
        return self.unpack()[index]

    def unpack(self) -> list[Message]:
        """The chunk's messages, made on the first call (with their fates, if the chunk is settled already)."""
        members = self.members
        if members is None:
            members = self.members = self._make_members()
            if self.offsets is not None:
                for m, partition, offset in zip(members, self.partitions, self.offsets, strict=False):  # type: ignore[arg-type]  # settled
                    m.partition, m._fate = partition, offset
                for i, error in self.errors.items():
                    members[i].partition, members[i]._fate = -1, error
            else:
                self.count = self._left = len(members)  # an open batch read as messages (send's) stops growing
        return members

    def _make_members(self) -> list[Message]:
        """The values as messages reporting to the chunk (a subclass may hold its values otherwise)."""
        stamps = self.timestamp
        values = self.values
        if type(stamps) is int:
            return [_Member(v, stamps, self) for v in values]
        return [_Member(v, ts, self) for v, ts in zip(values, stamps, strict=False)]  # type: ignore[arg-type]  # not an int

    def encode(self, codec: int, level: int | None) -> bytes | None:
        """The record batch of the values (keyless, at the chunk's timestamps), or None once messages were made
        (they may have changed: the caller encodes those)."""
        if self.members is not None:
            return None
        return build_value_batch(self.values, self.timestamp, codec=codec, level=level)

    def settle_delivered(self, partition: int, base_offset: int) -> bool:
        """Delivered at consecutive offsets (-1: acks=0), in one step; False when messages were made (they settle)."""
        if self.members is not None:
            return False
        n = self.count
        self.partitions = array("i", [partition]) * n
        self.offsets = range(base_offset, base_offset + n) if base_offset >= 0 else array("q", [-1]) * n
        self._done()
        return True

    def settle_failed(self, error: DeliveryError) -> bool:
        """Failed with ``error``, in one step; False when messages were made (they settle)."""
        if self.members is not None:
            return False
        n = self.count
        self.partitions = array("i", [-1]) * n
        self.offsets = array("q", [-1]) * n
        self.errors = dict.fromkeys(range(n), error)
        self._done()
        return True

    def settled(self, n: int) -> None:
        """``n`` of the chunk's messages just got their fate (from :func:`bruce.producer.message._wake`)."""
        self._left -= n
        if self._left:
            return
        if self.keeps:  # send's: its handles read the messages' fates
            self._done()
            return
        messages = self.members or []
        fates = list(map(_FATE, messages))
        if set(map(type, fates)) == {int}:
            self.offsets = array("q", fates)
        else:
            self.errors = {i: f for i, f in enumerate(fates) if type(f) is not int}
            self.offsets = array("q", (f if type(f) is int else -1 for f in fates))
        self.partitions = array("i", map(_PARTITION, messages))
        self.members = None  # let go: made again from the values if someone reads them
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
        return self.members is not None

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
    return split_ends(list(accumulate(sizes)), 0, len(sizes), max_count, max_bytes, overhead) or [(0, 0)]


def split_ends(
    ends: Sequence[int], start: int, stop: int, max_count: int, max_bytes: int, overhead: int = 0
) -> list[tuple[int, int]]:
    """:func:`split` of values ``[start, stop)`` given ``ends``, the running sum of the sizes (``ends[i]``: the bytes of
    values ``0..i``): no pass over the values, a binary search per cut by bytes."""

    def end_of(i: int) -> int:  # the bytes up to value i included, overheads counted
        return ends[i] + overhead * (i + 1)

    out = []
    while start < stop:
        end = min(stop, start + max_count)
        base = end_of(start - 1) if start else 0
        if end_of(end - 1) - base > max_bytes:  # cut by bytes: the last end within the limit (at least one value)
            end = max(start + 1, bisect_right(range(end), base + max_bytes, start, end, key=end_of))
        out.append((start, end))
        start = end
    return out


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
            fates: list[Any] = list(zip(chunk.partitions, chunk.offsets, strict=True))  # type: ignore[arg-type]  # settled
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


_VALUE_TYPES = {bytes, type(None)}


def measure(values: Sequence[bytes | None], keys: Sequence[bytes | None] | None) -> tuple[list[int], int]:
    """``send_many``'s check of its values and keys: each value's size, and Σ key + value. :class:`UsageError` for a
    value or key that is not bytes-like, or ``keys`` not as many as ``values``."""
    types = set(map(type, values))
    if not types <= _VALUE_TYPES:
        for v in values:
            if v is not None:
                check_bytes(v, "value")
    sizes = (
        list(map(len, values))  # type: ignore[arg-type]  # no None among them: `types`
        if type(None) not in types
        else [len(v) if v else 0 for v in values]
    )
    size = sum(sizes)
    if keys is not None:
        if len(keys) != len(values):
            raise UsageError(f"{len(keys)} keys for {len(values)} values")
        for k in keys:
            if k is not None and type(k) is not bytes:
                check_bytes(k, "key")
        size += sum(len(k) for k in keys if k)
    return sizes, size


def messages_of(
    values: Sequence[bytes | None],
    keys: Sequence[bytes | None] | None,
    timestamp: int,
    partition: int | None,
    partitioner: str,
) -> list[Message]:
    """``send_many``'s values as messages, routed as ``send`` routes: to ``partition``, else by key, else any."""
    if partition is not None:
        keys = keys if keys is not None else [None] * len(values)
        return [Message(k, v, timestamp, None, partition, True) for k, v in zip(keys, values, strict=True)]
    if keys is None:
        return [Message(None, v, timestamp) for v in values]
    return [
        Message(k, v, timestamp, None, key_to_partition_key(k, partitioner)) for k, v in zip(keys, values, strict=True)
    ]


def queue_chunks(
    d: Dispatcher,
    topic: str,
    info: Topic,
    values: Sequence[bytes | None],
    sizes: list[int],
    timestamp: int,
    partition: int | None,
    max_count: int,
    max_bytes: int,
    seal: Callable[[PartitionQueue], None],
) -> list[Chunk]:
    """Queue ``send_many``'s keyless values of a known topic (already admitted: counted as held) as chunks of at most
    ``max_count`` values and ``max_bytes`` bytes (with :data:`RECORD_OVERHEAD` each), ready at once: each to the next
    partition of the topic's cycle, or all to ``partition``; a chunk no partition can take is discarded
    (NO_AVAILABLE_PARTITIONS)."""
    count = len(values)
    chunks = []
    for start, end in split(sizes, max_count, max_bytes, RECORD_OVERHEAD):
        full = end < count or end - start >= max_count  # cut by the limits
        chunk = Chunk(values[start:end], sum(sizes[start:end]), timestamp, full)
        chunks.append(chunk)
        p = d.cycle.next(info) if partition is None else explicit_partition(partition, info)
        detail = f"partition {partition} unavailable" if partition is not None else "no partition available"
        place(d, topic, chunk, p, seal, detail)
    return chunks


def place(
    d: Dispatcher, topic: str, chunk: Chunk, partition: int | None, seal: Callable[[PartitionQueue], None], detail: str
) -> None:
    """Queue ``chunk`` (admitted) ready in ``partition``'s queue, after what ``send`` left open there (sealed by
    ``seal``); with no partition (None) it is discarded as NO_AVAILABLE_PARTITIONS (``detail``)."""
    if partition is None:
        d.ledger.discard(topic, chunk.unpack(), DiscardReason.NO_AVAILABLE_PARTITIONS, detail)
        return
    pq = d.queue(topic, partition)
    seal(pq)  # what send() queued there before goes first (the producer's seal: it keeps its own marks)
    pq.add_ready(chunk, chunk.size, d.stamp)  # type: ignore[arg-type]  # a Chunk: a list of messages to the queue
    d.mark_ready(pq)
