"""message.max.bytes against a broker that enforces it (the fake cluster refuses, like Kafka, any log entry larger
than its limit with MESSAGE_TOO_LARGE): every record batch is cut to fit, compressed or not, without losing or
reordering anything; a message too large for any batch goes alone and is refused alone; the legacy path keeps
Bruce's rule (plain messages are checked one by one, compressed sets capped by Σ(key + value + 26))."""

from __future__ import annotations

import pytest
from fakebroker import FakeCluster
from fakebroker.harness import Outcomes, assert_accounting, bruce_config, running, scenario

from bruce.producer import DeliveryError, DiscardReason, MessageTooLarge
from bruce.producer.queues.request import ALONE_OVERHEAD

LIMIT = 10_000


def _config(cluster: FakeCluster, **overrides: object):
    settings = dict(
        message_max_bytes=LIMIT,
        produce_request_data_limit=1024 * 1024,  # the daemon's default: far above the broker's limit
        batch_num_messages=100_000,
        batch_size=10_000_000,
        linger_ms=10_000,  # one batch, sent by flush
        queue_buffering_max_messages=100_000,
    )
    settings.update(overrides)
    return bruce_config(cluster.bootstrap, **settings)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_a_large_batch_is_cut_into_record_batches_the_broker_accepts(codec: str) -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = Outcomes()
        async with running(_config(cluster, compression_codec=codec), sink=outcomes) as p:
            values = [b"%06d" % i + b"v" * 94 for i in range(1000)]  # ~108 kB as one batch
            handles = [p.send("t", v, partition=0) for v in values]
            assert await p.flush(10) == 0
            assert_accounting(p, outcomes, held=0)
            assert p.counters.get("AckError") == 0 and p.discarded == 0
            assert [h.result() for h in handles] == [(0, i) for i in range(1000)]
        assert cluster.values("t") == values
        sizes = [size for s in cluster.requests("Produce") for size in s.entry_sizes]
        assert len(sizes) >= 11 and max(sizes) <= LIMIT  # 1000 records of 108 bytes need at least 11 batches

    scenario(body, brokers=1, message_max_bytes=LIMIT)


def test_uncut_batches_would_be_refused_by_this_broker() -> None:
    """The same traffic with a producer that believes the limit is higher: the broker refuses it (error 10), which
    is what cutting avoids."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(_config(cluster, message_max_bytes=1_000_000)) as p:
            handles = [p.send("t", b"v" * 100, partition=0) for _ in range(1000)]
            assert await p.flush(10) == 0
            with pytest.raises(DeliveryError) as caught:
                handles[0].result()
            assert caught.value.reason == DiscardReason.KAFKA_ERROR_ACK and "MESSAGE_TOO_LARGE" in str(caught.value)
            assert p.discarded == 1000
        assert len(cluster.requests("Produce")) == 1

    scenario(body, brokers=1, message_max_bytes=LIMIT)


def test_a_message_over_message_max_bytes_is_refused_at_send() -> None:
    """As confluent-kafka: MSG_SIZE_TOO_LARGE at once, nothing queued, the other messages unaffected."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(_config(cluster)) as p:
            fits = p.send("t", b"x" * (LIMIT - ALONE_OVERHEAD), partition=0)
            with pytest.raises(MessageTooLarge, match="MSG_SIZE_TOO_LARGE: 10000 bytes") as caught:
                p.send("t", b"x" * (LIMIT - 100), key=b"k" * 100, partition=0)
            assert caught.value.reason == "MSG_SIZE_TOO_LARGE"
            assert await p.flush(10) == 0 and fits.result()[0] == 0
            assert (p.accepted, p.delivered, p.counters.get("MsgSizeTooLarge")) == (1, 1, 1)
        assert len(cluster.values("t")) == 1

    scenario(body, brokers=1, message_max_bytes=LIMIT)


def test_a_message_too_large_for_the_broker_goes_alone_and_only_it_is_refused() -> None:
    """The producer's message_max_bytes above the broker's (a misconfiguration): the broker's refusal is per batch."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        outcomes = Outcomes()
        config = _config(cluster, message_max_bytes=10 * LIMIT, produce_request_data_limit=LIMIT)
        async with running(config, sink=outcomes) as p:
            before = [p.send("t", b"a%d" % i, partition=0) for i in range(50)]
            huge = p.send("t", b"x" * (2 * LIMIT), partition=0)
            after = [p.send("t", b"b%d" % i, partition=0) for i in range(50)]
            assert await p.flush(10) == 0
            with pytest.raises(DeliveryError) as caught:
                huge.result()
            assert caught.value.reason == DiscardReason.KAFKA_ERROR_ACK
            assert all(h.result()[0] == 0 for h in before + after)
            assert outcomes.discarded_count() == 1
            assert_accounting(p, outcomes, held=0)
        assert cluster.values("t") == [b"a%d" % i for i in range(50)] + [b"b%d" % i for i in range(50)]
        refused = [s for s in cluster.requests("Produce") if s.outcome == "error 10"]
        assert [len(s.produced[0][2]) for s in refused] == [1]

    scenario(body, brokers=1, message_max_bytes=LIMIT)


def test_the_legacy_path_checks_plain_messages_one_by_one() -> None:
    """Magic 0: each plain message is its own log entry, so a request far above the limit is accepted whole."""

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(_config(cluster)) as p:
            for i in range(1000):
                p.send("t", b"%06d" % i + b"v" * 94, partition=0)
            assert await p.flush(10) == 0
            assert p.delivered == 1000
        (request,) = cluster.requests("Produce")
        assert len(request.entry_sizes) == 1000 and sum(request.entry_sizes) > 10 * LIMIT

    scenario(body, brokers=1, legacy=True, message_max_bytes=LIMIT)
