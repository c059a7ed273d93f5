"""``Producer.send_columns`` against the fake broker: rows handed over as Arrow-layout buffers land as the records they
hold (keys, values, headers, timestamps), where their runs route them (any partition, a partition key, a pinned
partition), in order per partition and after what ``send`` queued there; chunks travel whole and are encoded from the
buffers; a resend, a lost leader or a discard makes messages from the columns; refusals queue nothing; the
accounting holds at every step."""

from __future__ import annotations

import pytest
from arrow_layout import table
from fakebroker import FakeCluster, Fault
from fakebroker.harness import Outcomes, assert_accounting, bruce_config, running, scenario, wait_for

from bruce.producer import DiscardReason, MessageTooLarge, ProducerConfig, QueueFull, partition_for_key
from bruce.producer.columns import ColumnChunk
from bruce.wire.errors import UsageError
from bruce.wire.protocol import produce

PRODUCE = produce.KEY


def batched(cluster: FakeCluster, **overrides: object) -> ProducerConfig:
    """Requests of up to 1 MiB, batches of 7 rows."""
    settings = {"produce_request_data_limit": 1 << 20, "batch_num_messages": 7, **overrides}
    return bruce_config(cluster.bootstrap, **settings)


def rows(n: int) -> tuple[list[bytes | None], list[bytes | None], list[int], list]:
    values: list[bytes | None] = [None if i % 9 == 4 else b"v%03d" % i for i in range(n)]
    keys: list[bytes | None] = [None if i % 5 == 0 else b"k%d" % (i % 7) for i in range(n)]
    stamps = [1_700_000_000_000 + i * (-1) ** i for i in range(n)]
    headers = [None if i % 3 else (("h", b"%d" % i), ("n", None)) for i in range(n)]
    return values, keys, stamps, headers


def test_rows_land_as_the_records_they_hold_and_results_are_the_stored_offsets() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2, 1])
        outcomes = Outcomes()
        async with running(batched(cluster), sink=outcomes) as p:
            values, keys, stamps, headers = rows(50)
            bulk = p.send_columns("t", table(values, keys, stamps, headers))
            assert len(bulk) == 50 and p.held == 50
            assert_accounting(p, outcomes)
            assert await bulk is bulk and bulk.failures() == [] and bulk.delivered == 50
            results = bulk.results()
            assert_accounting(p, outcomes, held=0)
        stored = {(p, i): r for p in range(3) for i, r in enumerate(cluster.records("t", p))}  # by log offset
        assert len(stored) == 50
        for i, (partition, offset) in enumerate(results):
            record = stored[(partition, offset)]
            expected_headers = [] if headers[i] is None else [(k, v) for k, v in headers[i]]
            got = (record.value, record.key, record.timestamp, [(k, v) for k, v in record.headers])
            assert got == (values[i], keys[i], stamps[i], expected_headers)
        runs = [results[i : i + 7] for i in range(0, 50, 7)]  # batches of batch_num_messages, one partition each
        assert all(len({p for p, _ in run}) == 1 for run in runs)
        assert {run[0][0] for run in runs} == {0, 1, 2}  # the cycle reaches every partition

    scenario(body)


def test_runs_route_by_partition_key_pinned_partition_or_any_and_keep_order() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2, 1, 2])
        config = batched(cluster, linger_ms=10_000)
        async with running(config) as p:
            first = p.send("t", b"first", partition=3)  # open in partition 3 until send_columns seals it
            values = [b"r%02d" % i for i in range(30)]
            runs = [(10, 3, True), (12, 6, False), (20, 7, False), (30, None, False)]
            bulk = await p.send_columns("t", table(values), runs, timestamp=5)
            info = p.cluster().topic("t")
            results = bulk.results()
            assert [partition for partition, _ in results[:10]] == [3] * 10
            assert {partition for partition, _ in results[10:12]} == {partition_for_key(6, info)}
            assert {partition for partition, _ in results[12:20]} == {partition_for_key(7, info)}
            assert await first == (3, 0)
            assert_accounting(p, held=0)
        log3 = [r.value for r in cluster.records("t", 3)]
        assert log3[:19] == [b"first", *values[:10], *values[12:20]]  # 7 % 4 == 3: after the pinned run

    scenario(body)


