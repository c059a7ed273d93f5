"""Assembling one produce request from a broker's ready partitions, and encoding it. Pure.

Rules (Bruce's produce requests, docs/bruce-compatibility.md#produce-requests):
- The first message is always included; more are added while Σ(key + value) ≤ the produce request data limit
  (0 ⇒ one message per request). What does not fit waits for the next request.
- One message set (record batch) per partition per request; partitions are visited round-robin from where the previous
  request stopped, so none starves.
- Message sets (magic 0/1, Bruce's rule): a compressed set may not exceed ``message_max_bytes`` counted as
  Σ(key + value + 26) (uncompressed); when it would, the set is cut there and the *whole request* closes.
- Record batches (magic 2): the broker checks each batch's size, as sent, against its ``message.max.bytes`` whether
  it is compressed or not (the whole batch is one "message"). Assembly cuts a partition's messages where the batch's
  estimated size before compression (header + Σ(key + value + :data:`RECORD_OVERHEAD`)) would exceed
  ``message_max_bytes``; encoding checks the real size and, in the rare case it is still over, encodes fewer
  messages. Messages cut off go back to the front of their queue for the next request; the request goes on with the
  other partitions. A message too large for any batch still goes alone (the broker decides).
- ``empty_as_null``: an empty key or value is written as null (length -1), Bruce's rule, in every format.
- The codec comes from a policy (per topic, per set). A codec the broker cannot take (zstd below Produce v7, or on
  message sets) or one that fails is replaced by no compression, and reported so it can be counted. With a threshold
  below 100 %, the compressed set is sent only if it is at most that percentage of the plain one (else plain).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from bruce.wire import (
    MESSAGE_OVERHEAD,
    Codec,
    PartitionProduceData,
    ProduceRequest,
    RecordInput,
    TopicProduceData,
    build_message_set_columns,
    build_record_batch,
    build_record_batch_columns,
)
from bruce.wire import RECORD_BATCH_HEADER_SIZE as HEADER_SIZE

from ..message import Message
from .partition_queue import PartitionQueue

LEGACY_MESSAGE_OVERHEAD = MESSAGE_OVERHEAD[0]  # Bruce's per-message overhead of a v0 message (8+4+4+1+1+4+4)
ALONE_OVERHEAD = HEADER_SIZE + 19  # a record alone in its batch: the header and the record's varints at their largest
RECORD_OVERHEAD = 12  # what a record typically adds to its key and value in a batch (length, deltas, lengths)


@dataclass(frozen=True, slots=True)
class Compression:
    codec: Codec = Codec.NONE
    level: int | None = None
    threshold_percent: int = 100  # send compressed only if ≤ this % of the plain size


NO_COMPRESSION = Compression()
CompressionPolicy = Callable[[str, Sequence[Message]], Compression]


@dataclass(slots=True)
class Part:
    """One partition's messages in a request, and the codec they were finally encoded with."""

    queue: PartitionQueue
    messages: list[Message]
    size: int
    since: float = 0.0  # when the messages were queued (the newest time among them: see partition_queue)
    codec: Codec = Codec.NONE
    # The idempotent path (bruce.producer.idempotence.sequencer): the part's Batch, its bytes as encoded and the
    # producer id, epoch and base sequence stamped in them; a resend sends the same part again
    batch: Any = None
    data: bytes = b""
    identity: tuple[int, int, int] = (-1, -1, -1)
    journal_id: int = -1  # its id in the batch journal (bruce.producer.idempotence.journal), once journaled


