"""The cluster view: brokers, topics, partitions, leaders and availability, built from one Metadata response.

Rules (Bruce's metadata parsing, docs/bruce-compatibility.md#metadata):
- Topics whose error code is not 0 are skipped (they are unknown to the producer).
- Every partition of a kept topic is listed (PartitionKey's modulus runs over all of them), but only partitions with
  error 0 or 9 (REPLICA_NOT_AVAILABLE) whose leader is a known broker are *available*.
- Bad metadata (:class:`BadMetadata`): an empty broker list; a duplicate broker, topic or partition; a usable
  partition (error 0 or 9, leader ≥ 0) whose leader is not in the broker list; with ``require_topics``, topics listed
  but every one with an error (a broker that answers without being able to describe any topic, e.g. still loading its
  state: taking it at its word would discard every message as BAD_TOPIC). An answer listing no topic at all is a
  brand-new cluster and valid either way (Bruce refused it too; see docs/producer.md#metadata).
- Pure and immutable: a new response makes a new view; :meth:`ClusterView.same_as` tells whether anything changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bruce.wire import MalformedInput

USABLE_PARTITION_ERRORS = frozenset({0, 9})


class BadMetadata(MalformedInput):
    """A Metadata response that is inconsistent (see the module rules)."""

    reason = "BAD_METADATA"


@dataclass(frozen=True, slots=True)
class BrokerNode:
    node_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class Partition:
    id: int
    leader: int  # -1 when there is none
    error: int = 0


@dataclass(frozen=True, slots=True)
class Topic:
    """One topic: all its partitions sorted by id, and the ids of the available ones with their leaders."""

    name: str
    partitions: tuple[Partition, ...]
    leaders: dict[int, int]  # available partition id → leader broker id
    available: tuple[int, ...] = ()  # sorted ids of available partitions

    @property
    def partition_count(self) -> int:
        return len(self.partitions)


@dataclass(frozen=True, slots=True)
class ClusterView:
    brokers: dict[int, BrokerNode]
    topics: dict[str, Topic]
    cluster_id: str | None = None  # Metadata v2+ (None: the broker did not say)

    def topic(self, name: str) -> Topic | None:
        return self.topics.get(name)

    def leader(self, topic: str, partition: int) -> int | None:
        """The broker leading an available partition, or None."""
        info = self.topics.get(topic)
        return None if info is None else info.leaders.get(partition)

    def same_as(self, other: ClusterView | None) -> bool:
        return other is not None and self.brokers == other.brokers and self.topics == other.topics


def build_view(
    brokers: Any, topics: Any, *, require_topics: bool = False, cluster_id: str | None = None
) -> ClusterView:
    """Build a view from a Metadata response's ``brokers`` (node_id, host, port) and ``topics`` (error_code, name,
    partitions: error_code, partition_index, leader_id), and its ``cluster_id``. Raises :class:`BadMetadata`."""
    if not brokers:
        raise BadMetadata("metadata lists no brokers")
    by_id: dict[int, BrokerNode] = {}
    for b in brokers:
        if b.node_id in by_id:
            raise BadMetadata(f"metadata lists broker {b.node_id} twice")
        by_id[b.node_id] = BrokerNode(b.node_id, b.host, b.port)
    seen_topics: set[str] = set()
    kept: dict[str, Topic] = {}
    for t in topics:
        if t.name in seen_topics:
            raise BadMetadata(f"metadata lists topic {t.name!r} twice")
        seen_topics.add(t.name)
        if t.error_code != 0:
            continue
        parts: dict[int, Partition] = {}
        leaders: dict[int, int] = {}
        for p in t.partitions:
            if p.partition_index in parts:
                raise BadMetadata(f"metadata lists partition {p.partition_index} of topic {t.name!r} twice")
            parts[p.partition_index] = Partition(p.partition_index, p.leader_id, p.error_code)
            if p.error_code in USABLE_PARTITION_ERRORS and p.leader_id >= 0:
                if p.leader_id not in by_id:
                    raise BadMetadata(
                        f"partition {p.partition_index} of topic {t.name!r} is led by unknown broker {p.leader_id}"
                    )
                leaders[p.partition_index] = p.leader_id
        ordered = tuple(parts[i] for i in sorted(parts))
        kept[t.name] = Topic(t.name, ordered, leaders, tuple(sorted(leaders)))
    # Bruce's "no valid topic" rule, kept only where it protects something: topics listed, none usable. An empty list is
    # a new cluster (every Kafka cluster starts so): refusing it would keep the daemon from ever creating a topic.
    if require_topics and seen_topics and not kept:
        raise BadMetadata(f"metadata lists {len(seen_topics)} topics, every one with an error")
    return ClusterView(by_id, kept, cluster_id)