@pytest.mark.parametrize("idempotent", [False, True])
def test_a_resent_chunk_delivers_every_row_once_as_it_was(idempotent: bool) -> None:
    """At least once, the chunk is made into messages from the columns; idempotent, its batch is sent again."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = Outcomes()
        config = batched(cluster, batch_num_messages=100, enable_idempotence=idempotent)
        async with running(config, sink=outcomes) as p:
            cluster.brokers[1].script(PRODUCE, Fault.error(7))  # REQUEST_TIMED_OUT: sent again, as messages
            values, keys, stamps, headers = rows(20)
            bulk = await p.send_columns("t", table(values, keys, stamps, headers), [(20, 0, True)])
            assert bulk.results() == [(0, i) for i in range(20)]
            assert_accounting(p, outcomes, held=0)
        got = [(r.value, r.key, r.timestamp, len(r.headers)) for r in cluster.records("t", 0)]
        assert got == [
            (v, k, ts, 0 if h is None else 2) for v, k, ts, h in zip(values, keys, stamps, headers, strict=True)
        ]

    scenario(body, brokers=1)


def test_rows_whose_leader_is_lost_are_routed_again_by_their_run() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2, 1, 2])  # broker 1 leads partitions 0 and 2
        async with running(batched(cluster)) as p:
            await cluster.brokers[1].stop()
            bulk = p.send_columns("t", table([b"a"] * 6), [(3, 0, False), (6, 0, True)], timestamp=5)
            p.request_metadata_refresh()
            await wait_for(lambda: p.available_partitions("t") == (1, 3), what="broker 1 gone from metadata")
            await bulk
            results = bulk.results()
            assert [r for r in results[:3]] == [(1, 0), (1, 1), (1, 2)]  # PartitionKey 0 moves on to partition 1
            assert {e.reason for _, e in bulk.failures()} == {DiscardReason.NO_AVAILABLE_PARTITIONS}  # pinned to 0
            assert [i for i, _ in bulk.failures()] == [3, 4, 5]
            assert_accounting(p, held=0)

    scenario(body)


def test_chunks_travel_whole_and_encode_from_the_buffers() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        config = batched(cluster, batch_num_messages=4, linger_ms=10_000)
        async with running(config) as p:
            await cluster.brokers[1].stop()
            p.send("t", b"loose", key=b"k")  # a batch of messages before the chunks
            bulk = p.send_columns("t", table([b"%d" % i for i in range(10)]), [(10, 0, True)], timestamp=5)
            pq = p._dispatcher.queue("t", 0)
            kinds = [type(batch).__name__ for batch, _, _ in pq.ready]
            assert kinds == ["list", "ColumnChunk", "ColumnChunk", "ColumnChunk"]
            assert all(batch.travels_whole for batch, _, _ in pq.ready if type(batch) is ColumnChunk)
            taken, _, _ = pq.take(1 << 20, True)
            assert [m.value for m in taken] == [b"loose"]  # the chunks are not joined to the loose batch
            pq.push_front(taken)
            await cluster.brokers[1].start()
            assert await p.flush(10) == 0
            assert all(not c.made for c in bulk._chunks)  # never read as messages: encoded from the columns
        assert cluster.values("t") == [b"loose", *[b"%d" % i for i in range(10)]]

    scenario(body, brokers=1)


@pytest.mark.parametrize(
    ("columns", "runs", "kwargs", "error", "message"),
    [
        (table([b"a"] * 6), None, {}, QueueFull, "queue_buffering_max_messages"),
        (table([b"a" * 600, b"b" * 600]), None, {}, QueueFull, "queue_buffering_max_kbytes"),
        (table([b"a" * 2000]), None, {}, MessageTooLarge, "MSG_SIZE_TOO_LARGE"),
        (table([b"a", b"b"]), [(1, None, False)], {}, UsageError, "cover 1 of 2"),
        (table([b"a", b"b"]), [(2, -1, True)], {}, UsageError, "partition -1"),
        (table([b"a", b"b"]), [(2, None, True)], {}, UsageError, "needs its partition"),
        (table([b"a"]), None, {"timestamp": 2**62}, UsageError, "within ±2"),
        (table([b"a"], stamps=[2**62]), None, {}, UsageError, "within ±2"),
        (table([b"a"], stamps=[5]), None, {"timestamp": 5}, UsageError, "without timestamps"),
        (table([b"a"], headers=[(("", b"v"), ("x", None))]), None, {}, None, ""),  # fine: an empty name is a name
    ],
)
def test_refusals_queue_none_of_the_rows(columns, runs, kwargs: dict, error: type | None, message: str) -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        config = batched(cluster, queue_buffering_max_messages=5, queue_buffering_max_kbytes=1, message_max_bytes=1500)
        async with running(config) as p:
            if error is None:
                assert (await p.send_columns("t", columns, runs, **kwargs)).failures() == []
                return
            with pytest.raises(error, match=message):
                p.send_columns("t", columns, runs, **kwargs)
            assert (p.accepted, p.held) == (0, 0)
            assert (await p.send_columns("t", table([]))).results() == []

    scenario(body, brokers=1)


def test_an_unknown_topic_holds_the_rows_as_messages_then_fails_them() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(batched(cluster)) as p:
            bulk = await p.send_columns("nope", table([b"a", b"b"], keys=[b"k", None]), [(2, 9, False)])
            assert [e.reason for _, e in bulk.failures()] == [DiscardReason.BAD_TOPIC] * 2
            assert_accounting(p, held=0)

    scenario(body, brokers=1)
