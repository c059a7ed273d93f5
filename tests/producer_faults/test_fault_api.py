"""The producer's public hooks against the fake broker: the sink's ``sent`` hook, the connection and in-flight
gauges, ``send`` with a PartitionKey, ``close`` with a reason and the caller's error, and an unknown topic settled by
the first metadata fetch."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from fakebroker import FakeCluster, Fault
from fakebroker.harness import Outcomes, assert_accounting, bruce_config, running, scenario, wait_for

from bruce.producer import DeliveryError, DiscardReason, Message, Producer, partition_for_key
from bruce.producer.dispatch import sender as sender_module
from bruce.wire.errors import UsageError
from bruce.wire.protocol import produce

PRODUCE = produce.KEY


class SentOutcomes(Outcomes):
    """Records ``sent`` in the same event list order as the fates."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, list[bytes | None]]] = []

    def sent(self, topic: str, partition: int, messages: Sequence[Message]) -> None:
        self.events.append(("sent", [m.value for m in messages]))

    def delivered(self, topic: str, partition: int, base_offset: int, messages: Sequence[Message]) -> None:
        super().delivered(topic, partition, base_offset, messages)
        self.events.append(("delivered", [m.value for m in messages]))

    def possible_duplicates(self, topic: str, messages: Sequence[Message]) -> None:
        super().possible_duplicates(topic, messages)
        self.events.append(("dup", [m.value for m in messages]))


def test_sent_is_heard_per_written_request_before_its_ack_and_again_on_a_resend() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = SentOutcomes()
        async with running(bruce_config(cluster.bootstrap), sink=outcomes) as p:
            cluster.brokers[1].script(PRODUCE, Fault.disconnect())  # stored, then the connection drops
            handle = p.send("t", b"a")
            assert await p.flush(5) == 0
            assert handle.result() == (0, 1) and handle.possible_duplicate
            assert_accounting(p, outcomes, held=0)
        assert outcomes.events == [("sent", [b"a"]), ("dup", [b"a"]), ("sent", [b"a"]), ("delivered", [b"a"])]

    scenario(body, brokers=1)


def test_connected_brokers_and_requests_in_flight() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2])
        async with running(bruce_config(cluster.bootstrap)) as p:
            assert (p.connected_brokers(), p.requests_in_flight()) == (0, 0)  # metadata connections do not count
            cluster.brokers[1].script(PRODUCE, Fault.delay(0.5))
            cluster.brokers[2].script(PRODUCE, Fault.delay(0.5))
            handles = [p.send("t", b"x", partition=0), p.send("t", b"y", partition=1)]
            await wait_for(lambda: p.requests_in_flight() == 2, what="both requests written")
            assert p.connected_brokers() == 2
            await asyncio.gather(*handles)
            assert p.requests_in_flight() == 0 and p.connected_brokers() == 2
            await cluster.brokers[2].stop()
            await wait_for(lambda: p.connected_brokers() == 1, what="the closed connection to be noticed")
        assert (p.connected_brokers(), p.requests_in_flight()) == (0, 0)

    scenario(body)


def test_send_with_a_partition_key_follows_bruces_partition_key_rule() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2, 1, 2])
        async with running(bruce_config(cluster.bootstrap)) as p:
            await cluster.brokers[1].stop()
            p.request_metadata_refresh()
            await wait_for(lambda: p.available_partitions("t") == (1, 3), what="broker 1 gone from metadata")
            info = p.cluster().topic("t")  # type: ignore[union-attr]
            keys = [0, 1, 2, 3, 6, 2**32 - 1, -1, -(2**31)]
            handles = [p.send("t", b"v", key=b"ignored for routing", partition_key=k) for k in keys]
            assert await p.flush(5) == 0
            # key % 4 over all partitions; 0 and 2 are unavailable, so their keys move to the next available one
            assert [h.partition for h in handles] == [partition_for_key(k, info) for k in keys]
            assert [h.partition for h in handles] == [1, 1, 3, 3, 3, 3, 3, 1]
            assert_accounting(p, held=0)

    scenario(body)


