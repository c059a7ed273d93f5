"""Limits and lifecycle against the fake broker: key/value emptiness, acks=0, a slow broker filling the queue (send
fails fast), the close deadline, unknown topics, request data limits, compression fallbacks, several requests in
flight keeping per-partition order, and a crashed task stopping the producer loudly."""

from __future__ import annotations

import asyncio
import time

import pytest
from fakebroker import FakeCluster, Fault
from fakebroker.harness import Outcomes, assert_accounting, bruce_config, running, scenario

from bruce.producer import Compression, DeliveryError, DiscardReason, Producer, ProducerClosed, QueueFull
from bruce.wire.compression import Codec
from bruce.wire.protocol import produce

PRODUCE = produce.KEY
COMBOS = [(b"", b""), (b"key", b""), (b"", b"value"), (b"key", b"value")]


@pytest.mark.parametrize("empty_as_null", [False, True])
@pytest.mark.parametrize("legacy", [False, True], ids=["modern", "legacy"])
def test_key_value_emptiness_round_trips(legacy: bool, empty_as_null: bool) -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(bruce_config(cluster.bootstrap, empty_as_null=empty_as_null)) as p:
            for key, value in COMBOS * 2:
                p.send("t", value, key=key, partition=0)
            p.send("t", None, key=None, partition=0)
            assert await p.flush(5) == 0
            assert_accounting(p, held=0)
        got = [(r.key, r.value) for r in cluster.records("t", 0)]
        # Bruce writes an empty key or value as null (length -1); a library user's b"" stays empty by default
        expected = [(k or None, v or None) for k, v in COMBOS * 2] if empty_as_null else COMBOS * 2
        assert got == [*expected, (None, None)]

    scenario(body, legacy=legacy, brokers=1)


def test_acks_zero_messages_are_done_once_written() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = Outcomes()
        async with running(bruce_config(cluster.bootstrap, acks=0), sink=outcomes) as p:
            handles = [p.send("t", f"m{i}".encode()) for i in range(5)]
            assert await p.flush(5) == 0
            assert [h.result() for h in handles] == [(0, -1)] * 5
            assert p.counters.get("AckNotRequired") == 5
            assert_accounting(p, outcomes, held=0)
        assert cluster.values("t") == [f"m{i}".encode() for i in range(5)]
        assert all("no response" in s.outcome for s in cluster.requests("Produce"))

    scenario(body, brokers=1)


