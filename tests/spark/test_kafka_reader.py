"""The reader's Kafka client against tansu: offsets (with tansu's ListOffsets quirk on multi-record batches), ranges
that start and end inside batches, reads past the log end, and a clear error for every failure."""

from __future__ import annotations

import gc
import warnings

import pytest

from bruce.proxy.config.ports import free_port
from bruce.spark.kafka_reader import KafkaReader, KafkaReadError, Retry, partition_answer
from bruce.spark.options import ClientConfig
from bruce.wire.protocol.fetch import FetchPartitionResponse, FetchResponse, FetchTopicResponse

from .kafka_io import produce_all

BASE_TS = 1_700_000_000_000


def _messages(n: int, partition: int) -> list[dict]:
    return [
        {
            "key": None if i % 5 == 0 else b"k%d" % i,
            "value": b"p%d-%d" % (partition, i),
            "timestamp": BASE_TS + i,
            "headers": [("h", b"%d" % i)] if i % 3 == 0 else None,
            "partition": partition,
        }
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def filled(tansu) -> tuple[str, dict[int, int]]:
    """A 2-partition topic written by confluent-kafka in multi-record batches: 120 and 45 records."""
    topic = "reader-filled"
    tansu.create_topic(topic, 2)
    counts = {0: 120, 1: 45}
    produce_all(tansu.address, topic, _messages(counts[0], 0) + _messages(counts[1], 1))
    return topic, counts


@pytest.fixture
def kafka(tansu):
    with KafkaReader(ClientConfig((tansu.address,))) as reader:
        yield reader


def _flat(batches) -> list:
    return [r for batch in batches for r in batch]


def test_offsets(kafka, filled) -> None:
    topic, counts = filled
    assert kafka.partitions(topic) == (0, 1)
    assert kafka.earliest_offsets(topic, [0, 1]) == {0: 0, 1: 0}
    assert kafka.latest_offsets(topic, [0, 1]) == counts  # tansu's ListOffsets alone says less


def test_whole_partition_row_for_row(kafka, filled) -> None:
    topic, counts = filled
    got = _flat(kafka.read(topic, 0, 0, counts[0]))
    expected = [
        (i, m["key"], m["value"], m["timestamp"], tuple(m["headers"] or ())) for i, m in enumerate(_messages(120, 0))
    ]
    assert [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in got] == expected


def test_range_inside_batches(kafka, filled) -> None:
    topic, _ = filled
    assert [r.offset for r in _flat(kafka.read(topic, 0, 7, 23))] == list(range(7, 23))
    assert _flat(kafka.read(topic, 1, 10, 10)) == []


def test_small_fetch_size_still_progresses(tansu, filled) -> None:
    topic, counts = filled
    with KafkaReader(ClientConfig((tansu.address,), max_partition_fetch_bytes=64)) as kafka:
        batches = list(kafka.read(topic, 1, 0, counts[1]))
    assert [r.offset for r in _flat(batches)] == list(range(counts[1]))


def test_range_past_the_log_end_stops_at_the_end(kafka, filled) -> None:
    topic, counts = filled
    assert [r.offset for r in _flat(kafka.read(topic, 1, 40, 1000))] == list(range(40, counts[1]))


def test_offset_past_the_end_reads_nothing(kafka, filled) -> None:
    """tansu answers an offset past the log end with no records (Kafka: OFFSET_OUT_OF_RANGE, below)."""
    topic, counts = filled
    assert list(kafka.read(topic, 1, counts[1] + 10, counts[1] + 20)) == []


def _answer(code: int, top_code: int = 0) -> FetchResponse:
    part = FetchPartitionResponse(partition_index=0, error_code=code, high_watermark=50, log_start_offset=30)
    return FetchResponse(responses=(FetchTopicResponse("t", (part,)),), error_code=top_code)


def test_fetch_answer_errors() -> None:
    assert partition_answer(_answer(0), "t", 0, 40).high_watermark == 50
    with pytest.raises(KafkaReadError, match=r"t/0 at offset 5: OFFSET_OUT_OF_RANGE.*log start 30") as failed:
        partition_answer(_answer(1), "t", 0, 5)
    assert failed.value.reason == "OFFSET_OUT_OF_RANGE"
    with pytest.raises(KafkaReadError, match="TOPIC_AUTHORIZATION_FAILED") as failed:
        partition_answer(_answer(29), "t", 0, 5)
    assert failed.value.reason == "TOPIC_AUTHORIZATION_FAILED"
    for retriable in (_answer(6), _answer(0, top_code=5)):  # leader moved / not available: retried after metadata
        with pytest.raises(Retry, match=r"NOT_LEADER_OR_FOLLOWER|LEADER_NOT_AVAILABLE"):
            partition_answer(retriable, "t", 0, 5)
    with pytest.raises(Retry, match="does not mention the partition"):
        partition_answer(FetchResponse(responses=()), "t", 0, 5)


def test_unknown_topic_and_partition(kafka, filled) -> None:
    with pytest.raises(KafkaReadError, match="topic 'no-such-topic' does not exist"):
        kafka.partitions("no-such-topic")
    with pytest.raises(KafkaReadError, match="does not exist"):  # asking did not create it
        kafka.partitions("no-such-topic")
    topic, _ = filled
    with pytest.raises(KafkaReadError, match="has no partition 7"):
        list(kafka.read(topic, 7, 0, 10))


def test_unreachable_broker(tmp_path) -> None:
    config = ClientConfig((f"127.0.0.1:{free_port()}",), connect_timeout_ms=200, retries=2, retry_backoff_ms=10)
    with KafkaReader(config) as kafka, pytest.raises(KafkaReadError, match="gave up after 2 retries") as failed:
        kafka.partitions("t")
    assert "cannot connect" in str(failed.value)


def test_closing_the_reader_releases_every_connection(tansu, filled) -> None:
    topic, _ = filled
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with KafkaReader(ClientConfig((tansu.address,))) as kafka:
            assert kafka.latest_offsets(topic, kafka.partitions(topic)) == filled[1]
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
