"""Datagrams → the daemon → tansu → confluent-kafka (CRC checks on): AnyPartition, PartitionKey (partition = key mod
partitions), every key/value emptiness combination, every codec per topic, and a 100,000-message burst with nothing
lost. Every test also checks the accounting: received = delivered + discarded + in flight."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
from kafkaclient import KafkaClient

from bruce.proxy.config import Broker, CompressionCodec, CompressionConfig, CompressionType
from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.wire.compression import Codec

from .harness import DaemonThread, consume_topic, make_config

pytestmark = pytest.mark.e2e


def test_any_partition_messages_reach_every_partition_once(
    start_daemon: Callable[..., DaemonThread], new_topic: Callable[..., str], tansu: EmbeddedBroker
) -> None:
    topic = new_topic(partitions=4)
    d = start_daemon()
    values = [b"any-%04d" % i for i in range(400)]
    with d.client() as client:
        for i, value in enumerate(values):
            client.send_any_partition(topic, value)
            if i % 100 == 99:
                d.settle(i + 1)  # several batches, so the partition cycle moves on
    a = d.settle(len(values))
    assert (a.received, a.delivered, a.discarded) == (400, 400, 0)
    reads = consume_topic(tansu.address, topic, 4, len(values))
    assert sorted(r.value for r in reads) == values  # each exactly once
    assert {r.partition for r in reads} == {0, 1, 2, 3}
    assert {r.key for r in reads} == {None}  # an empty key is absent (null), as Bruce sends it


def test_partition_key_is_key_mod_partitions(
    start_daemon: Callable[..., DaemonThread], new_topic: Callable[..., str], tansu: EmbeddedBroker
) -> None:
    topic = new_topic(partitions=5)
    d = start_daemon()
    keys = [*range(23), -1, -7, 2**31 - 1]
    with d.client() as client:
        for k in keys:
            client.send_partition_key(topic, k, b"pk-%d" % k)
    d.settle(len(keys))
    reads = consume_topic(tansu.address, topic, 5, len(keys))
    where = {r.value: r.partition for r in reads}
    assert len(reads) == len(keys)
    assert where == {b"pk-%d" % k: (k & 0xFFFFFFFF) % 5 for k in keys}


@pytest.mark.parametrize("kind", ["any_partition", "partition_key"])
def test_every_key_value_emptiness_round_trips(
    kind: str, start_daemon: Callable[..., DaemonThread], new_topic: Callable[..., str], tansu: EmbeddedBroker
) -> None:
    """Bruce's KeyValue scenario: empty/empty, key only, value only, both; each sent twice."""
    topic = new_topic(partitions=1)
    d = start_daemon()
    combos = [(b"", b""), (b"key", b""), (b"", b"value"), (b"key", b"value")] * 2
    with d.client() as client:
        for key, value in combos:
            if kind == "any_partition":
                client.send_any_partition(topic, value, key)
            else:
                client.send_partition_key(topic, 0, value, key)
    a = d.settle(len(combos))
    assert (a.delivered, a.discarded) == (8, 0)
    reads = sorted(consume_topic(tansu.address, topic, 1, len(combos)), key=lambda r: r.offset)
    # Empty means absent: written as null on every protocol, as Bruce does.
    assert [(r.key, r.value) for r in reads] == [(k or None, v or None) for k, v in combos]


CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def test_every_codec_per_topic_compression(
    start_daemon: Callable[..., DaemonThread],
    new_topic: Callable[..., str],
    tansu: EmbeddedBroker,
    brokers: tuple[Broker, ...],
) -> None:
    """One topic per codec (the compression config's topicConfigs); the broker stores each batch with its topic's
    codec (read raw), and confluent-kafka decodes every message."""
    topics = {codec: new_topic(partitions=1, prefix=f"codec-{codec}") for codec in CODECS}
    compression = CompressionConfig(
        default_topic="none",
        named_configs={codec: CompressionCodec(CompressionType(codec), min_size=0) for codec in CODECS},
        topic_configs={topic: codec for codec, topic in topics.items()},
    )
    d = start_daemon(make_config(brokers, messages=50, time_ms=1000, compression=compression))
    values = [b"compress me %05d " % i * 4 for i in range(200)]
    with d.client() as client:
        for topic in topics.values():
            for value in values:
                client.send_any_partition(topic, value)
    a = d.settle(len(values) * len(topics))
    assert a.discarded == 0
    assert d.counter("MsgSetCompressionYes") >= 4  # at least one compressed set for each of the four codecs
    for codec, topic in topics.items():
        reads = consume_topic(tansu.address, topic, 1, len(values))
        assert [r.value for r in sorted(reads, key=lambda r: r.offset)] == values, codec
        assert stored_codec(tansu, topic) == Codec[codec.upper()], codec


def test_burst_of_100k_messages_nothing_lost(
    start_daemon: Callable[..., DaemonThread],
    new_topic: Callable[..., str],
    tansu: EmbeddedBroker,
    brokers: tuple[Broker, ...],
) -> None:
    """100,000 messages as fast as one blocking client sends them, with a budget that holds them all: every one is
    delivered (no discard at all) and read back exactly once."""
    topic = new_topic(partitions=4)
    d = start_daemon(make_config(brokers, messages=2000, time_ms=5), msg_buffer_max=256 * 1024)
    count = 100_000
    with d.client() as client:
        for i in range(count):
            client.send_any_partition(topic, b"%06d" % i + b"x" * 94)
    a = d.settle(count, timeout=120)
    assert (a.received, a.delivered, a.discarded) == (count, count, 0)
    reads = consume_topic(tansu.address, topic, 4, count, timeout=120)
    seen = Counter(r.value[:6] for r in reads)
    assert len(reads) == count and len(seen) == count, (len(reads), len(seen))


def stored_codec(tansu: EmbeddedBroker, topic: str) -> Codec:
    """The codec in the attributes of the first record batch stored for ``topic`` (fetched raw)."""
    with KafkaClient.connect(tansu.address) as c:
        records = c.fetch(topic, 0, 0).records or b""
    assert len(records) > 23 and records[16] == 2, "expected a RecordBatch v2"
    return Codec(int.from_bytes(records[21:23], "big") & 0x7)


@pytest.mark.parametrize("omit_timestamp", [False, True], ids=["with-timestamp", "omit-timestamp"])
def test_old_output_format(
    omit_timestamp: bool,
    start_daemon: Callable[..., DaemonThread],
    new_topic: Callable[..., str],
    tansu: EmbeddedBroker,
) -> None:
    """--use_old_output_format: the value written to Kafka is "<ts> <topic> <value>" ("<topic> <value>" with
    --omit_timestamp)."""
    topic = new_topic(partitions=1)
    d = start_daemon(use_old_output_format=True, omit_timestamp=omit_timestamp)
    with d.client() as client:
        client.send_any_partition(topic, b"legacy", timestamp=1_700_000_000_123)
    d.settle(1)
    (read,) = consume_topic(tansu.address, topic, 1, 1)
    prefix = b"" if omit_timestamp else b"1700000000123 "
    assert read.value == prefix + topic.encode() + b" legacy"
