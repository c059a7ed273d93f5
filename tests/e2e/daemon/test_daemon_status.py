"""The running daemon's status interface over HTTP: every page in plain and JSON (the JSON parses), Prometheus text that
prometheus_client parses, the accounting invariant on /counters and /metrics, /queues agreeing with the messages in
flight, the metadata pages, message debugging writing its files, and the front page's dashboard agreeing with the JSON
pages."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from dashboard_check import check_dashboard

from bruce.proxy.config import Broker

from .harness import DaemonThread, counters_json, http_get, make_config, malformed, wait_for

pytestmark = pytest.mark.e2e

PAGES = ["server_info", "counters", "discards", "queues", "metadata_fetch_time"]


def _send(d: DaemonThread, topic: str, count: int) -> None:
    with d.client() as client:
        for i in range(count):
            client.send_any_partition(topic, b"status-%d" % i)
        client.send_datagram(malformed(topic))  # one discard on the pages


def test_every_page_plain_and_json(start_daemon: Callable[..., DaemonThread], new_topic: Callable[..., str]) -> None:
    topic = new_topic(partitions=2)
    d = start_daemon()
    _send(d, topic, 20)
    d.settle(21)
    for page in PAGES:
        status, ctype, body = d.get(f"/{page}/plain")
        assert (status, ctype) == (200, "text/plain; charset=utf-8"), page
        assert str(os.getpid()) in body, page  # the daemon runs in this process
        status, ctype, body = d.get(f"/{page}/json")
        assert (status, ctype) == (200, "application/json; charset=utf-8"), page
        json.loads(body)
    status, _, body = d.get("/")
    assert status == 200 and "/metrics" in body
    assert d.get("/no/such/page")[0] == 404
    queues = json.loads(d.get("/queues/json")[2])
    assert queues["new"] == 0 and [t["topic"] for t in queues["sending"]] == [topic]
    discards = json.loads(d.get("/discards/json")[2])
    assert discards["unfinished_report"]["malformed_msg_count"] == 1
    times = json.loads(d.get("/metadata_fetch_time/json")[2])
    now_ms = time.time() * 1000
    assert 0 < times["last_updated"] <= now_ms and 0 < times["last_modified"] <= now_ms


def test_accounting_invariant_on_counters_and_metrics(
    start_daemon: Callable[..., DaemonThread], new_topic: Callable[..., str], brokers: tuple[Broker, ...]
) -> None:
    """Messages held in a long batch: the invariant holds with messages in flight, and /queues shows them."""
    topic = new_topic(partitions=1)
    d = start_daemon(make_config(brokers, time_ms=60_000, messages=None, nbytes=None))
    _send(d, topic, 30)
    wait_for(lambda: d.accounting().received == 31, what="31 datagrams read")
    c = counters_json(d.daemon.status_url)
    held = c["MsgCreate"] - c.get("MsgDestroy", 0)
    assert (c["MsgReceived"], c["MsgDelivered"], c["MsgDiscarded"], held) == (31, 0, 1, 30)
    assert c["MsgReceived"] == c["MsgDelivered"] + c["MsgDiscarded"] + held
    queues = json.loads(d.get("/queues/json")[2])
    assert sum(t["batch"] + t["send_wait"] + t["ack_wait"] for t in queues["sending"]) + queues["new"] == 30
    metrics = d.metrics()
    assert metrics["bruce_msg_received_total"] == (
        metrics["bruce_msg_delivered_total"] + metrics["bruce_msg_discarded_total"] + metrics["bruce_msg_in_flight"]
    )
    assert metrics["bruce_msg_in_flight"] == 30
    assert metrics["bruce_msg_buffer_used_bytes"] > 0
    a = d.stop()  # shutdown flushes the open batch
    assert (a.received, a.delivered, a.discarded, a.in_flight) == (31, 30, 1, 0)


def test_metadata_update_and_msg_debug(
    start_daemon: Callable[..., DaemonThread], new_topic: Callable[..., str], workdir: Path
) -> None:
    topic = new_topic(partitions=1)
    d = start_daemon()
    updated = d.call(lambda: d.daemon.producer.metadata_times()[0])
    status, _, body = http_get(d.daemon.status_url + "/metadata_update", method="POST")
    assert status == 200 and body.startswith("Metadata update initiated at")
    wait_for(lambda: d.call(lambda: d.daemon.producer.metadata_times()[0]) > updated, what="a metadata refresh")
    assert d.get("/msg_debug/add_topic/" + topic)[0] == 200
    with d.client() as client:
        for i in range(5):
            client.send_any_partition(topic, b"debug-%d" % i)
            client.send_any_partition(topic + "-not-debugged", b"x")  # unknown topic: BAD_TOPIC, not logged
    d.settle(10)
    assert d.discards("BAD_TOPIC") == 5
    d.stop()
    debug = workdir / "debug"
    for name in ("msg_receive", "msg_got_ack"):
        lines = (debug / name).read_text().splitlines()
        assert len(lines) == 5, name
        assert all(f"topic: {len(topic)}[{topic}]" in line for line in lines)


def test_dashboard_agrees_with_the_json_pages(
    start_daemon: Callable[..., DaemonThread], new_topic: Callable[..., str]
) -> None:
    """A settled daemon: every value on / equals the JSON pages', the broker is connected, the rates come from the
    daemon's own samples (one a second)."""
    topic = new_topic(partitions=2)
    d = start_daemon()
    _send(d, topic, 40)
    d.settle(41)
    source = d.daemon.status_source
    wait_for(lambda: [s.delivered for s in d.call(source.rate_samples)][-2:] == [40, 40], what="two settled samples")
    status, _, html = d.get("/")
    assert status == 200
    brokers = d.call(source.broker_states)
    assert [b.state for b in brokers] == ["connected"]
    page = check_dashboard(html, lambda path: d.get(path)[2], brokers=brokers, samples=None)
    shown = {v.src: v.text for v in page.values}
    assert shown[f"counters:TopicMsgDelivered{{topic={topic}}}"] == "40"
    assert (shown["counters:MsgReceived"], shown["counters:Discard{reason=MALFORMED}"]) == ("41", "1")
    assert "rate:received" in shown and "broker trouble" not in html


def test_before_any_metadata_the_front_page_says_why_per_bootstrap_broker(
    start_daemon: Callable[..., DaemonThread],
) -> None:
    """Brokers that cannot be resolved or refuse the connection: the front page shows each configured address with
    the error the log has, not only "no metadata yet"."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        refused = s.getsockname()[1]  # bound, not listening: connections are refused
        d = start_daemon(initial_brokers=(Broker("no-such-host.invalid", 9092), Broker("127.0.0.1", refused)))
        source = d.daemon.status_source
        wait_for(
            lambda: all(b.last_error for b in d.call(source.metadata_times).bootstrap), what="both addresses to fail"
        )
        bootstrap = d.call(source.metadata_times).bootstrap
        status, _, html = d.get("/")
    assert status == 200
    page = check_dashboard(html, lambda path: d.get(path)[2], brokers=[], samples=None, bootstrap=bootstrap)
    shown = {v.src: v.text for v in page.values}
    dns, refusal = (
        shown["bootstrap:no-such-host.invalid:9092:last_error"],
        shown[f"bootstrap:127.0.0.1:{refused}:last_error"],
    )
    assert "Name or service not known" in dns or "not resolve" in dns or "nodename" in dns, dns
    assert "Connect call failed" in refusal or "refused" in refusal, refusal
    assert "no metadata from Kafka yet: no bootstrap broker answered" in html
