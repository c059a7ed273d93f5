"""Bruce's per-topic compression rules through the producer's policy hook (docs/bruce-compatibility.md#compression): the
minSize boundary, the size threshold boundary, a failing codec, zstd where the broker cannot take it — and Bruce's
integration scenario 7 against the fake cluster speaking Kafka 0.8."""

from __future__ import annotations

import asyncio
import math
import os
import struct
from typing import Any

import pytest
from fakebroker import FakeCluster
from fakebroker.harness import bruce_config, scenario, wait_for

from bruce.producer import Producer
from bruce.producer.queues.request import NO_COMPRESSION, encode_records
from bruce.proxy.config.model import (
    CompressionCodec,
    CompressionConfig,
    CompressionType,
    Config,
    TopicAction,
    TopicBatching,
)
from bruce.proxy.routing.batcher import Batcher
from bruce.proxy.routing.compression_policy import TopicCompression
from bruce.proxy.routing.router import Router
from bruce.wire.compression import Codec

from .helpers import config, limits, msg


def compression(
    default: str = "snappy", *, threshold: int = 100, min_size: int = 0, **topics: str
) -> CompressionConfig:
    named = {
        "none": CompressionCodec(CompressionType.NONE),
        **{t.value: CompressionCodec(t, min_size=min_size) for t in CompressionType if t is not CompressionType.NONE},
    }
    return CompressionConfig(
        default_topic=default, named_configs=named, size_threshold_percent=threshold, topic_configs=topics
    )


def policy(default: str = "snappy", **kw: Any) -> TopicCompression:
    return TopicCompression(config(compression=compression(default, **kw)))


def values(*sizes: int) -> list:
    return [msg("t", b"v" * n) for n in sizes]


def codec_of(records: bytes) -> int:
    """The codec in the attributes of the first entry: magic 2 batches keep them at byte 21, magic 0/1 at byte 17."""
    magic = records[16]
    return (struct.unpack_from(">h", records, 21)[0] if magic == 2 else records[17]) & 0x07


def test_min_size_counts_key_plus_value_plus_26_per_message() -> None:
    """Bruce's scenario 7 numbers: minSize = 1 + 10·(9 + 26); ten 9-byte values stay plain, one byte more compresses."""
    p = policy(min_size=1 + 10 * (9 + 26))
    assert p("t", values(*[9] * 10)) is NO_COMPRESSION
    assert p("t", values(10, *[9] * 9)).codec is Codec.SNAPPY
    assert p("t", values(*[9] * 9)) is NO_COMPRESSION  # the 26 counts per message: 9 messages are far below


def test_keys_count_towards_min_size() -> None:
    p = policy(min_size=100)
    assert p("t", [msg("t", b"v" * 10, key=b"k" * 63)]) is NO_COMPRESSION  # 10 + 63 + 26 = 99
    assert p("t", [msg("t", b"v" * 10, key=b"k" * 64)]).codec is Codec.SNAPPY  # 100


def test_codec_per_topic_and_threshold_passed_on() -> None:
    p = policy("zstd", threshold=60, plain="none", g="gzip", l4="lz4", s="snappy")
    batch = values(100)
    assert p("plain", batch) is NO_COMPRESSION
    assert {t: p(t, batch).codec for t in ["any", "g", "l4", "s"]} == {
        "any": Codec.ZSTD,
        "g": Codec.GZIP,
        "l4": Codec.LZ4,
        "s": Codec.SNAPPY,
    }
    assert {p(t, batch).threshold_percent for t in ["any", "g", "l4", "s"]} == {60}


def test_size_threshold_boundary() -> None:
    """Compressed only if compressed ≤ threshold % of plain: find the exact percentage for a set and try both sides."""
    batch = [msg("t", b"abcdefgh" * 40 + os.urandom(120)) for _ in range(20)]
    plain, codec, note = encode_records(batch, NO_COMPRESSION, magic=2, zstd=True)
    compressed, _, _ = encode_records(batch, policy("gzip")("t", batch), magic=2, zstd=True)
    assert codec_of(compressed) == Codec.GZIP and len(compressed) < len(plain)
    exact = math.ceil(len(compressed) * 100 / len(plain))
    at = policy("gzip", threshold=exact)("t", batch)
    data, codec, note = encode_records(batch, at, magic=2, zstd=True)
    assert (codec, note, codec_of(data)) == (Codec.GZIP, "", Codec.GZIP)
    below = policy("gzip", threshold=exact - 1)("t", batch)
    data, codec, note = encode_records(batch, below, magic=2, zstd=True)
    assert (codec, note, codec_of(data)) == (Codec.NONE, "NotCompressible", Codec.NONE)
    assert data == plain


