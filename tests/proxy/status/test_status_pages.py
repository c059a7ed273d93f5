"""The pure page renderers: Bruce's counter catalogue from the start, JSON valid for any topic text, queue totals,
metadata times before the first fetch."""

from __future__ import annotations

import json
import time
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from bruce.producer.counters import Counters
from bruce.proxy.status import MetadataTimes, QueueStats, ServerInfo, TopicQueue
from bruce.proxy.status.bruce_counters import ABSENT, SERVED, bruce_counters
from bruce.proxy.status.pages import (
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


def test_counters_pages_list_the_catalogue_from_the_start() -> None:
    """Nothing counted yet: every catalogue name once, 0, in both formats (Bruce's scripts need the full set)."""
    page = render_counters_plain(INFO, [], now=1_600_000_100)
    parsed = bruce_counter_parse(page)
    assert parsed == dict.fromkeys(SERVED, 0)
    assert all(line.startswith("[bruce].") for line in page.splitlines()[5:])
    body = json.loads(render_counters_json(INFO, [], now=1_600_000_100))
    assert set(body) == {"now", "since", "pid", "version", "counters"}
    assert [c["name"] for c in body["counters"]] == list(SERVED)
    assert all(c == {"location": "bruce", "name": c["name"], "value": 0} for c in body["counters"])


def test_catalogue_sums_labels_filters_and_subtracts() -> None:
    producer, proxy = Counters(), Counters()
    producer.inc("AckError", 2, labels=(("code", "NOT_LEADER_OR_FOLLOWER"), ("broker", "1")))
    producer.inc("AckError", 3, labels=(("code", "NOT_ENOUGH_REPLICAS"), ("broker", "2")))
    producer.inc("ConnectorConnectFail", labels=(("broker", "1"),))
    producer.inc("ConnectorConnectFail", labels=(("broker", "2"),))
    producer.inc("GetMetadataSuccess", 5)
    producer.inc("MetadataChanged", 2)
    proxy.inc("Discard", 4, labels=(("reason", "BAD_TOPIC"),))
    proxy.inc("DiscardBadTopicMsgOnRoute", 1)
    proxy.inc("InputAgentDiscardMsgTooLong", 6)
    values = dict(bruce_counters([("bruce.producer", producer), ("bruce.proxy", proxy)]))
    assert values["AckErrorNotLeaderForPartition"] == 2
    assert values["AckErrorUndocumented"] == 3  # not an error code of Bruce's Kafka 0.8
    assert values["AckErrorNotEnoughReplicasCode"] == 3  # Kafka 0.9 code, as Bruce's later releases name it
    assert values["ConnectorConnectFail"] == values["SenderConnectFail"] == 2  # both brokers; old name, same value
    assert (values["MetadataChangedOnRefresh"], values["MetadataUnchangedOnRefresh"]) == (2, 3)
    assert (values["DiscardBadTopicMsgOnRoute"], values["DiscardBadTopicOnReroute"]) == (1, 3)
    assert values["InputAgentDiscardMsgMalformed"] == 6  # oversized datagrams are malformed, as in Bruce
    assert values["InputThreadDiscardMsgMalformed"] == 6  # its name in Bruce's earlier releases
    assert values["MsgUnprocessedDestroy"] == 0


def test_catalogue_terms_name_real_counters() -> None:
    """Every term's name is a counter the daemon increments somewhere (a typo would serve 0 forever)."""
    root = Path(__file__).resolve().parents[3]
    source = "\n".join(p.read_text() for d in ("producer", "proxy") for p in (root / d).rglob("*.py"))
    for name, entry in SERVED.items():
        for term in entry.terms:
            counter = term.lstrip("-").split("{")[0]
            assert (
                f'"{counter}"' in source
                or f'"{counter.removeprefix("Connector")}"' in source
                or (
                    counter.startswith("MsgSetCompression")
                    and f'"{counter.removeprefix("MsgSetCompression")}"' in source
                )
            ), (name, term)
    assert not set(SERVED) & set(ABSENT)


@given(text)
def test_json_pages_are_valid_for_any_topic_and_version(name: str) -> None:
    info = ServerInfo(pid=1, version=name, start_time=0)
    stats = QueueStats((TopicQueue(name, 1, 2, 3),), 4)
    assert json.loads(render_queues_json(info, stats, now=5))["sending"][0]["topic"] == name
    assert json.loads(render_counters_json(info, [], now=5))["version"] == name
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
