"""Bad input and limits through the running daemon: each discard is counted under its reason, shown on /discards and
written to the discard log, and nothing else is lost — malformed and unsupported datagrams, too-long messages,
unknown topics, budget exhaustion (NO_MEM) and per-topic rate limits."""

from __future__ import annotations

import json
import logging
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from bruce.client import to_bruce
from bruce.proxy.config import Broker, RateLimit, RateLimitingConfig
from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.proxy.messages.message import message_charge
from bruce.wire.datagram import build_any_partition

from .harness import DaemonThread, consume_topic, make_config, malformed, wait_for

pytestmark = pytest.mark.e2e


def _log_reasons(path: Path) -> list[str]:
    return [line.split(" info: ")[1].split(" ")[0] for line in path.read_text().splitlines()]


def test_malformed_unsupported_and_too_long_datagrams(
    start_daemon: Callable[..., DaemonThread],
    new_topic: Callable[..., str],
    tansu: EmbeddedBroker,
    brokers: tuple[Broker, ...],
    workdir: Path,
) -> None:
    topic = new_topic(partitions=1)
    log_path = workdir / "discards" / "discard.log"
    d = start_daemon(
        make_config(brokers, message_max_bytes=500),
        max_input_msg_size=1024,
        discard_log_path=str(log_path),
    )
    good = build_any_partition(topic, b"good", timestamp=5)
    version_7 = good[:6] + b"\x00\x07" + good[8:]  # AnyPartition with API version 7
    bad_datagrams = [
        malformed(topic),  # Size = length - 1
        good[:-1],  # truncated (Size no longer matches)
        struct.pack(">ihhh", 10, 256, 0, 1) + b"xx",  # flags 1: malformed
        struct.pack(">ihh", 8, 300, 0),  # API key 300: unsupported
        version_7,  # unsupported version 7
        struct.pack(">i", 8) + b"\xff\x00\x00\x00",  # legacy format with version byte -1: unsupported version
    ]
    with d.client(max_datagram_size=None) as client:
        for datagram in bad_datagrams:
            client.send_datagram(datagram)
        client.send_any_partition(topic, b"x" * (500 - 80))  # exactly key + value + 80 = messageMaxBytes: kept
        client.send_any_partition(topic, b"x" * (500 - 80 + 1))  # one byte more: LONG_MSG
        client.send_datagram(build_any_partition(topic, b"y" * 1100, timestamp=5))  # over max_input_msg_size
        client.send_datagram(good)
    a = d.settle(10)
    assert (a.received, a.delivered, a.discarded) == (10, 2, 8)
    assert {r: d.discards(r) for r in ("MALFORMED", "API_KEY", "VERSION", "LONG_MSG")} == {
        "MALFORMED": 3,
        "API_KEY": 1,
        "VERSION": 2,
        "LONG_MSG": 2,
    }
    report = json.loads(d.get("/discards/json")[2])["unfinished_report"]
    # the datagram over max_input_msg_size is malformed in the report, as Bruce counts it (its Size check fails)
    assert report["malformed_msg_count"] == 4 and len(report["recent_malformed"]) == 4
    assert report["unsupported_api_key_msg_count"] == 1
    assert sorted((v["version"], v["count"]) for v in report["unsupported_msg_version"]) == [(-1, 1), (7, 1)]
    assert len(report["recent_too_long_msg"]) == 1
    d.stop()
    assert sorted(_log_reasons(log_path)) == sorted(
        ["MALFORMED"] * 3 + ["API_KEY(300)", "VERSION(7)", "VERSION(-1)", "LONG_MSG", "LONG_MSG"]
    )
    long_lines = sorted(line for line in log_path.read_text().splitlines() if " info: LONG_MSG " in line)
    oversized = len(build_any_partition(topic, b"y" * 1100, timestamp=5))
    raw = f"topic: {len(topic)}[{topic}]"
    assert sorted((raw in line, line.rsplit(" size: ", 1)[-1]) for line in long_lines) == [
        (True, f"{oversized} limit: 1024"),  # the datagram over --max_input_msg_size
        (True, "421 limit: 420"),  # key + value over messageMaxBytes less the per-message overhead
    ], long_lines
    reads = consume_topic(tansu.address, topic, 1, 2)
    assert sorted(len(r.value) for r in reads) == [4, 420]


