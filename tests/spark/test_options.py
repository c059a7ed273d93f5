"""Options: Spark's names, aliases, defaults, and a clear error naming the option for every bad one."""

from __future__ import annotations

import pickle

import pytest

from bruce.spark.options import (
    EARLIEST,
    LATEST,
    OptionError,
    offsets_from_json,
    offsets_to_json,
    read_options,
    write_options,
)

SERVERS = {"bootstrap.servers": "127.0.0.1:9092"}


def test_read_defaults_and_aliases() -> None:
    batch = read_options({"kafka.bootstrap.servers": "h:1,h:2", "subscribe": "a, b,a"}, streaming=False)
    assert batch.topics == ("a", "b")
    assert batch.client.bootstrap_servers == ("h:1", "h:2")
    assert (batch.starting, batch.ending) == ("earliest", "latest")
    assert batch.max_records_per_partition == 500_000 and batch.max_offsets_per_trigger is None
    stream = read_options({**SERVERS, "topic": "a", "maxOffsetsPerTrigger": "10"}, streaming=True)
    assert stream.starting == "latest" and stream.max_offsets_per_trigger == 10
    assert pickle.loads(pickle.dumps(stream)) == stream


def test_read_client_settings() -> None:
    o = read_options(
        {
            **SERVERS,
            "topic": "t",
            "kafka.client.id": "me",
            "kafka.request.timeout.ms": "500",
            "kafka.max.partition.fetch.bytes": "4096",
            "kafka.protocol": "modern",
            "kafka.retries": "0",
        },
        streaming=False,
    )
    c = o.client
    assert (c.client_id, c.request_timeout_ms, c.max_partition_fetch_bytes, c.protocol, c.retries) == (
        "me",
        500,
        4096,
        "modern",
        0,
    )


def test_offsets_json() -> None:
    o = read_options(
        {**SERVERS, "topic": "t", "startingOffsets": '{"t": {"0": 5, "2": -2}}', "endingOffsets": '{"t": {"1": -1}}'},
        streaming=False,
    )
    assert o.starting == {"t": {0: 5, 2: EARLIEST}}
    assert o.ending == {"t": {1: LATEST}}
    assert offsets_to_json({"t": {10: 1, 2: 3}}) == {"t": {"2": 3, "10": 1}}
    assert offsets_from_json({"t": {"2": 3}}) == {"t": {2: 3}}


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({"topic": "t"}, False, "'bootstrap.servers'.*required"),
        ({**SERVERS}, False, "'topic'.*required"),
        ({**SERVERS, "topic": "t", "subscribe": "t"}, False, "not 'topic' and 'subscribe'"),
        ({"bootstrap.servers": "nope", "topic": "t"}, False, "not host:port"),
        ({**SERVERS, "topic": "t", "startingOffsets": "first"}, False, "'startingOffsets'.*not earliest"),
        ({**SERVERS, "topic": "t", "startingOffsets": "latest"}, False, "would read nothing"),
        ({**SERVERS, "topic": "t", "endingOffsets": "earliest"}, False, "would read nothing"),
        ({**SERVERS, "topic": "t", "endingOffsets": "latest"}, True, "a stream has no end"),
        ({**SERVERS, "topic": "t", "startingOffsets": '{"u": {"0": 1}}'}, False, "does not subscribe"),
        ({**SERVERS, "topic": "t", "startingOffsets": '{"t": {"x": 1}}'}, False, "not a number"),
        ({**SERVERS, "topic": "t", "startingOffsets": '{"t": {"0": -3}}'}, False, "must be an offset"),
        ({**SERVERS, "topic": "t", "startingOffsets": "[1]"}, False, "object of topics"),
        ({**SERVERS, "topic": "t", "maxOffsetsPerTrigger": "0"}, True, "'maxOffsetsPerTrigger': 0 must be ≥ 1"),
        ({**SERVERS, "topic": "t", "maxRecordsPerPartition": "many"}, False, "not an integer"),
        ({**SERVERS, "topic": "t", "startingOffset": "earliest"}, False, "unknown option 'startingoffset'"),
        ({**SERVERS, "topic": "t", "socket": "/x"}, False, "applies to writes"),
        ({**SERVERS, "topic": "t", "kafka.linger.ms": "5"}, False, "unknown read setting 'kafka.linger.ms'"),
        ({**SERVERS, "topic": "t", "kafka.protocol": "v9"}, False, "not one of auto"),
    ],
)
def test_bad_read_options(options: dict, streaming: bool, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        read_options(options, streaming=streaming)


def test_write_direct() -> None:
    o = write_options(
        {
            "kafka.bootstrap.servers": "h:1",
            "topic": "t",
            "kafka.acks": "all",
            "kafka.linger.ms": "7",
            "kafka.compression.codec": "zstd",
            "kafka.topic.autocreate": "true",
            "delivery.timeout.ms": "5000",
            "checkpointLocation": "/tmp/x",
        }
    )
    assert o.mode == "direct" and o.socket is None and o.delivery_timeout_ms == 5000
    p = o.producer
    assert p is not None
    assert (p.bootstrap_servers, p.acks, p.linger_ms, p.compression_codec, p.topic_autocreate, p.client_id) == (
        ("h:1",),
        -1,
        7,
        "zstd",
        True,
        "bruce-spark",
    )
    assert pickle.loads(pickle.dumps(o)) == o


def test_write_daemon() -> None:
    o = write_options({"socket": "/run/bruce.sock", "max.datagram.size": "1024"})
    assert (o.mode, o.socket, o.producer, o.topic, o.max_datagram_size) == (
        "daemon",
        "/run/bruce.sock",
        None,
        None,
        1024,
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"topic": "t"}, "exactly one of 'bootstrap.servers'.*'socket'"),
        ({**SERVERS, "socket": "/x"}, "exactly one of"),
        ({"socket": "/x", "kafka.linger.ms": "5"}, "apply to direct writes"),
        ({**SERVERS, "kafka.lingerms": "5"}, "unknown producer setting 'kafka.lingerms'"),
        ({**SERVERS, "kafka.linger.ms": "soon"}, "'kafka.linger.ms': 'soon' is not an integer"),
        ({**SERVERS, "kafka.acks": "7000000"}, "acks"),
        ({**SERVERS, "kafka.topic.autocreate": "yes"}, "not true or false"),
        ({**SERVERS, "kafka.compression.codec": "brotli"}, "compression_codec"),
        ({**SERVERS, "startingOffsets": "earliest"}, "applies to reads"),
        ({**SERVERS, "delivery.timeout.ms": "0"}, "must be ≥ 1"),
        ({**SERVERS, "bootstrap.servers": "a:1", "kafka.bootstrap.servers": "b:1"}, "disagree"),
    ],
)
def test_bad_write_options(options: dict, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        write_options(options)
