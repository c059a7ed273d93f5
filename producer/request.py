"""Assembling one produce request from a broker's ready partitions, and encoding it. Pure.

Rules (Bruce's produce request factory, bruce-behaviour.md §7):
- The first message is always included; more are added while Σ(key + value) ≤ the produce request data limit
  (0 ⇒ one message per request). What does not fit waits for the next request.
- One message set (record batch) per partition per request; partitions are visited round-robin from where the previous
  request stopped, so none starves.
- A compressed set may not exceed ``message_max_bytes`` counted as Σ(key + value + 26) (uncompressed); when it would,
  the set is cut there and the *whole request* closes.
- The codec comes from a policy (per topic, per set). A codec the broker cannot take (zstd below Produce v7, or on
  message sets) or one that fails is replaced by no compression, and reported so it can be counted. With a threshold
  below 100 %, the compressed set is sent only if it is at most that percentage of the plain one (else plain).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from bruce.wire.compression import Codec
from bruce.wire.messageset import build_message_set
from bruce.wire.protocol.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from bruce.wire.recordbatch import build_record_batch

from .message import Message
from .queues import PartitionQueue

LEGACY_MESSAGE_OVERHEAD = 26  # Bruce's per-message overhead of a v0 message (8+4+4+1+1+4+4)


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
    codec: Codec = Codec.NONE


def assemble(
    queues: list[PartitionQueue],
    *,
    data_limit: int,
    message_max_bytes: int,
    policy: CompressionPolicy,
) -> tuple[list[Part], dict[PartitionQueue, Compression]]:
    """Take messages from ``queues`` (ready, not busy, in visiting order) for one request."""
    parts: list[Part] = []
    chosen: dict[PartitionQueue, Compression] = {}
    remaining = data_limit
    for queue in queues:
        first = not parts
        if not first and remaining <= 0:
            break
        messages, size = queue.take(max(remaining, 0), first)
        if not messages:
            continue
        compression = policy(queue.topic, messages)
        closes = False
        if compression.codec != Codec.NONE:
            cut, total = 0, 0
            for m in messages:
                total += m.size + LEGACY_MESSAGE_OVERHEAD
                if total > message_max_bytes and (cut or not first):
                    closes = True
                    break
                cut += 1
            if closes:
                if cut == 0:
                    queue.push_front(messages)
                    break
                queue.push_front(messages[cut:])
                messages = messages[:cut]
                size = sum(m.size for m in messages)
        parts.append(Part(queue, messages, size))
        chosen[queue] = compression
        remaining -= size
        if closes:
            break
    return parts, chosen


def encode_records(
    messages: Sequence[Message], compression: Compression, *, magic: int, zstd: bool
) -> tuple[bytes, Codec, str]:
    """The records bytes of one part, the codec used, and what happened to the requested codec ("" = as asked,
    "Unsupported", "Error" or "NotCompressible", for counters)."""
    codec = compression.codec
    note = ""
    if codec == Codec.ZSTD and (magic < 2 or not zstd):
        codec, note = Codec.NONE, "Unsupported"
    if codec != Codec.NONE:
        try:
            data = _build(messages, codec, compression.level, magic)
        except Exception:  # any codec failure: send plain and count it (Bruce §7)
            codec, note = Codec.NONE, "Error"
        else:
            if compression.threshold_percent >= 100:
                return data, codec, note
            plain = _build(messages, Codec.NONE, None, magic)
            if len(data) * 100 <= len(plain) * compression.threshold_percent:
                return data, codec, note
            return plain, Codec.NONE, "NotCompressible"
    return _build(messages, Codec.NONE, None, magic), Codec.NONE, note


def build_request(parts: Sequence[Part], encoded: Sequence[bytes], *, acks: int, timeout_ms: int) -> ProduceRequest:
    """The Produce request for ``parts`` (grouped by topic, in order) with their encoded records."""
    topics: dict[str, list[PartitionProduceData]] = {}
    for part, records in zip(parts, encoded, strict=True):
        topics.setdefault(part.queue.topic, []).append(PartitionProduceData(part.queue.partition, records))
    data = tuple(TopicProduceData(name, tuple(ps)) for name, ps in topics.items())
    return ProduceRequest(topic_data=data, acks=acks, timeout_ms=timeout_ms)


def _build(messages: Sequence[Message], codec: Codec, level: int | None, magic: int) -> bytes:
    if magic == 2:
        return build_record_batch(_Records(messages), codec=codec, compression_level=level)
    return build_message_set(_Records(messages), magic=magic, codec=codec, empty_as_null=True)


class _Records:
    """``messages`` seen as the encoders' ``(key, value, timestamp, headers)`` tuples, made one at a time as they are
    read (no list of tuples to build and collect)."""

    __slots__ = ("_messages",)

    def __init__(self, messages: Sequence[Message]) -> None:
        self._messages = messages

    def __len__(self) -> int:
        return len(self._messages)

    def __getitem__(self, index: int) -> tuple:
        m = self._messages[index]
        return m.key, m.value, m.timestamp, m.headers

    def __iter__(self) -> Iterator[tuple]:
        return ((m.key, m.value, m.timestamp, m.headers) for m in self._messages)