def assemble(
    queues: list[PartitionQueue],
    *,
    data_limit: int,
    message_max_bytes: int,
    policy: CompressionPolicy,
    magic: int,
    empty: bool = True,
) -> tuple[list[Part], dict[PartitionQueue, Compression]]:
    """Take messages from ``queues`` (ready, not busy, in visiting order) for one request in message format
    ``magic``; ``empty``: the request holds nothing yet (its first message always goes)."""
    parts: list[Part] = []
    chosen: dict[PartitionQueue, Compression] = {}
    remaining = data_limit
    for queue in queues:
        first = empty and not parts
        if not first and remaining <= 0:
            break
        messages, size, since = queue.take(max(remaining, 0), first)
        if not messages:
            continue
        if magic == 2:
            estimate = HEADER_SIZE + size + RECORD_OVERHEAD * len(messages)
            if estimate > message_max_bytes and len(messages) > 1:
                keep = max(1, len(messages) * (message_max_bytes - HEADER_SIZE) // (estimate - HEADER_SIZE))
                rest = messages[keep:]
                queue.push_front(rest, since)
                messages = messages[:keep]
                size -= sum(m.size for m in rest)
        compression = policy(queue.topic, messages)
        closes = False
        if compression.codec != Codec.NONE and magic < 2:
            cut, total = 0, 0
            for m in messages:
                total += m.size + LEGACY_MESSAGE_OVERHEAD
                if total > message_max_bytes and (cut or not first):
                    closes = True
                    break
                cut += 1
            if closes:
                if cut == 0:
                    queue.push_front(messages, since)
                    break
                queue.push_front(messages[cut:], since)
                messages = messages[:cut]
                size = sum(m.size for m in messages)
        parts.append(Part(queue, messages, size, since))
        chosen[queue] = compression
        remaining -= size
        if closes:
            break
    return parts, chosen


def encode_records(
    messages: Sequence[Message], compression: Compression, *, magic: int, zstd: bool, empty_as_null: bool = False
) -> tuple[bytes, Codec, str]:
    """The records bytes of ``messages``, the codec used, and what happened to the requested codec ("" = as asked,
    "Unsupported", "Error" or "NotCompressible", for counters)."""
    codec = compression.codec
    note = ""
    if codec == Codec.ZSTD and (magic < 2 or not zstd):
        codec, note = Codec.NONE, "Unsupported"
    if codec != Codec.NONE:
        try:
            data = _build(messages, codec, compression.level, magic, empty_as_null)
        except Exception:  # any codec failure: send plain and count it (docs/bruce-compatibility.md#compression)
            codec, note = Codec.NONE, "Error"
        else:
            if compression.threshold_percent >= 100:
                return data, codec, note
            plain = _build(messages, Codec.NONE, None, magic, empty_as_null)
            if len(data) * 100 <= len(plain) * compression.threshold_percent:
                return data, codec, note
            return plain, Codec.NONE, "NotCompressible"
    return _build(messages, Codec.NONE, None, magic, empty_as_null), Codec.NONE, note


def encode_part(
    part: Part, compression: Compression, *, magic: int, zstd: bool, max_bytes: int, empty_as_null: bool
) -> tuple[bytes, str]:
    """Encode one part's records (:func:`encode_records`), setting its codec; returns the bytes and the codec note.

    A record batch larger than ``max_bytes`` as encoded (what the broker checks) is encoded again with fewer messages
    — first in proportion, then halving, so it ends — unless it holds one message; the messages left out go back to
    the front of the part's queue. Assembly's estimate makes this rare."""
    messages = part.messages
    shrink = len(messages) - 1  # the most the next attempt may keep
    while True:
        data, part.codec, note = encode_records(
            messages, compression, magic=magic, zstd=zstd, empty_as_null=empty_as_null
        )
        if magic < 2 or len(data) <= max_bytes or len(messages) == 1:
            break
        in_proportion = len(messages) * (max_bytes - HEADER_SIZE) // (len(data) - HEADER_SIZE)
        messages = messages[: max(1, min(in_proportion, shrink))]
        shrink = len(messages) // 2
    if len(messages) < len(part.messages):
        rest = part.messages[len(messages) :]
        part.messages = messages
        part.size -= sum(m.size for m in rest)
        part.queue.push_front(rest, part.since)
    return data, note


def build_request(
    parts: Sequence[Part], encoded: Sequence[bytes], *, acks: int, timeout_ms: int, transactional_id: str | None = None
) -> ProduceRequest:
    """The Produce request for ``parts`` (grouped by topic, in order) with their encoded records (a transactional
    producer's carries its transactional id: the broker ties the batches to the transaction by it)."""
    topics: dict[str, list[PartitionProduceData]] = {}
    for part, records in zip(parts, encoded, strict=True):
        topics.setdefault(part.queue.topic, []).append(PartitionProduceData(part.queue.partition, records))
    data = tuple(TopicProduceData(name, tuple(ps)) for name, ps in topics.items())
    return ProduceRequest(topic_data=data, acks=acks, timeout_ms=timeout_ms, transactional_id=transactional_id)


def _build(messages: Sequence[Message], codec: Codec, level: int | None, magic: int, empty: bool) -> bytes:
    if magic == 2:
        encode = getattr(messages, "encode", None) if type(messages) is not list and not empty else None
        data = encode(codec, level) if encode is not None else None  # send_many's values, column by column
        if data is not None:
            return data  # type: ignore[no-any-return]  # a Bulk's encode: bytes
        if any([m.headers for m in messages]):  # a list, not a map of attrgetter: half the time
            return build_record_batch(_Records(messages, empty), codec=codec, compression_level=level)  # type: ignore[arg-type]  # see _Records
    keys = [m.key for m in messages]  # columns: no tuple per message
    values = [m.value for m in messages]
    if magic == 2:
        timestamps = [m.timestamp for m in messages]
        return build_record_batch_columns(
            keys, values, timestamps, codec=codec, compression_level=level, empty_as_null=empty
        )
    stamps = [m.timestamp for m in messages] if magic else None
    return build_message_set_columns(keys, values, stamps, magic=magic, codec=codec, empty_as_null=empty)


class _Records:
    """``messages`` seen as the encoders' ``(key, value, timestamp, headers)`` tuples, made one by one as the encoder
    iterates (a generator: faster per message than a ``zip`` of four ``attrgetter`` maps); with
    ``empty_as_null`` an empty key or value reads as None. A sequence, though no ``Sequence`` subclass (hence the
    encoders' ignores)."""

    __slots__ = ("_empty_as_null", "_messages")

    def __init__(self, messages: Sequence[Message], empty_as_null: bool) -> None:
        self._messages = messages
        self._empty_as_null = empty_as_null

    def __len__(self) -> int:
        return len(self._messages)

    def __getitem__(self, index: int) -> RecordInput:
        m = self._messages[index]
        if self._empty_as_null:
            return m.key or None, m.value or None, m.timestamp, m.headers
        return m.key, m.value, m.timestamp, m.headers

    def __iter__(self) -> Iterator[RecordInput]:
        ms = self._messages
        if self._empty_as_null:
            return ((m.key or None, m.value or None, m.timestamp, m.headers) for m in ms)
        return ((m.key, m.value, m.timestamp, m.headers) for m in ms)
