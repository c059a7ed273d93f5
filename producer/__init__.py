"""bruce.producer — a non-blocking Kafka producer on asyncio (see docs/producer.md).

Library use::

    async with Producer(ProducerConfig(bootstrap_servers=("127.0.0.1:9092",))) as producer:
        handle = producer.send("topic", b"value")
        partition, offset = await handle
"""

from __future__ import annotations

from .aio import new_event_loop, run
from .cluster import ClusterView, Topic
from .config import ProducerConfig
from .counters import Counters
from .errors import DeliveryError, ProducerClosed, QueueFull
from .message import Message, OutcomeSink
from .producer import Producer, QueueStats
from .reasons import DiscardReason
from .request import Compression, CompressionPolicy

__all__ = [
    "ClusterView",
    "Compression",
    "CompressionPolicy",
    "Counters",
    "DeliveryError",
    "DiscardReason",
    "Message",
    "OutcomeSink",
    "Producer",
    "ProducerClosed",
    "ProducerConfig",
    "QueueFull",
    "QueueStats",
    "Topic",
    "new_event_loop",
    "run",
]
