"""bruce.producer — a non-blocking Kafka producer on asyncio (see docs/producer.md).

Library use::

    async with Producer(ProducerConfig(bootstrap_servers=("127.0.0.1:9092",))) as producer:
        handle = producer.send("topic", b"value")
        partition, offset = await handle

Besides the producer, the pieces other Kafka clients build on (a reader, tools) are public too: a negotiated broker
connection (:func:`open_connection`, :class:`BrokerConnection`, :class:`Timeouts`, :class:`TransportError`, with TLS
and SASL from :class:`SecurityConfig`, refusals as :class:`AuthenticationFailed`), the cluster
view of a Metadata answer (:func:`build_view`, :class:`ClusterView`, :class:`BadMetadata`), ``host:port`` parsing
(:func:`parse_host_port`) and Bruce's partitioning (:func:`key_to_partition_key`, :func:`partition_for_key`).
"""

from __future__ import annotations

from .aio import new_event_loop, run
from .cluster import BadMetadata, Broker, ClusterView, Partition, Topic, build_view
from .config import ProducerConfig, parse_host_port
from .counters import Counters
from .errors import ConfigError, DeliveryError, MessageTooLarge, ProducerClosed, QueueFull, TransportError
from .health import BootstrapState, BrokerState, QueueStats
from .message import Message, OutcomeSink
from .partitioner import key_to_partition_key, partition_for_key
from .producer import Producer
from .reasons import DiscardReason
from .request import Compression, CompressionPolicy
from .sasl import AuthenticationFailed
from .security import Secret, SecurityConfig
from .transactions import TransactionError
from .transport import BrokerConnection, Timeouts, open_connection

__all__ = [
    "AuthenticationFailed",
    "BadMetadata",
    "BootstrapState",
    "Broker",
    "BrokerConnection",
    "BrokerState",
    "ClusterView",
    "Compression",
    "CompressionPolicy",
    "ConfigError",
    "Counters",
    "DeliveryError",
    "DiscardReason",
    "Message",
    "MessageTooLarge",
    "OutcomeSink",
    "Partition",
    "Producer",
    "ProducerClosed",
    "ProducerConfig",
    "QueueFull",
    "QueueStats",
    "Secret",
    "SecurityConfig",
    "Timeouts",
    "Topic",
    "TransactionError",
    "TransportError",
    "build_view",
    "key_to_partition_key",
    "new_event_loop",
    "open_connection",
    "parse_host_port",
    "partition_for_key",
    "run",
]
