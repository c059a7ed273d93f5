"""``Producer.send_many`` against the fake broker: values in batches of their own, each value's fate in order from the
:class:`Bulk` (delivered offsets equal what the broker stored, failures by index), keyed values routed as ``send``
routes them, order after earlier ``send`` calls, all-or-nothing refusals, and the accounting at every step."""

from __future__ import annotations

import asyncio
import gc

import pytest
from fakebroker import FakeCluster, Fault
from fakebroker.harness import Outcomes, assert_accounting, bruce_config, running, scenario

from bruce.producer import DeliveryError, DiscardReason, Handle, Producer, ProducerConfig, QueueFull, partition_for_key
from bruce.producer.metadata.partitioner import key_to_partition_key
from bruce.wire.errors import UsageError
from bruce.wire.protocol import produce

PRODUCE = produce.KEY


def batched(cluster: FakeCluster, **overrides: object) -> ProducerConfig:
    """Requests of up to 1 MiB, batches of 7 values."""
    settings = {"produce_request_data_limit": 1 << 20, "batch_num_messages": 7, **overrides}
    return bruce_config(cluster.bootstrap, **settings)


def test_values_go_in_batches_across_the_partitions_and_results_are_the_stored_offsets() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2, 1])
        outcomes = Outcomes()
        async with running(batched(cluster), sink=outcomes) as p:
            values = [b"v%03d" % i for i in range(50)]
            bulk = p.send_many("t", values, timestamp=1_700_000_000_000)
            assert len(bulk) == 50 and not bulk.done and p.held == 50
            assert_accounting(p, outcomes)
            assert await bulk is bulk and bulk.done and bulk.failures() == [] and bulk.delivered == 50
            results = bulk.results()
            assert_accounting(p, outcomes, held=0)
        stored = {(p, i): r for p in range(3) for i, r in enumerate(cluster.records("t", p))}  # by log offset
        assert len(stored) == 50
        for value, (partition, offset) in zip(values, results, strict=True):
            record = stored[(partition, offset)]
            assert (record.value, record.key, record.timestamp) == (value, None, 1_700_000_000_000)
        chunks = [results[i : i + 7] for i in range(0, 50, 7)]  # batches of batch_num_messages, one partition each
        assert all(len({p for p, _ in chunk}) == 1 for chunk in chunks)
        assert {chunk[0][0] for chunk in chunks} == {0, 1, 2}  # the cycle reaches every partition

    scenario(body)


def test_keys_route_each_value_as_send_does() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2, 1, 2])
        async with running(batched(cluster)) as p:
            keys = [b"k%d" % (i % 9) for i in range(40)]
            bulk = await p.send_many("t", [b"x%d" % i for i in range(40)], keys)
            assert bulk.failures() == []
            info = p.cluster().topic("t")
            for key, (partition, _) in zip(keys, bulk.results(), strict=True):
                assert partition == partition_for_key(key_to_partition_key(key), info)
            assert_accounting(p, held=0)
        assert sorted(r.key for r in cluster.records("t")) == sorted(keys)

    scenario(body)


def test_an_explicit_partition_follows_what_send_queued_there_before() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2])
        config = batched(cluster, linger_ms=10_000)  # send's batch stays open until send_many seals it
        async with running(config) as p:
            first = p.send("t", b"first", partition=1)
            bulk = await p.send_many("t", [b"a", b"b", b"c"], partition=1)
            assert await first == (1, 0)
            assert bulk.results() == [(1, 1), (1, 2), (1, 3)]
        assert cluster.values("t") == [b"first", b"a", b"b", b"c"]

    scenario(body)


