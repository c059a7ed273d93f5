"""The pure page renderers: counter lines Bruce's scripts can read whatever the label values hold, JSON valid for any
topic text, queue totals, metadata times before the first fetch."""

from __future__ import annotations

import json
import time

from hypothesis import given
from hypothesis import strategies as st

from bruce.producer.counters import Counters
from bruce.proxy.status import MetadataTimes, QueueStats, ServerInfo, TopicQueue
from bruce.proxy.status.pages import (
    counter_line,
    render_counters_json,
    render_counters_plain,
    render_metadata_fetch_time_json,
    render_metadata_fetch_time_plain,
    render_queues_json,
    render_queues_plain,
    render_server_info_json,
)

from .conftest import bruce_counter_parse

INFO = ServerInfo(pid=77, version='v"1\\', start_time=1_600_000_000.9)
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)


def test_counter_line_shapes() -> None:
    assert counter_line("bruce.producer", "AckOk", (), 5) == "[bruce.producer].AckOk=5"
    assert (
        counter_line("bruce.proxy", "Discard", (("reason", "NO_MEM"),), 2) == "[bruce.proxy].Discard{reason:NO_MEM}=2"
    )
    assert (
        counter_line("bruce.producer", "AckError", (("broker", "10.0.0.1:9092"), ("topic", "a b=c,{d}%")), 1)
        == "[bruce.producer].AckError{broker:10%2E0%2E0%2E1:9092,topic:a%20b%3Dc%2C%7Bd%7D%25}=1"
    )
    assert counter_line("l", "X", (("t", "é\n"),), 0) == "[l].X{t:é%0A}=0"


@given(st.lists(st.tuples(st.sampled_from(["topic", "broker"]), text), max_size=3, unique_by=lambda kv: kv[0]))
def test_every_counter_line_reads_with_bruces_parser(labels: list[tuple[str, str]]) -> None:
    counters = Counters()
    counters.inc("AckOk", 3)
    counters.inc("Sent", 9, labels=tuple(labels))
    page = render_counters_plain(INFO, [("bruce.producer", counters)], now=1_600_000_100)
    parsed = bruce_counter_parse(page)
    assert parsed["AckOk"] == 3
    assert len(parsed) == 2 and 9 in parsed.values()
    (sent_key,) = [k for k in parsed if k.startswith("Sent")]
    assert "\n" not in sent_key and "." not in sent_key and "=" not in sent_key


@given(text)
def test_json_pages_are_valid_for_any_topic_and_version(name: str) -> None:
    info = ServerInfo(pid=1, version=name, start_time=0)
    counters = Counters()
    counters.inc(name or "X", labels=(("topic", name),))
    stats = QueueStats((TopicQueue(name, 1, 2, 3),), 4)
    assert json.loads(render_queues_json(info, stats, now=5))["sending"][0]["topic"] == name
    body = json.loads(render_counters_json(info, [(name, counters)], now=5))
    assert body["counters"] == [{"location": name, "name": name or "X", "labels": {"topic": name}, "value": 1}]
    assert json.loads(render_server_info_json(info, now=5))["version"] == name
    assert json.loads(render_metadata_fetch_time_json(info, MetadataTimes(), now_ms=5))["version"] == name


def test_server_info_json_times_are_whole_seconds() -> None:
    assert json.loads(render_server_info_json(INFO, now=1_600_000_100.99)) == {
        "pid": 77,
        "now": 1_600_000_100,
        "version": 'v"1\\',
        "since": 1_600_000_000,
    }


def test_queues_with_no_topics() -> None:
    page = render_queues_plain(INFO, QueueStats(), now=0)
    assert page.splitlines()[3:] == [
        "",
        "         0 total new",
        "         0 total batch",
        "         0 total send_wait",
        "         0 total ack_wait",
        "         0 total (all states: new + batch + send_wait + ack_wait)",
    ]
    assert json.loads(render_queues_json(INFO, QueueStats(), now=0))["sending"] == []


def test_queue_totals() -> None:
    stats = QueueStats((TopicQueue("a", 1, 2, 3), TopicQueue("b", 4, 5, 6)), new=7)
    assert (stats.total_batch, stats.total_send_wait, stats.total_ack_wait, stats.total) == (5, 7, 9, 28)


def test_metadata_times_before_the_first_fetch_are_zero() -> None:
    page = render_metadata_fetch_time_plain(INFO, MetadataTimes(), now_ms=1_600_000_000_500)
    assert f"metadata last updated at (milliseconds since epoch): 0 {time.ctime(0)}" in page
    body = json.loads(render_metadata_fetch_time_json(INFO, MetadataTimes(), now_ms=1_600_000_000_500))
    assert (body["now"], body["last_updated"], body["last_modified"]) == (1_600_000_000_500, 0, 0)