def test_a_topic_name_kafka_refuses_is_bad_topic_name(
    start_daemon: Callable[..., DaemonThread], workdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Not TOPIC_AUTOCREATE_FAIL after asking the brokers (what ``bad topic!`` got before): its own reason, counted,
    reported with the bad topics, logged with why."""
    log_path = workdir / "discard.log"
    d = start_daemon(topic_autocreate=True, discard_log_path=str(log_path))
    sock = str(workdir / "bruce.sock")
    with caplog.at_level(logging.WARNING, logger="bruce.proxy.accounting.discards"):
        assert to_bruce.main(["--socket_path", sock, "--topic", "bad topic!", "--count", "3", "--unchecked"]) == 0
        a = d.settle(3)
    assert (a.discarded, d.discards("BAD_TOPIC_NAME"), d.discards("TOPIC_AUTOCREATE_FAIL")) == (3, 3, 0)
    assert d.counter("RouterTopicAutocreate") == 0  # nothing asked of a broker
    report = json.loads(d.get("/discards/json")[2])["unfinished_report"]
    assert (report["bad_topic_msg_count"], report["recent_bad_topic"]) == (3, ["bad topic!"])
    assert (
        "discarded message: BAD_TOPIC_NAME topic 'bad topic!': not a valid Kafka topic name: characters Kafka "
        "refuses: ' ', '!'" in caplog.text
    )
    d.stop()
    assert _log_reasons(log_path) == ["BAD_TOPIC_NAME"] * 3


def test_unknown_topic_is_bad_topic(start_daemon: Callable[..., DaemonThread], new_topic: Callable[..., str]) -> None:
    topic = new_topic(partitions=1)
    d = start_daemon()
    with d.client() as client:
        for i in range(3):
            client.send_any_partition(f"no-such-topic-{i % 2}", b"lost")
        client.send_any_partition(topic, b"kept")
    a = d.settle(4)
    assert (a.delivered, a.discarded, d.discards("BAD_TOPIC")) == (1, 3, 3)
    report = json.loads(d.get("/discards/json")[2])["unfinished_report"]
    assert report["bad_topic_msg_count"] == 3
    assert sorted(report["recent_bad_topic"]) == ["no-such-topic-0", "no-such-topic-1"]


def test_budget_exhaustion_is_no_mem_and_nothing_else_is_lost(
    start_daemon: Callable[..., DaemonThread],
    new_topic: Callable[..., str],
    tansu: EmbeddedBroker,
    brokers: tuple[Broker, ...],
) -> None:
    """A 64 KiB budget and batches that wait a minute: what fits is held (and delivered at shutdown), every other
    message is NO_MEM. Delivered + NO_MEM = sent, and the consumer reads exactly the delivered ones."""
    topic = new_topic(partitions=1)
    d = start_daemon(make_config(brokers, time_ms=60_000, messages=None, nbytes=None), msg_buffer_max=64)
    value = b"m" * 600
    fits = 64 * 1024 // message_charge(b"", value)
    sent = 200
    with d.client() as client:
        for i in range(sent):
            client.send_any_partition(topic, b"%03d" % i + value[3:])
    wait_for(lambda: d.accounting().received == sent, what="every datagram read")
    a = d.accounting()
    assert (a.in_flight, a.discarded, d.discards("NO_MEM")) == (fits, sent - fits, sent - fits)
    report = json.loads(d.get("/discards/json")[2])["unfinished_report"]
    assert [(t["topic"], t["count"]) for t in report["discard_topic"]] == [(topic, sent - fits)]
    a = d.stop()  # the held batch is flushed and delivered
    assert (a.delivered, a.discarded, a.in_flight) == (fits, sent - fits, 0)
    reads = consume_topic(tansu.address, topic, 1, fits)
    assert sorted(r.value[:3] for r in reads) == [b"%03d" % i for i in range(fits)]  # the first ones fitted


def test_rate_limit_per_topic(
    start_daemon: Callable[..., DaemonThread],
    new_topic: Callable[..., str],
    tansu: EmbeddedBroker,
    brokers: tuple[Broker, ...],
) -> None:
    limited, free = new_topic(partitions=1), new_topic(partitions=1)
    limiting = RateLimitingConfig(
        default_topic="unlimited",
        named_configs={"unlimited": RateLimit(1, None), "ten_a_minute": RateLimit(60_000, 10)},
        topic_configs={limited: "ten_a_minute"},
    )
    d = start_daemon(make_config(brokers, rate_limiting=limiting))
    with d.client() as client:
        for i in range(25):
            client.send_any_partition(limited, b"l%02d" % i)
            client.send_any_partition(free, b"f%02d" % i)
    a = d.settle(50)
    assert (a.delivered, a.discarded, d.discards("RATE_LIMIT")) == (35, 15, 15)
    report = json.loads(d.get("/discards/json")[2])["unfinished_report"]
    assert report["rate_limit_discard"] == [{"topic": limited, "count": 15}]
    assert sorted(r.value for r in consume_topic(tansu.address, limited, 1, 10)) == [b"l%02d" % i for i in range(10)]
    assert len(consume_topic(tansu.address, free, 1, 25)) == 25
