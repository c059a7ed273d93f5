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
    assert batch.max_records_per_partition is None and batch.max_offsets_per_trigger is None  # Spark: no limit
    c = batch.client  # Spark's defaults: kafkaConsumer.pollTimeoutMs 120 s, fetchOffset.numRetries 3
    assert (c.request_timeout_ms, c.retries, c.isolation) == (120_000, 3, "read_uncommitted")
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
    stream = read_options({**SERVERS, "topic": "t", "startingOffsets": '{"t": {"0": -1}}'}, streaming=True)
    assert stream.starting == {"t": {0: LATEST}}  # a stream may start at latest
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
        ({**SERVERS, "topic": "t", "startingOffsets": "latest"}, False, "starting offset can't be latest for batch"),
        ({**SERVERS, "topic": "t", "endingOffsets": "earliest"}, False, "ending offset can't be earliest for batch"),
        (
            {**SERVERS, "topic": "t", "startingOffsets": '{"t": {"0": 1, "1": -1}}'},
            False,
            "startingOffsets for t-1 can't be latest for batch queries on Kafka",
        ),
        (
            {**SERVERS, "topic": "t", "endingOffsets": '{"t": {"0": 9, "3": -2}}'},
            False,
            "ending offset for t-3 can't be earliest for batch queries on Kafka",
        ),
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
        ({**SERVERS, "kafka.linger.ms": "soon"}, "'kafka.linger.ms': 'soon' is not a whole number"),
        ({**SERVERS, "kafka.transactional.id": "w"}, "transactions are not available to Spark writes"),
        ({**SERVERS, "kafka.acks": "7000000"}, "acks"),
        ({**SERVERS, "kafka.topic.autocreate": "yes"}, "'kafka.topic.autocreate': 'yes' must be true or false"),
        ({**SERVERS, "kafka.compression.codec": "brotli"}, "'kafka.compression.codec'"),
        ({**SERVERS, "kafka.compression.type": "brotli"}, "'kafka.compression.codec'"),
        ({**SERVERS, "kafka.enable.idempotence": "sometimes"}, "'kafka.enable.idempotence'.*must be true or false"),
        ({**SERVERS, "kafka.buffer.memory": "lots"}, "'kafka.buffer.memory'.*not an integer"),
        ({**SERVERS, "kafka.retries": "3", "kafka.max.failed.delivery.attempts": "4"}, "disagree"),
        ({**SERVERS, "startingOffsets": "earliest"}, "applies to reads"),
        ({**SERVERS, "delivery.timeout.ms": "0"}, "must be ≥ 1"),
        ({**SERVERS, "bootstrap.servers": "a:1", "kafka.bootstrap.servers": "b:1"}, "disagree"),
    ],
)
def test_bad_write_options(options: dict, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        write_options(options)


def test_security_options_map_to_the_security_config_for_reads_and_writes() -> None:
    given = {
        "bootstrap.servers": "b:9093",
        "topic": "t",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-256",
        "kafka.sasl.username": "u",
        "kafka.sasl.password": "pw-spark-1",
        "kafka.ssl.ca.location": "/etc/ca.pem",
    }
    read = read_options(given, streaming=False).client.security
    write = write_options(given).producer.security
    assert read == write
    assert (read.security_protocol, read.sasl_mechanism, read.ssl_ca_location) == (
        "SASL_SSL",
        "SCRAM-SHA-256",
        "/etc/ca.pem",
    )
    assert "pw-spark-1" not in repr(read)


def test_bad_security_options_fail_at_planning_without_the_secret() -> None:
    with pytest.raises(OptionError, match=r"security settings \(kafka\.\*\): sasl\.username: required") as caught:
        write_options(
            {"bootstrap.servers": "b:1", "kafka.security.protocol": "SASL_SSL", "kafka.sasl.password": "pw-2"}
        )
    assert "pw-2" not in str(caught.value)


def test_spark_connector_read_options() -> None:
    o = read_options(
        {
            **SERVERS,
            "subscribePattern": "clicks-.*",
            "startingTimestamp": "1700000000000",
            "startingOffsetsByTimestamp": '{"x": {"0": 1}}',  # startingTimestamp wins, as in Spark
            "endingOffsetsByTimestamp": '{"clicks-1": {"0": 1700000009000}}',
            "startingOffsetsByTimestampStrategy": "latest",
            "failOnDataLoss": "false",
            "minPartitions": "8",
            "includeHeaders": "true",
            "groupIdPrefix": "ignored",
            "kafka.group.id": "ignored",
            "kafkaConsumer.pollTimeoutMs": "5000",
            "fetchOffset.numRetries": "2",
            "fetchOffset.retryIntervalMs": "20",
        },
        streaming=False,
    )
    assert (o.topics, o.pattern, o.assign) == ((), "clicks-.*", None)
    assert (o.starting_timestamps, o.ending_timestamps) == (1_700_000_000_000, {"clicks-1": {0: 1_700_000_009_000}})
    assert (o.no_match, o.fail_on_data_loss, o.min_partitions, o.include_headers) == ("latest", False, 8, True)
    assert (o.client.request_timeout_ms, o.client.retries, o.client.retry_backoff_ms) == (5000, 2, 20)
    s = read_options(
        {**SERVERS, "assign": '{"a": [2, 0, 2]}', "minOffsetsPerTrigger": "5", "maxTriggerDelay": "30s"}, streaming=True
    )
    assert (s.assign, s.min_offsets_per_trigger, s.max_trigger_delay_ms, s.include_headers) == (
        {"a": (0, 2)},
        5,
        30_000,
        False,
    )
    assert (s.fail_on_data_loss, s.no_match, s.max_trigger_delay_ms) == (True, "error", 30_000)
    assert read_options({**SERVERS, "topic": "t"}, streaming=True).max_trigger_delay_ms == 15 * 60_000
    assert pickle.loads(pickle.dumps(o)) == o


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({**SERVERS, "topic": "t", "assign": '{"t": [0]}'}, False, "not 'topic' and 'assign'"),
        ({**SERVERS, "subscribePattern": "(", "subscribe": "t"}, False, "not 'subscribe' and 'subscribePattern'"),
        ({**SERVERS, "subscribePattern": "("}, False, "not a regular expression"),
        ({**SERVERS, "assign": "[0]"}, False, "give an object of topics"),
        ({**SERVERS, "assign": '{"t": [-1]}'}, False, "integers ≥ 0"),
        ({**SERVERS, "assign": '{"t": [0]}', "startingOffsets": '{"u": {"0": 1}}'}, False, "does not subscribe"),
        ({**SERVERS, "topic": "t", "startingTimestamp": "soon"}, False, "not an integer"),
        ({**SERVERS, "topic": "t", "startingOffsetsByTimestamp": '{"t": 5}'}, False, "expected JSON like"),
        ({**SERVERS, "topic": "t", "endingOffsetsByTimestamp": '{"t": {"0": -1}}'}, False, "epoch ms ≥ 0"),
        ({**SERVERS, "topic": "t", "endingTimestamp": "1"}, True, "a stream has no end"),
        ({**SERVERS, "topic": "t", "startingOffsetsByTimestampStrategy": "skip"}, False, "not one of error, latest"),
        ({**SERVERS, "topic": "t", "failOnDataLoss": "maybe"}, False, "'failOnDataLoss': 'maybe' is not true"),
        ({**SERVERS, "topic": "t", "minPartitions": "0"}, False, "'minPartitions': 0 must be ≥ 1"),
        ({**SERVERS, "topic": "t", "maxTriggerDelay": "soon"}, True, "not a duration"),
        ({**SERVERS, "topic": "t", "minOffsetsPerTrigger": "9", "maxOffsetsPerTrigger": "3"}, True, "is more than"),
        ({**SERVERS, "topic": "t", "fetchOffset.numRetries": "1", "kafka.retries": "2"}, False, "disagree"),
        ({**SERVERS, "topic": "t", "kafka.partitioner": "murmur2"}, False, "unknown read setting"),
        ({**SERVERS, "topic": "t", "kafka.isolation.level": "serializable"}, False, "not one of read_uncommitted"),
        ({**SERVERS, "topic": "t", "kafka.max.poll.records": "many"}, False, "'kafka.max.poll.records'.*integer"),
        ({**SERVERS, "topic": "t", "kafka.auto.offset.reset": "earliest"}, False, "unknown read setting"),
    ],
)
def test_bad_spark_connector_read_options(options: dict, streaming: bool, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        read_options(options, streaming=streaming)


def test_partitioner_option() -> None:
    assert write_options({**SERVERS, "topic": "t"}).partitioner == "murmur2_random"  # Spark's Kafka sink
    assert write_options({**SERVERS, "topic": "t"}).producer.partitioner == "murmur2_random"
    o = write_options({**SERVERS, "topic": "t", "kafka.partitioner": "consistent"})
    assert (o.partitioner, o.producer.partitioner) == ("consistent", "consistent")
    assert write_options({"socket": "/x", "kafka.partitioner": "fnv1a"}).partitioner == "fnv1a"  # computed per row
    with pytest.raises(OptionError, match=r"'kafka.partitioner': 'java' is not one of murmur2_random, murmur2"):
        write_options({**SERVERS, "topic": "t", "kafka.partitioner": "java"})


def test_direct_writes_create_new_topics_unless_told_not_to() -> None:
    assert write_options({**SERVERS, "topic": "t"}).producer.topic_autocreate  # as Spark's Kafka sink
    assert not write_options({**SERVERS, "topic": "t", "kafka.topic.autocreate": "false"}).producer.topic_autocreate


def test_java_consumer_settings_spark_users_pass() -> None:
    """Spark passes kafka.* straight to Java's consumer; these are taken (mapped, or checked and ignored)."""
    o = read_options(
        {
            **SERVERS,
            "topic": "t",
            "kafka.isolation.level": "read_committed",
            "kafka.fetch.min.bytes": "1024",
            "kafka.fetch.max.bytes": "2097152",
            "kafka.max.poll.records": "500",
            "kafka.session.timeout.ms": "45000",
            "kafka.receive.buffer.bytes": "-1",
            "kafka.default.api.timeout.ms": "60000",
            "kafka.metadata.max.age.ms": "300000",
        },
        streaming=True,
    )
    c = o.client
    assert (c.isolation, c.fetch_min_bytes, c.fetch_max_bytes) == ("read_committed", 1024, 2097152)


def test_java_producer_settings_spark_users_pass() -> None:
    """The Java producer's names map to bruce.producer's; enable.idempotence is a text true/false."""
    p = write_options(
        {
            **SERVERS,
            "topic": "t",
            "kafka.compression.type": "lz4",
            "kafka.max.request.size": "2000000",
            "kafka.retries": "7",
            "kafka.delivery.timeout.ms": "60000",
            "kafka.buffer.memory": "33554433",
            "kafka.enable.idempotence": "true",
        }
    ).producer
    assert (p.compression_codec, p.message_max_bytes, p.max_failed_delivery_attempts) == ("lz4", 2_000_000, 7)
    assert (p.message_timeout_ms, p.queue_buffering_max_kbytes, p.enable_idempotence) == (60_000, 32769, True)
    assert (
        write_options({**SERVERS, "topic": "t", "kafka.enable.idempotence": "false"}).producer.enable_idempotence
        is False
    )


def test_the_sink_takes_include_headers() -> None:
    assert write_options({**SERVERS, "topic": "t", "includeHeaders": "true"}).topic == "t"  # Spark's sink takes it


def test_bootstrap_servers_with_a_listener_prefix() -> None:
    sasl = {"kafka.security.protocol": "SASL_SSL", "kafka.sasl.username": "u", "kafka.sasl.password": "p"}
    options = write_options({"bootstrap.servers": "SASL_SSL://h:9094,g:9094", "topic": "t", **sasl})
    assert options.producer is not None and options.producer.bootstrap_servers == ("h:9094", "g:9094")
    with pytest.raises(OptionError, match=r"option 'bootstrap\.servers': 'SSL://h:1' names the SSL listener"):
        write_options({"bootstrap.servers": "SSL://h:1", "topic": "t"})
    with pytest.raises(OptionError, match=r"option 'bootstrap\.servers': 'nohost' is not host:port"):
        read_options({"bootstrap.servers": "nohost", "topic": "t"}, streaming=False)
