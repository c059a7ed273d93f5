"""bruce.wire against a real broker (tansu): negotiation, Metadata, Produce + RecordBatch v2 with every codec read back
by confluent-kafka with CRC checks, confluent-kafka's batches read by our Fetch, ListOffsets, CreateTopics, and the
tansu behaviours the rest of the project designs around (each pinned by a test, so a change in tansu shows here)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from kafkaclient import KafkaClient
from wire_modern.api_versions_answers import TANSU_0_6

from bruce.wire.compression import Codec
from bruce.wire.errors import MalformedInput
from bruce.wire.protocol import fetch, list_offsets
from bruce.wire.protocol.metadata import metadata_request
from bruce.wire.protocol.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from bruce.wire.recordbatch import build_record_batch, decode_record_batches
from bruce.wire.records import LOG_APPEND_TIME, decode_records
from bruce.wire.versions import FETCH, LIST_OFFSETS, METADATA, PRODUCE

pytestmark = pytest.mark.e2e

BASE_TS = 1_700_000_000_000


def _records(n: int, tag: str) -> list[tuple]:
    """Distinctive records: keys, values of varied length, spread timestamps, headers on every other one."""
    out = [
        (
            f"{tag}-key-{i}".encode(),
            f"{tag}-value-{i}-".encode() * (i % 7 + 1),
            BASE_TS + 1000 * i + 0x123,
            [("h", f"{i}".encode()), ("idx", bytes([i % 256]))] if i % 2 else None,
        )
        for i in range(n)
    ]
    out.append((None, b"null-key", BASE_TS - 5, [("empty", b"")]))
    return out


def _produce(client: KafkaClient, topic: str, batch: bytes, *, partition: int = 0, acks: int = -1,
             version: int | None = None):  # fmt: skip
    request = ProduceRequest(
        topic_data=(TopicProduceData(topic, (PartitionProduceData(partition, batch),)),), acks=acks
    )
    ((result,),) = [t.partition_responses for t in client.request(request, version=version).responses]
    assert result.error_code == 0, result
    return result


def _expected(records: list[tuple], first_offset: int = 0) -> list[tuple]:
    return [(first_offset + i, k, v, ts, tuple(h or ())) for i, (k, v, ts, h) in enumerate(records)]


# ---------------------------------------------------------------- negotiation and metadata


def test_api_versions_answer_is_the_captured_one(client: KafkaClient) -> None:
    assert client.broker_versions == TANSU_0_6
    assert client.choice is not None and client.choice.magic == 2 and client.choice.zstd
    assert [client.choice.version(k) for k in (PRODUCE, FETCH, LIST_OFFSETS, METADATA)] == [11, 12, 9, 12]
    v0 = client.api_versions(0)
    assert v0.error_code == 0 and v0.ranges() == TANSU_0_6


@pytest.mark.parametrize("version", [1, 4, 9, 12])
def test_metadata_answered_and_decoded(client: KafkaClient, new_topic, tansu, version: int) -> None:
    topic = new_topic(partitions=3)
    body = client.request(metadata_request([topic], version=version), version=version)
    (broker,) = body.brokers
    assert (broker.host, broker.port) == ("127.0.0.1", tansu.port)
    (t,) = body.topics
    assert (t.name, t.error_code, sorted(p.partition_index for p in t.partitions)) == (topic, 0, [0, 1, 2])
    assert {p.leader_id for p in t.partitions} == {broker.node_id}


# ---------------------------------------------------------------- our Produce -> confluent-kafka


@pytest.mark.parametrize("codec", list(Codec), ids=[c.name.lower() for c in Codec])
def test_our_produce_read_by_confluent_with_crc_checks(client, new_topic, confluent_consume, codec: Codec) -> None:
    topic = new_topic(partitions=2)
    first, second = _records(40, f"a{codec}"), _records(3, f"b{codec}")
    assert _produce(client, topic, build_record_batch(first, codec=codec), partition=1).base_offset == 0
    assert _produce(client, topic, build_record_batch(second, codec=codec), partition=1).base_offset == len(first)
    messages, errors = confluent_consume(topic, 1, len(first) + len(second))
    assert errors == []
    got = [(m.offset, m.key, m.value, m.timestamp, m.headers) for m in messages]
    assert got == _expected(first) + _expected(second, len(first))
    ours = client.fetch_all(topic, 1, expected=len(got))
    assert [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in ours] == got


@pytest.mark.parametrize("version", range(3, 12))
def test_every_modern_produce_version(client, new_topic, version: int) -> None:
    topic = new_topic()
    codec = Codec.ZSTD if version >= 7 else Codec.LZ4  # zstd only where the version allows it
    records = _records(5, f"v{version}")
    _produce(client, topic, build_record_batch(records, codec=codec), version=version)
    got = client.fetch_all(topic, 0, expected=len(records))
    assert [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in got] == _expected(records)


# ---------------------------------------------------------------- confluent-kafka -> our Fetch


@pytest.mark.parametrize("codec", list(Codec), ids=[c.name.lower() for c in Codec])
def test_confluent_produce_read_by_our_fetch(client, new_topic, tansu, codec: Codec) -> None:
    topic = new_topic()
    producer = Producer(
        {"bootstrap.servers": tansu.address, "compression.codec": codec.name.lower(), "linger.ms": 20, "log_level": 3}
    )
    records = _records(30, f"c{codec}")
    for key, value, ts, headers in records:
        producer.produce(topic, key=key, value=value, timestamp=ts, headers=headers, partition=0)
    assert producer.flush(15) == 0
    expected = [(k, v, ts, tuple(h or ())) for k, v, ts, h in records]
    for version in (4, 8, 12):
        got = client.fetch_all(topic, 0, expected=len(records), version=version)
        assert [(r.key, r.value, r.timestamp, r.headers) for r in got] == expected
        assert [r.offset for r in got] == list(range(len(records)))
    raw = client.fetch(topic, 0, 0).records
    batches = decode_record_batches(raw)
    assert {b.codec for b in batches} == {codec} and batches[0].producer_id >= -1
    assert client.list_offset(topic, 0, list_offsets.EARLIEST).offset == 0


# ---------------------------------------------------------------- Fetch, ListOffsets, CreateTopics


def test_fetch_every_version_and_max_bytes(client, new_topic) -> None:
    topic = new_topic()
    for i in range(4):
        _produce(client, topic, build_record_batch([(None, bytes(300), BASE_TS + i, None)] * 5))
    for version in range(13):
        result = client.fetch(topic, 0, 0, version=version)
        assert (result.error_code, result.high_watermark) == (0, 20)
        assert [r.offset for r in decode_records(result.records)] == list(range(20))
    small = client.fetch(topic, 0, 0, max_bytes=100)  # v3+: the first batch comes whole even above max_bytes
    assert [len(b.records) for b in decode_record_batches(small.records)] == [5]
    middle = client.fetch(topic, 0, 7)
    assert decode_records(middle.records)[0].offset == 5  # whole batches: the reader skips below its offset


def test_list_offsets_every_version(client, new_topic) -> None:
    topic = new_topic()
    for i in range(3):  # single-record batches: see the tansu quirk below for multi-record ones
        _produce(client, topic, build_record_batch([(None, b"x", BASE_TS + i, None)]))
    for version in range(1, 10):
        assert client.list_offset(topic, 0, list_offsets.EARLIEST, version=version).offset == 0
        latest = client.list_offset(topic, 0, list_offsets.LATEST, version=version)
        assert (latest.error_code, latest.offset) == (0, 3)


def test_create_topics(client: KafkaClient) -> None:
    name = f"created-{time.monotonic_ns()}"
    for version in (7, 5, 0):
        result = client.create_topic(name, 3, version=version)
        assert result.error_code == (0 if version == 7 else 36)  # then TOPIC_ALREADY_EXISTS
    (t,) = client.request(metadata_request([name], version=12)).topics
    assert len(t.partitions) == 3


# ---------------------------------------------------------------- tansu behaviours, pinned


def test_tansu_quirk_log_append_time_batch_keeps_a_stale_crc(client, new_topic, confluent_consume) -> None:
    """tansu rewrites base/max timestamp of a batch flagged LogAppendTime without recomputing its CRC-32C. Our
    producer never sets that flag (the broker owns it); readers with CRC checks reject such a stored batch."""
    topic = new_topic()
    sent = build_record_batch([(None, b"b", BASE_TS, None), (None, b"c", BASE_TS + 1, None)], timestamp_type=1)
    _produce(client, topic, sent)
    stored = client.fetch(topic, 0, 0).records
    assert stored[21:27] == sent[21:27] and stored[43:] == sent[43:]  # attributes .. records untouched, except
    assert stored[27:43] != sent[27:43] and stored[17:21] == sent[17:21]  # new base/max timestamps, yet the old CRC
    with pytest.raises(MalformedInput) as info:
        decode_records(stored)
    assert info.value.reason == "CRC"
    messages, errors = confluent_consume(topic, 0, 2, timeout=5)
    assert messages == [] and errors and "CRC32C" in errors[0]
    assert decode_record_batches(sent)[0].timestamp_type == LOG_APPEND_TIME


def test_tansu_quirk_list_offsets_latest_after_multi_record_batch(client, new_topic) -> None:
    """tansu answers ListOffsets(latest) with the last batch's base offset + 1, not the next offset; Fetch's high
    watermark is right. Count by consuming (or by the high watermark), never by ListOffsets."""
    topic = new_topic()
    _produce(client, topic, build_record_batch([(None, b"x", BASE_TS, None)] * 4))
    _produce(client, topic, build_record_batch([(None, b"y", BASE_TS, None)] * 3))
    assert client.list_offset(topic, 0, list_offsets.LATEST).offset == 5  # Kafka: 7
    assert client.fetch(topic, 0, 0).high_watermark == 7
    assert len(client.fetch_all(topic, 0, expected=7)) == 7


def test_tansu_quirk_list_offsets_v0_omits_the_offsets_array(client, new_topic) -> None:
    topic = new_topic()
    with pytest.raises(MalformedInput, match="old_style_offsets"):
        client.list_offset(topic, 0, list_offsets.LATEST, version=0)


def test_tansu_quirk_answers_acks_0(client, new_topic) -> None:
    """Kafka sends nothing back for acks=0; tansu answers. A client must tolerate the unexpected response."""
    topic = new_topic()
    sent = client.send(
        ProduceRequest(
            topic_data=(
                TopicProduceData(topic, (PartitionProduceData(0, build_record_batch([(None, b"z", 1, None)])),)),
            ),
            acks=0,
        )
    )
    client.request(metadata_request([topic], version=12))
    assert client.receive(sent).responses[0].partition_responses[0].error_code == 0


def test_fetch_request_fields_are_accepted(client, new_topic) -> None:
    topic = new_topic()
    _produce(client, topic, build_record_batch([(b"k", b"v", BASE_TS, None)]))
    request = fetch.FetchRequest(
        topics=(fetch.FetchTopic(topic, (fetch.FetchPartition(0, 0, 1 << 16, current_leader_epoch=-1),)),),
        isolation_level=fetch.READ_COMMITTED,
        rack_id="rack-a",
    )
    (t,) = client.request(request, version=12).responses
    (p,) = t.partitions
    assert p.error_code == 0 and [r.value for r in decode_records(p.records)] == [b"v"]
