"""Bruce's per-topic compression rules (docs/bruce-compatibility.md#compression), as the producer's compression policy
hook.

Rules:
- Each topic's codec and ``min_size`` come from ``Config.compression_for`` (its own entry, else the default). A
  message set is compressed only when Σ(key + value + 26) over its messages ≥ ``min_size`` (26: Bruce's per-message
  overhead, whatever format the set is written in); else it goes plain.
- The producer then applies the rest, per set, and counts each outcome (``MsgSetCompressionYes`` / ``No`` and, with
  the codec as label, ``...NotCompressible`` / ``...Error`` / ``...Unsupported``):
  - sent compressed only if compressed size ≤ ``size_threshold_percent`` % of the plain size (at 100 % always), else
    plain: not compressible;
  - a codec that fails sends the set plain: error;
  - zstd needs a broker whose Produce version is 7 or more (RecordBatch v2); to any other broker the set goes plain:
    unsupported. (Plain, not another codec: the config asked for zstd, and a set the broker cannot read is lost.)
- Codecs: none, gzip, snappy, lz4, zstd (Bruce: none and snappy).
- Cheap: the per-topic answer is cached (up to ``max_topics`` topics, then the cache starts over); one pass over the
  set's sizes per call.
"""

from __future__ import annotations

from collections.abc import Sequence

from bruce.producer import NO_COMPRESSION, Compression, Message
from bruce.wire import MESSAGE_OVERHEAD, Codec

from ..config import CompressionType, Config

PER_MESSAGE_OVERHEAD = MESSAGE_OVERHEAD[0]  # Bruce counts each message as key + value + 26 against min_size
DEFAULT_MAX_TOPICS = 10_000

CODECS = {
    CompressionType.NONE: Codec.NONE,
    CompressionType.GZIP: Codec.GZIP,
    CompressionType.SNAPPY: Codec.SNAPPY,
    CompressionType.LZ4: Codec.LZ4,
    CompressionType.ZSTD: Codec.ZSTD,
}


class TopicCompression:
    """The daemon's ``CompressionPolicy``: ``Producer(..., compression=TopicCompression(config))``."""

    __slots__ = ("_config", "_max_topics", "_threshold", "_topics")

    def __init__(self, config: Config, *, max_topics: int = DEFAULT_MAX_TOPICS) -> None:
        self._config = config
        self._threshold = config.compression.size_threshold_percent
        self._max_topics = max_topics
        self._topics: dict[str, tuple[Compression, int]] = {}  # topic → (compression when big enough, min_size)

    def __call__(self, topic: str, messages: Sequence[Message]) -> Compression:
        """The compression for one message set of ``topic``."""
        rule = self._topics.get(topic)
        if rule is None:
            rule = self._rule(topic)
        compression, min_size = rule
        if compression is NO_COMPRESSION:
            return NO_COMPRESSION
        if min_size:
            total = PER_MESSAGE_OVERHEAD * len(messages)
            for m in messages:
                total += m.size
            if total < min_size:
                return NO_COMPRESSION
        return compression

    def _rule(self, topic: str) -> tuple[Compression, int]:
        if len(self._topics) >= self._max_topics:
            self._topics.clear()
        codec = self._config.compression_for(topic)
        if codec.type is CompressionType.NONE:
            rule = (NO_COMPRESSION, 0)
        else:
            rule = (Compression(CODECS[codec.type], threshold_percent=self._threshold), codec.min_size)
        self._topics[topic] = rule
        return rule
