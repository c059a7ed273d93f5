"""Every plog message accounted: a mix of good and bad input on a UDP and a TCP listener, with the invariant
received = delivered + discarded checked from the daemon, from /counters and from /metrics; the listeners' counters
on both pages labelled by listener; their discards on /discards."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.wire.plog import build_fragments

from ..daemon.harness import consume_topic, counters_json, wait_for
from .conftest import PlogDaemon, send_udp, tcp, udp

pytestmark = pytest.mark.e2e


def test_mixed_plog_input_is_all_accounted_and_shown_per_listener(
    plog_daemon: Callable[..., PlogDaemon], new_topic: Callable[..., str], tansu: EmbeddedBroker
) -> None:
    topic = new_topic(partitions=1)
    d = plog_daemon([udp(topic, name="events"), tcp(topic, name="lines", max_line=50)])
    send_udp(
        d.address("events"),
        [
            b"unboxed",  # delivered
            *build_fragments(b"multi" * 100, message_id=1, fragment_size=120),  # delivered
            *build_fragments(b"to nowhere", message_id=2, fragment_size=100, topic="null"),  # BAD_TOPIC
            b"\x03 bad version",  # MALFORMED
            b"\x00\x01" + bytes(10),  # MALFORMED: a truncated fragment header
            b"\x00\x00PING",  # a command: not a message
        ],
    )
    with socket.create_connection(d.address("lines")) as conn:
        conn.sendall(b"a line\n" + b"x" * 60 + b"\nanother line\n")  # 2 delivered, 1 LONG_MSG
    a = d.settle(8)
    assert (a.received, a.delivered, a.discarded, a.in_flight) == (8, 4, 4, 0)
    assert (d.discards("BAD_TOPIC"), d.discards("MALFORMED"), d.discards("LONG_MSG")) == (1, 2, 1)

    counters = d.plog_counters()
    assert counters[("PlogReceived", "events")] == 5 and counters[("PlogReceived", "lines")] == 3
    assert counters[("PlogRejected", "events")] == 3 and counters[("PlogRejected", "lines")] == 1
    assert (counters[("PlogUdpSimpleMessages", "events")], counters[("PlogV0MultipartMessages", "events")]) == (1, 2)
    assert (counters[("PlogNoTopic", "events")], counters[("PlogUdpInvalidVersion", "events")]) == (1, 1)
    assert (counters[("PlogV0Commands", "events")], counters[("PlogTcpLines", "lines")]) == (1, 2)
    totals = counters_json(d.daemon.status_url)
    held = totals["MsgCreate"] - totals.get("MsgDestroy", 0)
    assert (totals["MsgReceived"], totals["MsgDelivered"], totals["MsgDiscarded"], held) == (8, 4, 4, 0)

    status, _, body = d.get("/metrics")
    assert status == 200
    samples = {
        (s.name, s.labels.get("listener")): s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
    }
    assert samples[("bruce_plog_received_total", "events")] == 5
    assert samples[("bruce_plog_tcp_line_too_long_total", "lines")] == 1
    assert samples[("bruce_plog_pending_messages", "events")] == 0
    assert samples[("bruce_plog_open_connections", "lines")] == 0
    assert samples[("bruce_msg_received_total", None)] == (
        samples[("bruce_msg_delivered_total", None)] + samples[("bruce_msg_discarded_total", None)]
    )

    report = json.loads(d.get("/discards/json")[2])["unfinished_report"]
    # 2 malformed, and the line over max_line: input over its size limit is malformed in the report (as in Bruce)
    assert (report["malformed_msg_count"], report["bad_topic_msg_count"]) == (3, 1)
    assert report["recent_bad_topic"] == ["null"]
    assert len(consume_topic(tansu.address, topic, 1, 4)) == 4


def test_incomplete_messages_at_shutdown_are_accounted(
    plog_daemon: Callable[..., PlogDaemon], new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=1)
    d = plog_daemon([udp(topic)])
    send_udp(d.address("udp"), [b"whole", build_fragments(b"half" * 100, message_id=1, fragment_size=200)[0]])
    wait_for(lambda: d.stats("udp")["defragmenter"]["pending_messages"] == 1, what="the pending message")
    d.settle(1)
    a = d.stop()
    assert (a.received, a.delivered, a.discarded, a.in_flight) == (2, 1, 1, 0)
    assert d.discards("MALFORMED") == 1