def test_linger_seals_every_partition_in_time_while_another_keeps_filling_batches() -> None:
    """A partition whose batches fill up and reopen before their linger ends must not hold back another one's."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 1])
        config = bruce_config(
            cluster.bootstrap, linger_ms=300, batch_num_messages=2, produce_request_data_limit=1 << 20
        )
        async with running(config) as p:
            p.send("t", b"a", partition=0)
            lone = p.send("t", b"b", partition=1)
            started = asyncio.get_running_loop().time()
            for _ in range(12):  # partition 0: a full batch and a new open one every 50 ms
                p.send("t", b"a", partition=0)
                p.send("t", b"a", partition=0)
                await asyncio.sleep(0.05)
                if lone.done:
                    break
            assert lone.done and lone.result() == (1, 0)
            assert asyncio.get_running_loop().time() - started < 0.5  # sealed at its own 300 ms linger
            assert await p.flush(5) == 0
            assert_accounting(p, held=0)

    scenario(body, brokers=1)


def test_slow_broker_fills_the_queue_and_send_fails_fast() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        config = bruce_config(cluster.bootstrap, queue_buffering_max_messages=5)
        async with running(config) as p:
            cluster.brokers[1].script(PRODUCE, *[Fault.delay(0.3)] * 5)
            handles = [p.send("t", b"x") for _ in range(5)]
            started = time.perf_counter()
            with pytest.raises(QueueFull):
                p.send("t", b"y")
            assert time.perf_counter() - started < 0.05
            assert p.counters.get("QueueFull") == 1
            assert await p.flush(5) == 0
            assert all(h.result()[0] == 0 for h in handles)
            p.send("t", b"room again")
            assert await p.flush(5) == 0
            assert_accounting(p, held=0)

    scenario(body, brokers=1)


@pytest.mark.parametrize(
    ("closer", "reason"),
    [("close", DiscardReason.PRODUCER_CLOSED), ("shutdown", DiscardReason.SERVER_SHUTDOWN)],
)
def test_close_deadline_discards_what_is_left_with_a_reason(closer: str, reason: DiscardReason) -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = Outcomes()
        p = Producer(bruce_config(cluster.bootstrap), sink=outcomes)
        await p.start()
        await p.ready(5)
        cluster.brokers[1].script(PRODUCE, Fault.delay(2.0))
        in_flight = p.send("t", b"slow")
        queued = p.send("t", b"behind")
        started = time.perf_counter()
        await getattr(p, closer)(0.2)
        assert time.perf_counter() - started < 1.5
        for handle in (in_flight, queued):
            with pytest.raises(DeliveryError) as caught:
                handle.result()
            assert caught.value.reason == reason
        assert outcomes.discarded_count(reason) == 2
        assert_accounting(p, outcomes, held=0)
        with pytest.raises(ProducerClosed):
            p.send("t", b"late")

    scenario(body, brokers=1)


def test_unknown_topic_is_discarded_as_bad_topic_after_a_refresh() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = Outcomes()
        async with running(bruce_config(cluster.bootstrap), sink=outcomes) as p:
            handle = p.send("nope", b"x")
            with pytest.raises(DeliveryError) as caught:
                await handle
            assert caught.value.reason == DiscardReason.BAD_TOPIC
            assert outcomes.discarded_count(DiscardReason.BAD_TOPIC) == 1
            assert_accounting(p, outcomes, held=0)
        assert len(cluster.requests("Metadata")) == 2  # the initial fetch, then one on demand

    scenario(body, brokers=1)


def test_topic_created_after_start_is_found_by_the_on_demand_refresh() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(bruce_config(cluster.bootstrap)) as p:
            cluster.add_topic("new", [1])
            assert await p.send("new", b"x") == (0, 0)
            assert_accounting(p, held=0)

    scenario(body, brokers=1)


def test_request_data_limit_groups_messages_first_always_included() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        config = bruce_config(cluster.bootstrap, produce_request_data_limit=10, batch_num_messages=100, linger_ms=50)
        async with running(config) as p:
            for size in (4, 4, 4, 30, 1):
                p.send("t", b"v" * size)
            assert await p.flush(5) == 0
            assert_accounting(p, held=0)
        counts = [len(s.produced[0][2]) for s in cluster.requests("Produce")]
        assert counts == [2, 1, 1, 1]  # 4+4 ≤ 10; 4 then 30 alone (first message always); 1

    scenario(body, brokers=1)


@pytest.mark.parametrize("legacy", [False, True], ids=["modern", "legacy"])
def test_codec_policy_and_zstd_fallback(legacy: bool) -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("gz", [1])
        cluster.add_topic("zs", [1])

        def policy(topic: str, messages: object) -> Compression:
            return Compression(Codec.GZIP if topic == "gz" else Codec.ZSTD)

        async with running(bruce_config(cluster.bootstrap), compression=policy) as p:
            p.send("gz", b"a" * 100)
            p.send("zs", b"b" * 100)
            assert await p.flush(5) == 0
            assert p.counters.get("MsgSetCompressionUnsupported") == (1 if legacy else 0)
            assert_accounting(p, held=0)
        assert cluster.values("gz") == [b"a" * 100] and cluster.values("zs") == [b"b" * 100]

    scenario(body, brokers=1, legacy=legacy)


def test_compressed_message_set_is_capped_by_message_max_bytes() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        config = bruce_config(
            cluster.bootstrap,
            compression_codec="gzip",
            produce_request_data_limit=10_000,
            message_max_bytes=100,
            batch_num_messages=10,
        )
        async with running(config) as p:
            for _ in range(10):
                p.send("t", b"x" * 20)  # 20 + 26 per message: two fit in 100 bytes
            assert await p.flush(5) == 0
            assert_accounting(p, held=0)
        assert [len(s.produced[0][2]) for s in cluster.requests("Produce")] == [2] * 5  # Bruce's rule

    scenario(body, brokers=1, legacy=True)


def test_several_requests_in_flight_never_two_for_one_partition() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 1, 1])
        config = bruce_config(cluster.bootstrap, max_in_flight_per_broker=3, produce_request_data_limit=1)
        async with running(config) as p:
            cluster.brokers[1].script(PRODUCE, *[Fault.delay(0.05)] * 12)
            handles = [p.send("t", f"{i % 3}:{i}".encode(), partition=i % 3) for i in range(12)]
            assert await p.flush(5) == 0
            assert_accounting(p, held=0)
            assert all(h.result()[1] == i // 3 for i, h in enumerate(handles))
        for partition in range(3):
            values = [r.value for r in cluster.records("t", partition)]
            assert values == [f"{partition}:{i}".encode() for i in range(partition, 12, 3)]

    scenario(body, brokers=1)


def test_a_crashed_task_stops_the_producer_loudly() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        p = Producer(bruce_config(cluster.bootstrap), compression=lambda topic, ms: 1 / 0)  # type: ignore[arg-type,return-value]
        with pytest.raises(BaseExceptionGroup) as caught:
            async with p:
                await p.ready(5)
                p.send("t", b"x")
                await asyncio.sleep(5)
        assert caught.group_contains(ZeroDivisionError)

    scenario(body, brokers=1)


def test_an_error_in_the_body_propagates_as_it_is_and_everything_stops() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        p = Producer(bruce_config(cluster.bootstrap))
        with pytest.raises(ProducerClosed):
            p.send("t", b"too early")
        with pytest.raises(ValueError, match="mine"):
            async with p:
                await p.ready(5)
                handle = p.send("t", b"x")
                raise ValueError("mine")
        assert handle.done and p.held == 0
        assert_accounting(p)
        with pytest.raises(ProducerClosed):
            p.send("t", b"too late")

    scenario(body, brokers=1)
