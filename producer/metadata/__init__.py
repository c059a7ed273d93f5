"""The cluster as the producer knows it: the view a Metadata answer gives, fetching and refreshing it, creating
topics, and choosing a partition.

Modules: ``cluster`` (:class:`ClusterView` from a Metadata answer, Bruce's parsing rules), ``fetcher``
(:class:`MetadataFetcher`: bootstrap, refresh, auto-creation requests), ``autocreate`` (:class:`TopicCreator`:
Bruce's topic auto-creation and its wait), ``partitioner`` (AnyPartition, PartitionKey, explicit partitions,
librdkafka's key partitioners).
Rule: imports the top-level vocabulary, :mod:`~bruce.producer.config` and :mod:`~bruce.producer.transport` (see
docs/architecture.md#the-floors-of-bruceproducer); where unknown topics wait is a protocol (``WaitingTopics``).
"""

from __future__ import annotations

from .autocreate import TopicCreator
from .cluster import BadMetadata, BrokerNode, ClusterView, Partition, Topic, build_view
from .fetcher import MetadataFetcher
from .partitioner import AnyPartitionCycle, explicit_partition, key_to_partition_key, partition_for_key

__all__ = [
    "AnyPartitionCycle",
    "BadMetadata",
    "BrokerNode",
    "ClusterView",
    "MetadataFetcher",
    "Partition",
    "Topic",
    "TopicCreator",
    "build_view",
    "explicit_partition",
    "key_to_partition_key",
    "partition_for_key",
]