def test_a_failing_codec_falls_back_to_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    import bruce.wire.recordbatch as recordbatch

    def broken(codec, data, **kwargs):
        raise RuntimeError("codec library failed")

    monkeypatch.setattr(recordbatch, "compress", broken)  # what every record batch is compressed with
    batch = values(50, 50)
    data, codec, note = encode_records(batch, policy("lz4")("t", batch), magic=2, zstd=True)
    assert (codec, note, codec_of(data)) == (Codec.NONE, "Error", Codec.NONE)


@pytest.mark.parametrize(("magic", "zstd"), [(0, False), (1, False), (2, False)])
def test_zstd_where_the_broker_cannot_take_it_goes_plain(magic: int, zstd: bool) -> None:
    batch = values(200, 200)
    data, codec, note = encode_records(batch, policy("zstd")("t", batch), magic=magic, zstd=zstd)
    assert (codec, note, codec_of(data)) == (Codec.NONE, "Unsupported", Codec.NONE)
    data, codec, note = encode_records(batch, policy("zstd")("t", batch), magic=2, zstd=True)
    assert (codec, note, codec_of(data)) == (Codec.ZSTD, "", Codec.ZSTD)


def test_the_topic_cache_is_bounded() -> None:
    p = TopicCompression(config(compression=compression()), max_topics=5)
    for i in range(50):
        assert p(f"t{i}", values(10)).codec is Codec.SNAPPY
    assert len(p._topics) <= 5  # internal: the bound under test


# ---------------------------------------------------------------- against the fake cluster


async def _run_through_daemon_path(
    cluster: FakeCluster, cfg: Config, sends: list[list[bytes]], **producer_kw: Any
) -> Producer:
    """Route each group of values through router + batcher + producer (with the daemon's compression policy) and wait
    until the cluster has them all."""
    async with Producer(bruce_config(cluster.bootstrap, **producer_kw), compression=TopicCompression(cfg)) as p:
        await p.ready(5)
        loop = asyncio.get_running_loop()
        router = Router(
            cluster=p.cluster,
            batcher=Batcher(cfg.batching_for, p.submit),
            discard=lambda m, reason: pytest.fail(f"discarded: {reason}"),
            message_max_bytes=cfg.batching.message_max_bytes,
        )
        total = 0
        for group in sends:
            for value in group:
                router.route(msg("t", value, loop.time()))
            total += len(group)
            await wait_for(lambda n=total: len(cluster.values("t")) == n, what="delivery")
    return p


def test_bruce_scenario_7_min_size_on_kafka_08() -> None:
    """perTopic batches of 10, snappy with minSize 1 + 10·(9 + 26): ten 9-byte values go as one plain set; with one
    value a byte longer, as one snappy set (Bruce's integration test 7)."""
    cfg = config(
        named={"ten": limits(messages=10)},
        default=TopicBatching(TopicAction.PER_TOPIC, "ten"),
        compression=compression(min_size=1 + 10 * (9 + 26)),
    )
    first = [b"%09d" % i for i in range(10)]
    second = [b"%010d" % 0] + [b"%09d" % i for i in range(1, 10)]

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        producer = await _run_through_daemon_path(cluster, cfg, [first, second], produce_request_data_limit=1 << 20)
        sets = [p.records for s in cluster.requests("Produce") for t in s.body.topic_data for p in t.partition_data]
        assert [codec_of(r) for r in sets] == [Codec.NONE, Codec.SNAPPY]
        assert cluster.values("t") == first + second
        assert {s.version for s in cluster.requests("Produce")} == {0}
        assert producer.counters.get("MsgSetCompressionNo") == 0  # the plain set was never meant to be compressed
        assert producer.counters.get("MsgSetCompressionYes") == 1

    scenario(body, brokers=1, legacy=True)


def test_zstd_to_kafka_08_is_sent_plain_and_counted() -> None:
    cfg = config(
        named={"five": limits(messages=5)},
        default=TopicBatching(TopicAction.PER_TOPIC, "five"),
        compression=compression("zstd"),
    )
    values_ = [b"value %d " % i * 20 for i in range(5)]

    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        producer = await _run_through_daemon_path(cluster, cfg, [values_], produce_request_data_limit=1 << 20)
        (request,) = cluster.requests("Produce")
        assert codec_of(request.body.topic_data[0].partition_data[0].records) == Codec.NONE
        assert cluster.values("t") == values_
        assert producer.counters.get("MsgSetCompressionUnsupported") == 1
        assert producer.counters.get("MsgSetCompressionNo") == 1

    scenario(body, brokers=1, legacy=True)
