"""plog UDP input through the daemon to tansu, read back with confluent-kafka (CRC checks on): an unboxed datagram
from socat, multipart messages in order, out of order and with repeated fragments, a missing fragment that expires
and a bad checksum (counted, discarded, not delivered), kt: topics and pk: keys placed as Kafka's Java producer places
them, PING and STAT answered by the daemon's listener, NO_MEM when the budget is full, KILL, and a port in use."""

from __future__ import annotations

import dataclasses
import json
import shutil
import socket
import subprocess
from collections.abc import Callable

import pytest
from confluent_kafka import Producer

from bruce.proxy.config import Broker
from bruce.proxy.daemon.daemon import Daemon
from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.proxy.daemon.plog_inputs import PlogStartError
from bruce.proxy.messages.message import HeldMessage
from bruce.proxy.routing.router import Router
from bruce.wire.plog import build_command, build_fragments, plog_partition_key

from ..daemon.harness import DaemonThread, consume_topic, make_config, make_options, wait_for
from .conftest import PlogDaemon, ask_udp, send_udp, udp

pytestmark = pytest.mark.e2e


def test_socat_datagram_is_delivered(
    plog_daemon: Callable[..., PlogDaemon], new_topic: Callable[..., str], tansu: EmbeddedBroker
) -> None:
    """A plog user's sender, unchanged: ``printf 'hello' | socat - UDP-DATAGRAM:127.0.0.1:PORT``."""
    socat = shutil.which("socat")
    assert socat, "socat is not installed: run scripts/bootstrap.sh (it installs the Debian package socat)"
    topic = new_topic(partitions=1)
    d = plog_daemon([udp(topic)])
    port = d.address("udp")[1]
    subprocess.run(["sh", "-c", f"printf 'hello' | socat - UDP-DATAGRAM:127.0.0.1:{port}"], check=True, timeout=30)
    a = d.settle(1)
    assert (a.received, a.delivered, a.discarded) == (1, 1, 0)
    (read,) = consume_topic(tansu.address, topic, 1, 1)
    assert (read.key, read.value) == (None, b"hello")  # no pk: tag, so a null key, as plog's producer sends


def test_multipart_in_order_out_of_order_and_duplicated(
    plog_daemon: Callable[..., PlogDaemon], new_topic: Callable[..., str], tansu: EmbeddedBroker
) -> None:
    topic = new_topic(partitions=1)
    d = plog_daemon([udp(topic)])
    messages = [bytes([65 + i]) * 20_000 + b"#%d" % i for i in range(3)]
    in_order, backwards, repeated = (
        build_fragments(m, message_id=i, fragment_size=1400) for i, m in enumerate(messages)
    )
    address = d.address("udp")
    send_udp(address, in_order)
    send_udp(address, list(reversed(backwards)))
    send_udp(address, repeated[:5] + repeated[:5] + repeated[5:])  # five fragments twice before it completes
    a = d.settle(3)
    assert (a.received, a.delivered, a.discarded) == (3, 3, 0)
    reads = consume_topic(tansu.address, topic, 1, 3)
    assert sorted(r.value for r in reads) == messages  # each once, whole
    stats = d.stats("udp")
    assert (stats["v0_multipart_messages"], stats["defragmenter"]["duplicates"]) == (3, 5)
    assert sum(stats["v0_fragments"]) == 3 * 15 + 5


def test_missing_fragment_expires_and_bad_checksum_are_discarded(
    plog_daemon: Callable[..., PlogDaemon], new_topic: Callable[..., str], tansu: EmbeddedBroker
) -> None:
    topic = new_topic(partitions=1)
    d = plog_daemon([udp(topic, defrag_expiry=0.2)])
    address = d.address("udp")
    incomplete = build_fragments(b"i" * 3000, message_id=1, fragment_size=1000)
    send_udp(address, [incomplete[0], incomplete[2]])  # fragment 1 never comes
    good = build_fragments(b"g" * 3000, message_id=2, fragment_size=1000)
    bad = [*good[:2], good[2][:-3] + b"BAD"]  # the last fragment's bytes changed: the checksum cannot match
    send_udp(address, [*bad, *build_fragments(b"fine", message_id=3, fragment_size=1000)])
    a = d.settle(3)  # the sweep expires the incomplete message within a second or so
    assert (a.received, a.delivered, a.discarded) == (3, 1, 2)
    assert d.discards("MALFORMED") == 2
    stats = d.stats("udp")
    assert (stats["defragmenter"]["expired"], sum(stats["v0_invalid_checksum"])) == (1, 1)
    assert stats["dropped_fragments"][2] == [0, 1, 0]
    report = json.loads(d.get("/discards/json")[2])["unfinished_report"]
    assert report["malformed_msg_count"] == 2  # and their first bytes among the recent ones
    assert [r.value for r in consume_topic(tansu.address, topic, 1, 1)] == [b"fine"]


