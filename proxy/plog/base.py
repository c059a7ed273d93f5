"""What the plog listeners share: config, stats, and handing messages to the sink.

Rules:
- Each listener has its own :class:`PlogStats` (what ``STAT`` reports, as in plog) and hands every message it takes in
  to the :class:`PlogSink` exactly once, with its default topic or the message's ``kt:`` tag (the topic ``"null"``
  means none, as in plog: the message is counted as ``no_topic`` and rejected as BAD_TOPIC). ``pk:<key>`` becomes the
  Kafka record key, and its partition key is plog's (:func:`bruce.wire.plog.plog_partition_key`). Whatever the
  listener drops itself is counted in its stats *and* rejected to the sink with a discard reason (see
  :mod:`.sink`).
- An unexpected exception while handling input (a bug, here or in the sink) is never swallowed: the listener stops
  reading (a TCP connection is aborted) and hands the error to :meth:`PlogSink.fail`, which stops the daemon with it.
  (plog counted such errors and went on.)
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bruce.producer import DiscardReason
from bruce.wire import UsageError, plog_partition_key

from ..config import ListenerConfig
from .sink import PlogSink
from .stats import PlogStats

REJECT_SAMPLE = 4096  # bytes of a dropped message handed to the sink's discard report
NULL_TOPIC = "null"  # plog: a message whose topic resolves to "null" is not sent


class BaseListener:
    """What both listeners share: config, sink, stats, submission."""

    def __init__(self, config: ListenerConfig, sink: PlogSink, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.sink = sink
        self.stats = PlogStats(config.name, clock=clock)
        self.clock = clock
        self._address: tuple[str, int] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def address(self) -> tuple[str, int]:
        """The bound (host, port); the port is the real one when the config asked for 0."""
        if self._address is None:
            raise UsageError(f"plog listener {self.name} is not started")
        return self._address

    def _submit(self, topic: str | None, key: bytes | None, value: bytes) -> None:
        if topic is None or topic == NULL_TOPIC:
            self.stats.no_topic += 1
            self._reject(DiscardReason.BAD_TOPIC, value, topic=NULL_TOPIC)
            return
        self.stats.seen_messages += 1
        partition_key = None if key is None else plog_partition_key(key)
        if not self.sink.submit(topic, key, value, partition_key=partition_key, listener=self.config.name):
            self.stats.failed_to_send += 1

    def _reject(self, reason: DiscardReason, data: bytes, *, topic: str | None = None) -> None:
        self.sink.reject(reason, data, topic=topic, listener=self.config.name)

    def _fail(self, error: Exception) -> None:
        """An unexpected error while handling input: the sink stops the daemon with it."""
        self.sink.fail(error, listener=self.config.name)