def test_failed_values_are_reported_by_index_and_the_rest_delivered() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = Outcomes()
        config = batched(cluster, produce_request_data_limit=0)  # one value per request
        async with running(config, sink=outcomes) as p:
            cluster.brokers[1].script(PRODUCE, Fault.ok(), Fault.error(10), Fault.ok(), Fault.error(10))
            bulk = await p.send_many("t", [b"%d" % i for i in range(20)])
            failures = bulk.failures()
            assert [i for i, _ in failures] == [1, 3]  # MESSAGE_TOO_LARGE: discarded
            assert {(e.reason, e.topic) for _, e in failures} == {(DiscardReason.KAFKA_ERROR_ACK, "t")}
            results = bulk.results()
            assert [type(results[i]) for i in (1, 3)] == [DeliveryError, DeliveryError]
            assert [r for r in results if type(r) is tuple] == [(0, i) for i in range(18)]
            assert bulk.delivered == 18 and p.discarded == 2
            assert_accounting(p, outcomes, held=0)
        assert cluster.values("t") == [b"%d" % i for i in range(20) if i not in (1, 3)]

    scenario(body, brokers=1)


def test_an_unavailable_partition_or_unknown_topic_fails_every_value() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(batched(cluster)) as p:
            bulk = await p.send_many("t", [b"a"] * 10, partition=5)
            assert [i for i, _ in bulk.failures()] == list(range(10))
            assert {e.reason for _, e in bulk.failures()} == {DiscardReason.NO_AVAILABLE_PARTITIONS}
            unknown = await p.send_many("nope", [b"a", b"b"])
            assert [e.reason for _, e in unknown.failures()] == [DiscardReason.BAD_TOPIC] * 2
            assert_accounting(p, held=0)
            assert p.discarded == 12

    scenario(body, brokers=1)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        (([b"a", "b"],), {}, UsageError, "value must be bytes"),
        (([b"a", b"b"], [b"k"]), {}, UsageError, "1 keys for 2 values"),
        (([b"a"], ["k"]), {}, UsageError, "key must be bytes"),
        (([b"a"],), {"partition": -1}, UsageError, "partition must be an int"),
        (([b"a"],), {"timestamp": 2**62}, UsageError, "within ±2"),
        (([b"a"] * 6,), {}, QueueFull, "queue_buffering_max_messages"),
        (([b"a" * 600, b"b" * 600],), {}, QueueFull, "queue_buffering_max_kbytes"),
    ],
)
def test_refusals_queue_none_of_the_values(args: tuple, kwargs: dict, error: type, message: str) -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        config = batched(cluster, queue_buffering_max_messages=5, queue_buffering_max_kbytes=1)
        async with running(config) as p:
            with pytest.raises(error, match=message):
                p.send_many("t", *args, **kwargs)
            assert (p.accepted, p.held) == (0, 0)
            assert (await p.send_many("t", [])).results() == []

    scenario(body, brokers=1)


def test_values_still_queued_at_close_fail_with_the_close_reason() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(batched(cluster)) as p:
            await cluster.brokers[1].stop()
            bulk = p.send_many("t", [b"a"] * 30)
            await p.close(0.2)
        assert bulk.done and len(bulk.failures()) == 30
        assert {e.reason for _, e in bulk.failures()} == {DiscardReason.PRODUCER_CLOSED}
        assert_accounting(p, held=0)

    scenario(body, brokers=1)


def _ready_kinds(p: Producer, topic: str, partition: int) -> list[str]:
    """How the partition's ready batches are held: "chunk" (values) or "messages"."""
    pq = p._dispatcher.queue(topic, partition)
    return ["messages" if type(batch) is list else "chunk" for batch, _, _ in pq.ready]


def test_keyless_sends_fill_batches_of_values_and_their_handles_resolve_kept_or_not() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = Outcomes()
        config = batched(cluster, batch_num_messages=10, linger_ms=10_000)
        async with running(config, sink=outcomes) as p:
            await cluster.brokers[1].stop()  # nothing leaves: the batches wait, as sealed
            kept = {}
            for i in range(40):  # handles dropped at once, but two: the last of the 1st batch and one in the 2nd
                if i in (9, 15):
                    kept[i] = p.send("t", b"%02d" % i)
                else:
                    p.send("t", b"%02d" % i)
            assert type(kept[9]) is Handle and kept[9].value == b"09" and not kept[9].done
            p.send("t", b"k", key=b"key")  # a keyed message: its batch is messages
            for i in range(9):
                p.send("t", b"x", headers=[("h", b"v")] if i == 4 else None)
            p.send("t", b"y")  # a batch of values again
            mixed = p.send("t", b"z", key=b"key")  # joining it turns it into messages; kept handles read those
            assert _ready_kinds(p, "t", 0) == ["chunk", "chunk", "chunk", "chunk", "messages"]
            assert type(p._dispatcher.queue("t", 0).open) is list
            assert_accounting(p, outcomes, held=52)
            await cluster.brokers[1].start()
            assert await p.flush(10) == 0
            assert kept[9].result() == (0, 9) and kept[15].result() == (0, 15)
            assert await kept[15] == (0, 15) and kept[15].error is None and kept[15].attempts == 0
            assert mixed.result() == (0, 51)
            assert_accounting(p, outcomes, held=0)
        assert cluster.values("t")[:40] == [b"%02d" % i for i in range(40)]
        assert cluster.values("t")[50:] == [b"y", b"z"]
        assert outcomes.delivered_count == 52

    scenario(body, brokers=1)


