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
from .bulk import Bulk
from .columns import ColumnRun
from .config import (
    PARTITIONERS,
    PLAINTEXT,
    PROTOCOLS,
    REDACTED,
    SECRETS,
    SECURITY_PROPERTIES,
    SETTING_NAMES,
    SETTINGS,
    ProducerConfig,
    Secret,
    SecurityConfig,
    client_context,
    is_secret,
    parse_host_port,
    read_setting,
    servers,
)
from .counters import Counters, Labels
from .errors import ConfigError, DeliveryError, MessageTooLarge, ProducerClosed, QueueFull, TransportError
from .handle import Handle
from .idempotence import (
    Journal,
    JournalEntry,
    PartJournal,
    Settler,
    StateInUse,
    StateMismatch,
    highest_sequences,
    read_journal,
)
from .message import Message, OutcomeSink
from .metadata import (
    BadMetadata,
    BrokerNode,
    ClusterView,
    Partition,
    Topic,
    build_view,
    key_to_partition_key,
    partition_for_key,
)
from .producer import Producer
from .queues import NO_COMPRESSION, Compression, CompressionPolicy
from .reasons import DiscardReason
from .transactions import TransactionError
from .transport import CONNECTED, IDLE, AuthenticationFailed, BrokerConnection, Timeouts, open_connection
from .views import BootstrapState, BrokerState, TopicQueueStats

__all__ = [
    "CONNECTED",
    "IDLE",
    "NO_COMPRESSION",
    "PARTITIONERS",
    "PLAINTEXT",
    "PROTOCOLS",
    "REDACTED",
    "SECRETS",
    "SECURITY_PROPERTIES",
    "SETTINGS",
    "SETTING_NAMES",
    "AuthenticationFailed",
    "BadMetadata",
    "BootstrapState",
    "BrokerConnection",
    "BrokerNode",
    "BrokerState",
    "Bulk",
    "ClusterView",
    "ColumnRun",
    "Compression",
    "CompressionPolicy",
    "ConfigError",
    "Counters",
    "DeliveryError",
    "DiscardReason",
    "Handle",
    "Journal",
    "JournalEntry",
    "Labels",
    "Message",
    "MessageTooLarge",
    "OutcomeSink",
    "PartJournal",
    "Partition",
    "Producer",
    "ProducerClosed",
    "ProducerConfig",
    "QueueFull",
    "Secret",
    "SecurityConfig",
    "Settler",
    "StateInUse",
    "StateMismatch",
    "Timeouts",
    "Topic",
    "TopicQueueStats",
    "TransactionError",
    "TransportError",
    "build_view",
    "client_context",
    "highest_sequences",
    "is_secret",
    "key_to_partition_key",
    "new_event_loop",
    "open_connection",
    "parse_host_port",
    "partition_for_key",
    "read_journal",
    "read_setting",
    "run",
    "servers",
]
