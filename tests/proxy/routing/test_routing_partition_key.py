"""PartitionKey keeps Bruce's *documented* promise, through the producer that routes the daemon's batches: the modulus
is over all partitions, and during an outage only the keys of an unavailable partition move (to the next available
one) — for new messages and for queued messages rerouted after a pause. Bruce's code remapped every key instead,
because its metadata parsing dropped unavailable partitions; the view here keeps them (they come from a Metadata
answer with error 5 and no leader)."""

from __future__ import annotations

import asyncio

import pytest
from fakebroker import FakeCluster
from fakebroker.harness import bruce_config, scenario, wait_for

from bruce.producer import Producer, ProducerConfig
from bruce.producer.counters import Counters
from bruce.producer.dispatch.dispatcher import Dispatcher
from bruce.proxy.config.model import TopicAction, TopicBatching
from bruce.proxy.routing.batcher import Batcher
from bruce.proxy.routing.router import Router

from .helpers import config, limits, msg, view

KEYS = range(0, 4000, 7)


def queued(d: Dispatcher, topic: str) -> dict[int, list[int]]:
    """Partition → partition keys of the messages queued there (the producer's ready batches), in order."""
    return {
        p: [m.partition_key for batch, _, _ in pq.ready for m in batch]  # type: ignore[misc]
        for p, pq in sorted(d.queues.get(topic, {}).items())
    }


def test_only_the_dead_partitions_keys_move_new_and_queued() -> None:
    d = Dispatcher(ProducerConfig(), Counters(), None)
    d.apply_view(view({"t": [1, 2, 1, 2]}), 0.0)
    assert d.view is not None and d.view.topics["t"].partition_count == 4
    for key in KEYS:
        m = msg("t", b"%d" % key, pk=key)
        d.ledger.admit([m])
        d.route("t", [m])
    before = queued(d, "t")
    assert {p: {k % 4 for k in ks} for p, ks in before.items()} == {0: {0}, 1: {1}, 2: {2}, 3: {3}}

    outage = view({"t": [1, None, 1, 2]})  # partition 1 lost its leader (error 5): still listed
    assert outage.topics["t"].partition_count == 4 and outage.topics["t"].available == (0, 2, 3)
    d.apply_view(outage, 1.0)  # what a pause ends with: reroute on the new view
    after = queued(d, "t")
    assert after[0] == before[0] and after[3] == before[3]  # untouched, same order
    assert after[1] == []
    assert after[2] == before[2] + before[1]  # only partition 1's keys moved, to the next available partition

    for key in KEYS:  # new messages during the outage
        m = msg("t", b"%d" % key, pk=key)
        d.ledger.admit([m])
        d.route("t", [m])
    during = queued(d, "t")
    assert {p: {k % 4 for k in ks[len(after[p]) :]} for p, ks in during.items() if ks[len(after[p]) :]} == {
        0: {0},
        2: {1, 2},
        3: {3},
    }
    assert d.ledger.accepted == d.ledger.held_messages == 2 * len(KEYS)


def landed(cluster: FakeCluster, tag: bytes) -> dict[int, list[int]]:
    """Partition → the keys of the round ``tag`` stored there (values are the tag and the key)."""
    return {
        p: sorted(int(r.value[1:]) for r in cluster.records("t", p) if r.value and r.value[:1] == tag) for p in range(4)
    }


def test_partition_key_through_router_batcher_and_producer_when_a_broker_dies() -> None:
    """Four partitions over two brokers; broker 2 (partitions 1 and 3) goes away. Keys of partition 1 move to 2, keys
    of partition 3 wrap to 0; keys of 0 and 2 stay where they were."""
    cfg = config(named={"b": limits(messages=50)}, default=TopicBatching(TopicAction.PER_TOPIC, "b"))

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2, 1, 2])
        async with Producer(bruce_config(cluster.bootstrap, produce_request_data_limit=1 << 20)) as producer:
            await producer.ready(5)
            loop = asyncio.get_running_loop()
            batcher = Batcher(cfg.batching_for, producer.submit)
            router = Router(
                cluster=producer.cluster,
                batcher=batcher,
                discard=lambda m, reason: pytest.fail(f"discarded: {reason}"),
                message_max_bytes=1_000_000,
            )

            def send_all(tag: bytes) -> None:
                for key in range(100):
                    router.route(msg("t", tag + b"%d" % key, loop.time(), pk=key))
                batcher.flush_all()

            send_all(b"a")
            await wait_for(lambda: len(cluster.values("t")) == 100, what="first round")
            await cluster.brokers[2].stop()
            producer.request_metadata_refresh()
            await wait_for(lambda: producer.available_partitions("t") == (0, 2), what="the outage in metadata")
            send_all(b"b")
            await wait_for(lambda: len(cluster.values("t")) == 200, what="second round")
            first, second = landed(cluster, b"a"), landed(cluster, b"b")
            assert first == {p: [k for k in range(100) if k % 4 == p] for p in range(4)}
            assert second == {
                0: sorted(k for k in range(100) if k % 4 in (0, 3)),
                1: [],
                2: sorted(k for k in range(100) if k % 4 in (1, 2)),
                3: [],
            }

    scenario(body, brokers=2)