def test_a_handle_awaited_while_its_batch_waits_wakes_with_the_batch_and_failures_reach_it() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(batched(cluster, batch_num_messages=3, linger_ms=10_000)) as p:
            first = [p.send("t", b"a"), p.send("t", b"b")]
            waiter = asyncio.ensure_future(first[1])
            await asyncio.sleep(0)
            assert not waiter.done()
            p.send("t", b"c")  # the batch is full: it leaves
            assert await waiter == (0, 1)
            assert first[0].result() == (0, 0) and first[0].partition == 0 and first[0].offset == 0
            cluster.brokers[1].script(PRODUCE, Fault.error(10))  # MESSAGE_TOO_LARGE: discarded
            failed = [p.send("t", b"d") for _ in range(3)]
            with pytest.raises(DeliveryError):
                await failed[2]
            assert all(h.done and h.error is not None and h.offset == -1 for h in failed)

    scenario(body, brokers=1)


def test_send_many_after_a_keyed_send_does_not_keep_the_queue_marked() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(batched(cluster, batch_num_messages=10, linger_ms=10_000)) as p:
            await cluster.brokers[1].stop()
            p.send("t", b"k", key=b"key")  # the open batch holds a keyed message
            p.send_many("t", [b"m"] * 5, partition=0)  # seals it first, then queues its chunk
            for i in range(10):  # a full batch of keyless messages nobody holds: a chunk again
                p.send("t", b"%02d" % i)
            assert _ready_kinds(p, "t", 0) == ["messages", "chunk", "chunk"]
            await cluster.brokers[1].start()
            assert await p.flush(10) == 0
        assert cluster.values("t") == [b"k", *[b"m"] * 5, *[b"%02d" % i for i in range(10)]]

    scenario(body, brokers=1)


def test_a_batch_of_values_sent_again_keeps_its_order_and_its_handles_count_the_attempt() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        config = batched(cluster, batch_num_messages=5, linger_ms=10_000)
        async with running(config) as p:
            cluster.brokers[1].script(PRODUCE, Fault.error(7))  # REQUEST_TIMED_OUT: sent again
            for i in range(4):
                p.send("t", b"%d" % i)
            tails = [p.send("t", b"4")]
            assert _ready_kinds(p, "t", 0) == ["chunk"]
            assert await p.flush(10) == 0
            assert tails[0].result() == (0, 4) and tails[0].attempts == 1
            assert_accounting(p, held=0)
        assert cluster.values("t") == [b"%d" % i for i in range(5)]

    scenario(body, brokers=1)


def test_messages_sent_without_keeping_handles_cost_the_collector_nothing_while_they_wait() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        config = batched(cluster, batch_num_messages=1000, linger_ms=10_000, queue_buffering_max_messages=10_000)
        async with running(config) as p:
            await cluster.brokers[1].stop()
            p.send("t", b"first")  # the queue exists from here on
            gc.collect()
            before = len(gc.get_objects())
            for _ in range(5000):
                p.send("t", b"v")
            gc.collect()
            assert (
                len(gc.get_objects()) - before <= 10 * 6
            )  # about ten per batch of 1000 (5000 messages), none per message
            assert p.held == 5001
            await cluster.brokers[1].start()
            assert await p.flush(10) == 0
        assert len(cluster.values("t")) == 5001

    scenario(body, brokers=1)