def test_the_class_send_and_the_instance_send_queue_the_same_messages() -> None:
    """An instance's ``send`` is bound to its queueing object once (no extra call per message); ``Producer.send``
    called through the class (a subclass's ``super().send``) hands every argument over the same way."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 1, 1])
        async with running(bruce_config(cluster.bootstrap)) as p:
            headers = [("h", b"x")]
            args = ("t", b"v", b"k", 2, 1_700_000_000_000, headers)
            pairs = [(p.send(*args), Producer.send(p, *args))]
            keyed = {"partition_key": -7, "timestamp": 5}
            pairs.append((p.send("t", b"v", **keyed), Producer.send(p, "t", b"v", **keyed)))  # type: ignore[arg-type]
            pairs.append((p.send("t", b"v", b"key", timestamp=5), Producer.send(p, "t", b"v", b"key", timestamp=5)))
            assert await p.flush(5) == 0
            fields = lambda m: (m.key, m.value, m.timestamp, m.headers, m.partition, m.partition_key)  # noqa: E731
            for bound, through_class in pairs:
                assert fields(bound) == fields(through_class)
            assert fields(pairs[0][0]) == (b"k", b"v", 1_700_000_000_000, headers, 2, 2)
            assert pairs[1][0].partition == partition_for_key(-7, p.cluster().topic("t"))  # type: ignore[union-attr]
            bulk = Producer.send_many(p, "t", [b"a", b"b"], partition=1, timestamp=5)
            await bulk
            assert [r[0] for r in bulk.results()] == [1, 1]  # type: ignore[index]
            assert_accounting(p, held=0)
            assert p.accepted == 8

    scenario(body, brokers=1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"partition": 0, "partition_key": 1}, "not both"),
        ({"partition_key": 2**32}, "32 bits"),
        ({"partition_key": -(2**31) - 1}, "32 bits"),
        ({"partition_key": "7"}, "32 bits"),
        ({"partition_key": True}, "32 bits"),
        ({"partition": "3"}, "partition must be an int"),
        ({"partition": -1}, "partition must be an int ≥ 0"),
        ({"timestamp": 1.5}, "timestamp must be an int"),
        ({"timestamp": 2**62}, "within ±2"),
        ({"headers": [("k", "text")]}, "headers must be"),
        ({"headers": [(b"k", b"v")]}, "headers must be"),
        ({"headers": [("k",)]}, "headers must be"),
        ({"headers": 7}, "headers must be"),
    ],
)
def test_bad_arguments_are_refused_and_nothing_is_queued(kwargs: dict, message: str) -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(bruce_config(cluster.bootstrap)) as p:
            with pytest.raises(UsageError, match=message):
                p.send("t", b"x", **kwargs)
            assert (p.accepted, p.held) == (0, 0)

    scenario(body, brokers=1)


def test_submitted_timestamps_no_record_batch_can_hold_are_discarded_and_the_rest_delivered() -> None:
    """A daemon client may send any 64-bit timestamp; two extremes in one batch would not encode (varlong deltas)."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = Outcomes()
        config = bruce_config(cluster.bootstrap, produce_request_data_limit=1 << 20)
        async with running(config, sink=outcomes) as p:
            batch = [Message(None, b"a", -(2**63)), Message(None, b"b", 5), Message(None, b"c", 2**63 - 1)]
            p.submit("t", batch)
            p.submit("t", [Message(None, b"d", 2**62)])
            assert await p.flush(5) == 0
            assert [m.error.reason if m.error else m.partition for m in batch] == ["MALFORMED", 0, "MALFORMED"]
            assert outcomes.discarded_count(DiscardReason.MALFORMED) == 3
            assert_accounting(p, outcomes, held=0)
        assert cluster.values("t") == [b"b"]

    scenario(body, brokers=1)