def test_kt_chooses_the_topic_and_pk_the_key_and_partition(
    plog_daemon: Callable[..., PlogDaemon], new_topic: Callable[..., str], tansu: EmbeddedBroker
) -> None:
    """pk: is the record key, placed in ``murmur2(key) % partitions`` as plog's Java producer does: librdkafka's
    Java-compatible ``murmur2`` partitioner, producing the same keys, agrees."""
    default, tagged, reference = new_topic(partitions=1), new_topic(partitions=5), new_topic(partitions=5)
    d = plog_daemon([udp(default)])
    keys = [f"user-{i}" for i in range(25)]
    packets = [b"untagged"]
    for i, key in enumerate(keys):
        packets += build_fragments(
            b"v-" + key.encode(), message_id=i, fragment_size=1000, topic=tagged, partition_key=key
        )
    send_udp(d.address("udp"), packets)
    d.settle(26)
    reads = consume_topic(tansu.address, tagged, 5, len(keys))
    assert sorted(r.key for r in reads) == sorted(k.encode() for k in keys)
    assert {r.key: r.partition for r in reads} == {k.encode(): plog_partition_key(k.encode()) % 5 for k in keys}
    assert len({r.partition for r in reads}) > 1
    java = Producer({"bootstrap.servers": tansu.address, "partitioner": "murmur2", "log_level": 3})
    for key in keys:
        java.produce(reference, value=b"ref", key=key.encode())
    assert java.flush(30) == 0
    expected = {r.key: r.partition for r in consume_topic(tansu.address, reference, 5, len(keys))}
    assert {r.key: r.partition for r in reads} == expected
    assert [(r.key, r.value) for r in consume_topic(tansu.address, default, 1, 1)] == [(None, b"untagged")]


def test_ping_and_stat_are_answered_by_the_daemon(
    plog_daemon: Callable[..., PlogDaemon], new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=1)
    d = plog_daemon([udp(topic)])
    address = d.address("udp")
    send_udp(address, [b"one", b"two", b"\x07 bad version"])
    d.settle(3)
    assert ask_udp(address, build_command("PING", b"\x00trailing payload")) == b"PONG\x00trailing payload"
    stats = json.loads(ask_udp(address, b"\x00\x00STAT\x00\x00statfordatadogplease"))
    assert (stats["listener"], stats["udp_simple_messages"], stats["udp_invalid_version"]) == ("udp", 2, 1)
    assert stats["handlers"] == [{"name": "kafka", "seen_messages": 2, "failed_to_send": 0, "no_topic": 0}]
    assert stats["v0_commands"] == 2
    assert d.accounting().received == 3  # commands are not messages


def test_a_full_budget_discards_datagrams_as_no_mem(
    plog_daemon: Callable[..., PlogDaemon], new_topic: Callable[..., str], brokers: tuple[Broker, ...]
) -> None:
    """A 4 KiB budget and batches that wait a minute: 8 messages of 100 bytes (500 bytes of charge each) fit, the
    rest are NO_MEM; the shutdown flush delivers the 8."""
    topic = new_topic(partitions=1)
    d = plog_daemon([udp(topic)], make_config(brokers, time_ms=60_000, nbytes=None), msg_buffer_max=4)
    send_udp(d.address("udp"), [b"m%02d" % i + b"." * 97 for i in range(20)])
    wait_for(lambda: d.accounting().received == 20, what="20 datagrams")
    assert d.discards("NO_MEM") == 12
    assert d.plog_counters()[("PlogFailedToSend", "udp")] == 12
    a = d.stop()
    assert (a.received, a.delivered, a.discarded, a.in_flight) == (20, 8, 12, 0)


def test_kill_stops_the_daemon_in_order_when_enabled(
    plog_daemon: Callable[..., PlogDaemon], new_topic: Callable[..., str], tansu: EmbeddedBroker
) -> None:
    topic = new_topic(partitions=1)
    d = plog_daemon([udp(topic, enable_kill=True)])
    send_udp(d.address("udp"), [b"before kill %d" % i for i in range(5)] + [b"\x00\x00KILL"])
    wait_for(lambda: not d.running, what="the daemon to stop on KILL")
    a = d.stop()
    assert (a.received, a.delivered, a.discarded) == (5, 5, 0)  # everything held was delivered first
    assert len(consume_topic(tansu.address, topic, 1, 5)) == 5


def test_a_port_in_use_stops_the_start_with_a_clear_error(workdir, brokers: tuple[Broker, ...]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        options = make_options(workdir, brokers)
        config = dataclasses.replace(make_config(brokers), plog_listeners=(udp("t", port=port, name="busy"),))
        thread = DaemonThread(Daemon(options, config, reader="loop"))
        with pytest.raises(AssertionError, match="failed to start") as failure:
            thread.start()
        error = failure.value.__cause__
        assert isinstance(error, PlogStartError)
        assert f"plog listener busy: cannot listen on udp 127.0.0.1:{port}" in str(error)
        wait_for(lambda: not thread.running, what="the thread to end")
        assert not (workdir / "bruce.sock").exists()  # what had started was closed again


def test_an_unexpected_error_in_a_listener_stops_the_daemon_loudly(
    plog_daemon: Callable[..., PlogDaemon],
    new_topic: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A bug the listener meets (here in the router it hands a message to) is not counted and ignored: the daemon
    stops, ``run`` raises the error naming the listener, and the accounting still balances — the message the router
    failed on is the only one whose fate is unknown (in flight), and the exit summary says so."""
    topic = new_topic(partitions=1)
    route = Router.route

    def buggy(self: Router, msg: HeldMessage, now: float | None = None) -> None:
        if msg.value == b"boom":
            raise RuntimeError("router bug")
        route(self, msg, now)

    monkeypatch.setattr(Router, "route", buggy)
    d = plog_daemon([udp(topic)])
    send_udp(d.address("udp"), [b"fine"])
    d.settle(1)
    send_udp(d.address("udp"), [b"boom"])
    wait_for(lambda: not d.running, what="the daemon to stop after the failure")
    assert isinstance(d.error, BaseExceptionGroup)
    (error,) = d.error.exceptions
    assert repr(error) == "RuntimeError('router bug')" and error.__notes__ == ["in plog listener udp"]
    a = d.daemon.accounting()
    assert (a.received, a.delivered, a.discarded, a.in_flight) == (2, 1, 0, 1) and a.balanced
    assert "stopped after a failure: 2 received, 1 delivered, 0 discarded, 1 in flight" in caplog.text
    d.error = None  # checked: let the fixture's stop pass
