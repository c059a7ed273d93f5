"""The daemon's routing path against a real broker: router → batcher (combined, per-topic) → producer with the
daemon's compression policy (every codec) → tansu, read back by confluent-kafka with CRC checks. Every message
arrives once where its delivery handle says, PartitionKey messages land on ``key % partitions``, and within a
partition the keyed and the keyless messages each keep the order they were sent in (a batch's keyless messages go
to their partition together, after its keyed ones, as Bruce's separate batchers did)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from readback import read_back

from bruce.producer import Producer, ProducerConfig
from bruce.proxy.config.model import (
    CompressionCodec,
    CompressionConfig,
    CompressionType,
    TopicAction,
    TopicBatching,
)
from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.proxy.messages.message import HeldMessage
from bruce.proxy.routing.batcher import Batcher
from bruce.proxy.routing.compression_policy import TopicCompression
from bruce.proxy.routing.router import Router, message_overhead

from .helpers import config, limits, msg

pytestmark = pytest.mark.e2e

PARTITIONS = 4
PER_TOPIC_COUNT = 3000


def read_partition(address: str, topic: str, partition: int, expected: int, timeout: float = 30.0) -> list[bytes]:
    """Values of ``partition`` from offset 0 as confluent-kafka reads them (CRC checks on); fails on any error."""
    return [m.value() for m in read_back(address, topic, [partition], expected, timeout=timeout)]


def test_router_batcher_and_compression_deliver_to_tansu(tansu: EmbeddedBroker, new_topic: Callable[..., str]) -> None:
    codecs = ["gzip", "snappy", "lz4", "zstd"]
    topics = {codec: new_topic(partitions=PARTITIONS, prefix=f"routing-{codec}") for codec in codecs}
    cfg = config(
        named={"shared": limits(1, None, 64 * 1024), "own": limits(1, 500, None)},
        combined="shared",
        default=TopicBatching(TopicAction.COMBINED_TOPICS),
        topics={topics["lz4"]: TopicBatching(TopicAction.PER_TOPIC, "own")},
        compression=CompressionConfig(
            default_topic="none",
            named_configs={
                "none": CompressionCodec(CompressionType.NONE),
                **{c: CompressionCodec(CompressionType(c), min_size=1024) for c in codecs},
            },
            size_threshold_percent=90,
            topic_configs={topic: codec for codec, topic in topics.items()},
        ),
    )
    sent: dict[str, list[HeldMessage]] = {t: [] for t in topics.values()}

    async def main() -> Producer:
        producer_config = ProducerConfig(bootstrap_servers=(tansu.address,), produce_request_data_limit=256 * 1024)
        discards = []
        async with Producer(producer_config, compression=TopicCompression(cfg), require_topics=True) as producer:
            await producer.ready(10)
            loop = asyncio.get_running_loop()
            batcher = Batcher(cfg.batching_for, producer.submit)
            router = Router(
                cluster=producer.cluster,
                batcher=batcher,
                discard=lambda m, reason: discards.append(reason),
                message_max_bytes=cfg.batching.message_max_bytes,
                message_overhead=message_overhead(producer_config.protocol),
            )
            for i in range(PER_TOPIC_COUNT):
                for topic in topics.values():
                    m = msg(topic, b"%06d " % i + b"payload " * (i % 20), loop.time(), pk=i % 97 if i % 2 else None)
                    sent[topic].append(m)
                    router.route(m)
                if i % 500 == 0:
                    await asyncio.sleep(0)  # let the senders run, as the daemon's loop would
                    batcher.expire(loop.time())
            batcher.flush_all()
            assert await producer.flush(60) == 0
            assert discards == []
            assert producer.delivered == producer.accepted == PER_TOPIC_COUNT * len(topics)
        return producer

    producer = asyncio.run(main())
    assert producer.counters.get("MsgSetCompressionYes") > 0
    assert producer.counters.get("MsgSetCompressionError") == 0
    for topic, messages in sent.items():
        by_partition: dict[int, list[HeldMessage]] = {}
        for m in messages:  # each message is its own delivery handle: where did it land?
            by_partition.setdefault(m.partition, []).append(m)
        assert sorted(by_partition) == list(range(PARTITIONS)), topic
        for p, landed in by_partition.items():
            landed.sort(key=lambda m: m.offset)
            assert [m.offset for m in landed] == list(range(len(landed))), f"{topic}/{p}: offsets"
            assert read_partition(tansu.address, topic, p, len(landed)) == [m.value for m in landed], f"{topic}/{p}"
            keyed = [m for m in landed if m.partition_key is not None]
            assert all(m.partition_key % PARTITIONS == p for m in keyed), f"{topic}/{p}: PartitionKey placement"
            for kind in (keyed, [m for m in landed if m.partition_key is None]):
                sequence = [messages.index(m) for m in kind]
                assert sequence == sorted(sequence), f"{topic}/{p}: out of order"
