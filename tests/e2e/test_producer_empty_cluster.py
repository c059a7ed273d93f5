"""bruce.producer on a brand-new cluster (a fresh tansu with no topic): it is ready and sends, with Bruce's stricter
metadata check (``require_topics=True``, the daemon's) as without. With ``topic_autocreate`` the topics are created and
every message is read back by confluent-kafka; without it each message fails as BAD_TOPIC, at once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from readback import read_back

from bruce.producer import DeliveryError, DiscardReason, Producer, ProducerConfig
from bruce.proxy.daemon.embedded import EmbeddedBroker

pytestmark = pytest.mark.e2e

TANSU_PARTITIONS = 4  # what tansu gives a topic it creates on first use


@pytest.fixture
def fresh_broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    """A tansu of its own with no topic at all (not the session broker, which other tests fill)."""
    with EmbeddedBroker(log_path=tmp_path / "tansu.log") as broker:
        yield broker


def _send(address: str, topics: list[str], *, require_topics: bool, autocreate: bool) -> list[object]:
    async def main() -> list[object]:
        config = ProducerConfig(bootstrap_servers=(address,), topic_autocreate=autocreate)
        async with Producer(config, require_topics=require_topics) as producer:
            await producer.ready(10)
            handles = [producer.send(t, b"%s %d" % (t.encode(), i)) for i, t in enumerate(topics)]
            return await asyncio.wait_for(asyncio.gather(*handles, return_exceptions=True), 40)

    return asyncio.run(main())


@pytest.mark.parametrize("require_topics", [True, False])
def test_topics_are_created_on_an_empty_cluster(fresh_broker: EmbeddedBroker, require_topics: bool) -> None:
    topic = f"lib-created-{require_topics}"
    outcomes = _send(fresh_broker.address, [topic] * 6, require_topics=require_topics, autocreate=True)
    assert all(isinstance(o, tuple) for o in outcomes), outcomes
    read = read_back(fresh_broker.address, topic, TANSU_PARTITIONS, 6, timeout=30, extra=0.5)
    assert sorted(m.value() for m in read) == sorted(b"%s %d" % (topic.encode(), i) for i in range(6))


@pytest.mark.parametrize("require_topics", [True, False])
def test_without_autocreate_each_message_is_bad_topic(fresh_broker: EmbeddedBroker, require_topics: bool) -> None:
    topics = [f"lib-absent-{require_topics}-{i % 2}" for i in range(4)]
    outcomes = _send(fresh_broker.address, topics, require_topics=require_topics, autocreate=False)
    assert [o.reason for o in outcomes if isinstance(o, DeliveryError)] == [DiscardReason.BAD_TOPIC] * 4, outcomes
    assert [e.topic for e in outcomes if isinstance(e, DeliveryError)] == topics