def test_close_with_the_callers_error_and_a_reason_after_a_task_crashed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon's crash path: a producer task fails, the task running the producer is cancelled; ``close`` with
    that cancellation and SERVER_SHUTDOWN discards what is held with that reason and raises the crash."""

    async def broken(self: object) -> None:
        raise RuntimeError("sender failed on purpose")

    monkeypatch.setattr(sender_module.Sender, "run", broken)

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = Outcomes()
        p = Producer(bruce_config(cluster.bootstrap), sink=outcomes)
        await p.start()
        await p.ready(5)
        handles = [p.send("t", b"x%d" % i) for i in range(3)]
        with pytest.raises(BaseExceptionGroup) as caught:
            try:
                await asyncio.sleep(5)  # cancelled by the producer's task group when the sender fails
            except asyncio.CancelledError as cancelled:
                await p.close(0.0, DiscardReason.SERVER_SHUTDOWN, error=cancelled)
        assert caught.group_contains(RuntimeError, match="on purpose")
        for handle in handles:
            with pytest.raises(DeliveryError) as failed:
                handle.result()
            assert failed.value.reason == DiscardReason.SERVER_SHUTDOWN
        assert outcomes.discarded_count(DiscardReason.SERVER_SHUTDOWN) == 3
        assert_accounting(p, outcomes, held=0)

    scenario(body, brokers=1)


def test_close_with_another_error_does_not_wait_and_leaves_raising_to_the_caller() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        p = Producer(bruce_config(cluster.bootstrap))
        await p.start()
        await p.ready(5)
        cluster.brokers[1].script(PRODUCE, Fault.delay(2.0))
        handle = p.send("t", b"slow")
        await wait_for(lambda: p.requests_in_flight() == 1, what="the request written")
        loop = asyncio.get_running_loop()
        started = loop.time()
        await p.close(10.0, DiscardReason.SERVER_SHUTDOWN, error=ValueError("the caller's"))  # returns: no raise
        assert loop.time() - started < 1.0  # the 10 s deadline was not waited for
        with pytest.raises(DeliveryError) as failed:
            handle.result()
        assert failed.value.reason == DiscardReason.SERVER_SHUTDOWN
        assert_accounting(p, held=0)
        await p.close()  # a second close does nothing

    scenario(body, brokers=1)


def test_a_message_for_an_unknown_topic_sent_before_the_first_metadata_is_settled_by_it() -> None:
    """The first fetch begins after the message arrived (whatever the clocks say), so its answer settles the topic:
    BAD_TOPIC at once, with no second fetch."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        config = bruce_config(cluster.bootstrap, metadata_min_interval_ms=60_000, metadata_retry_backoff_max_ms=60_000)
        async with Producer(config) as p:
            handle = p.send("nope", b"x")
            await p.ready(5)
            assert handle.done and handle.error is not None
            assert handle.error.reason == DiscardReason.BAD_TOPIC
            assert_accounting(p, held=0)
        assert len(cluster.requests("Metadata")) == 1

    scenario(body, brokers=1)


def test_a_bytes_topic_is_refused_at_once_naming_the_topic() -> None:
    """Not an unknown topic found later (BAD_TOPIC): a TypeError (and UsageError) at the call, nothing queued."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("ok", [1])
        async with running(bruce_config(cluster.bootstrap)) as p:
            with pytest.raises(TypeError, match=r"topic must be a str, not bytes \(decode it"):
                p.send(b"ok", b"x")  # type: ignore[arg-type]
            with pytest.raises(UsageError, match="topic must be a str, not int"):
                p.send_many(7, [b"x"])  # type: ignore[arg-type]
            assert (p.accepted, p.held) == (0, 0)
            assert (await p.send("ok", b"x")) == (0, 0)

    scenario(body, brokers=1)
