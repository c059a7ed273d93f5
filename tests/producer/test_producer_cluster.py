"""The cluster view built from a Metadata response: Bruce's parsing rules (docs/bruce-compatibility.md#metadata)."""

from __future__ import annotations

import pytest

from bruce.producer.metadata.cluster import BadMetadata, build_view
from bruce.wire.protocol.metadata import MetadataResponseBroker as B
from bruce.wire.protocol.metadata import MetadataResponsePartition
from bruce.wire.protocol.metadata import MetadataResponseTopic as T


def P(index: int, leader: int, error: int = 0) -> MetadataResponsePartition:
    return MetadataResponsePartition(error, index, leader, (leader,), (leader,))


BROKERS = (B(1, "h1", 9092), B(2, "h2", 9093))


def test_topics_with_an_error_are_skipped() -> None:
    view = build_view(BROKERS, (T(0, "ok", (P(0, 1),)), T(5, "creating", (P(0, 1),)), T(3, "gone", ())))
    assert set(view.topics) == {"ok"}


def test_partitions_with_error_0_or_9_are_available_others_are_listed_only() -> None:
    view = build_view(BROKERS, (T(0, "t", (P(2, 2, 9), P(0, 1, 0), P(1, -1, 5), P(3, 1, 6))),))
    topic = view.topic("t")
    assert topic is not None
    assert [p.id for p in topic.partitions] == [0, 1, 2, 3]  # sorted, all of them (the PartitionKey modulus)
    assert topic.available == (0, 2)
    assert topic.leaders == {0: 1, 2: 2}
    assert view.leader("t", 1) is None and view.leader("t", 2) == 2


@pytest.mark.parametrize(
    ("brokers", "topics", "message"),
    [
        ((), (T(0, "t", (P(0, 1),)),), "no brokers"),
        ((B(1, "a", 1), B(1, "b", 2)), (T(0, "t", (P(0, 1),)),), "broker 1 twice"),
        (BROKERS, (T(0, "t", (P(0, 1),)), T(0, "t", (P(0, 1),))), "topic 't' twice"),
        (BROKERS, (T(0, "t", (P(0, 1), P(0, 2))),), "partition 0 of topic 't' twice"),
        (BROKERS, (T(0, "t", (P(0, 7),)),), "unknown broker 7"),
    ],
)
def test_bad_metadata(brokers: tuple, topics: tuple, message: str) -> None:
    with pytest.raises(BadMetadata, match=message):
        build_view(brokers, topics)


def test_require_topics_rejects_topics_that_all_have_errors() -> None:
    with pytest.raises(BadMetadata, match="2 topics, every one with an error"):
        build_view(BROKERS, (T(-1, "t", ()), T(3, "u", ())), require_topics=True)
    assert set(build_view(BROKERS, (T(-1, "t", ()), T(0, "u", ())), require_topics=True).topics) == {"u"}


@pytest.mark.parametrize("require_topics", [True, False])
def test_an_empty_cluster_is_a_cluster(require_topics: bool) -> None:
    """A brand-new cluster lists no topic: a valid answer (Bruce refused it; the daemon then never sent anything)."""
    view = build_view(BROKERS, (), require_topics=require_topics)
    assert (view.topics, set(view.brokers)) == ({}, {1, 2})


def test_an_unknown_leader_of_an_unusable_partition_is_not_bad_metadata() -> None:
    view = build_view(BROKERS, (T(0, "t", (P(0, 7, 5),)),))
    assert view.topic("t").available == ()  # type: ignore[union-attr]


def test_same_as_detects_leader_changes() -> None:
    a = build_view(BROKERS, (T(0, "t", (P(0, 1),)),))
    assert a.same_as(build_view(BROKERS, (T(0, "t", (P(0, 1),)),)))
    assert not a.same_as(build_view(BROKERS, (T(0, "t", (P(0, 2),)),)))
    assert not a.same_as(None)
