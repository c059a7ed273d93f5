"""/metrics: Prometheus text format 0.0.4, read back with prometheus_client's parser; names, labels and escaping,
families merged across counter sets, caller bugs (name collisions) refused."""

from __future__ import annotations

import math
from collections.abc import Iterable

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bruce.producer.counters import Counters
from bruce.proxy.status import Gauge, MetadataTimes, QueueStats, ServerInfo, TopicQueue
from bruce.proxy.status.prometheus import CONTENT_TYPE, counter_name, metric_name, render_metrics
from bruce.wire.errors import UsageError

from .conftest import START, RunningStatus

INFO = ServerInfo(pid=1, version="1.2.3", start_time=START)


def families(text: str) -> dict:
    """name → (type, {(sample name, sorted labels): value}); asserts each family appears once."""
    out: dict = {}
    for family in text_string_to_metric_families(text):
        assert family.name not in out, f"family {family.name} appears twice"
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for s in family.samples}
        out[family.name] = (family.type, samples)
    return out


EMPTY_QUEUES, NO_METADATA = QueueStats(), MetadataTimes()


def render(
    counter_sets: Iterable[tuple[str, Counters]] = (),
    gauges: Iterable[Gauge] = (),
    stats: QueueStats = EMPTY_QUEUES,
) -> str:
    return render_metrics(INFO, counter_sets, gauges, stats, NO_METADATA)


@pytest.mark.parametrize(
    ("camel", "snake"),
    [
        ("AckOk", "bruce_ack_ok"),
        ("MsgSetCompressionYes", "bruce_msg_set_compression_yes"),
        ("ConnectorSocketTimeout", "bruce_connector_socket_timeout"),
        ("HTTPRequest", "bruce_http_request"),
        ("Bug2Found", "bruce_bug2_found"),
        ("odd-name.x", "bruce_odd_name_x"),
    ],
)
def test_metric_names(camel: str, snake: str) -> None:
    assert metric_name(camel) == snake
    assert counter_name(camel) == snake + "_total"


def test_metrics_over_http_parse_and_carry_counters_with_labels(status: RunningStatus) -> None:
    reply = status.get("/metrics")
    assert (reply.status, reply.content_type) == (200, CONTENT_TYPE)
    assert CONTENT_TYPE == "text/plain; version=0.0.4; charset=utf-8"
    fams = families(reply.text)
    assert fams["bruce_ack_ok"] == ("counter", {("bruce_ack_ok_total", ()): 7})
    assert fams["bruce_msg_create"][1] == {("bruce_msg_create_total", ()): 10}
    assert fams["bruce_ack_error"][1] == {("bruce_ack_error_total", (("code", "6"),)): 2}
    discards = fams["bruce_discard"][1]
    assert discards[("bruce_discard_total", (("reason", "MALFORMED"),))] == 1
    assert discards[("bruce_discard_total", (("reason", "RATE_LIMIT"),))] == 1
    assert fams["bruce_status_request"][1][("bruce_status_request_total", (("page", "metrics"),))] == 1
    # gauges from the source
    assert fams["bruce_msg_buffer_used_bytes"] == ("gauge", {("bruce_msg_buffer_used_bytes", ()): 1536})
    assert fams["bruce_msg_buffer_capacity_bytes"][1] == {("bruce_msg_buffer_capacity_bytes", ()): 262144 * 1024}
    assert fams["bruce_connected_brokers"][1] == {("bruce_connected_brokers", ()): 3}
    assert fams["bruce_in_flight_requests"][1] == {("bruce_in_flight_requests", (("broker", "1"),)): 2}
    # built in
    assert fams["bruce_build_info"][1] == {("bruce_build_info", (("version", "9.8.7-test"),)): 1}
    assert fams["bruce_start_time_seconds"][1] == {("bruce_start_time_seconds", ()): START}
    queued = fams["bruce_queued_messages"][1]
    assert queued[("bruce_queued_messages", (("state", "ack_wait"), ("topic", "beta.events")))] == 30
    assert queued[("bruce_queued_messages", (("state", "batch"), ("topic", "alpha")))] == 1
    assert len(queued) == 6
    assert fams["bruce_new_messages"][1] == {("bruce_new_messages", ()): 5}
    updated = fams["bruce_metadata_last_updated_timestamp_seconds"][1]
    assert updated == {("bruce_metadata_last_updated_timestamp_seconds", ()): 1700000100.123}
    # every family has HELP and TYPE lines
    for name, (kind, _) in fams.items():
        shown = name + "_total" if kind == "counter" else name
        assert f"\n# TYPE {shown} {kind}\n" in "\n" + reply.text
        assert f"\n# HELP {shown} " in "\n" + reply.text


def test_label_values_and_help_are_escaped() -> None:
    weird = 'we"ird\\topic\nline'
    counters = Counters()
    counters.inc("Sent", 4, labels=(("topic", weird),))
    text = render(
        [("bruce.proxy", counters)],
        gauges=[Gauge("Weird", 'help with \\ and\nnewline "quoted"', 1.5, (("9bad-label", "v"),))],
        stats=QueueStats((TopicQueue(weird, 1, 0, 0),)),
    )
    assert '{topic="we\\"ird\\\\topic\\nline"} 4' in text
    assert "# HELP bruce_weird help with \\\\ and\\nnewline" in text
    fams = families(text)
    assert fams["bruce_sent"][1] == {("bruce_sent_total", (("topic", weird),)): 4}
    assert fams["bruce_weird"][1] == {("bruce_weird", (("_9bad_label", "v"),)): 1.5}
    assert fams["bruce_queued_messages"][1][("bruce_queued_messages", (("state", "batch"), ("topic", weird)))] == 1


def test_same_counter_in_two_sets_is_one_summed_sample() -> None:
    a, b = Counters(), Counters()
    a.inc("AckOk", 3)
    b.inc("AckOk", 4)
    a.inc("Discard", 1, labels=(("reason", "NO_MEM"),))
    b.inc("Discard", 2, labels=(("reason", "NO_MEM"),))
    b.inc("Discard", 5, labels=(("reason", "BAD_TOPIC"),))
    text = render([("bruce.proxy", a), ("bruce.producer", b)])
    fams = families(text)
    assert fams["bruce_ack_ok"][1] == {("bruce_ack_ok_total", ()): 7}
    assert fams["bruce_discard"][1] == {
        ("bruce_discard_total", (("reason", "NO_MEM"),)): 3,
        ("bruce_discard_total", (("reason", "BAD_TOPIC"),)): 5,
    }
    assert text.count("# TYPE bruce_ack_ok_total counter") == 1


def test_special_gauge_values() -> None:
    text = render(
        gauges=[Gauge("Up", "inf", math.inf), Gauge("Down", "-inf", -math.inf), Gauge("Nan", "nan", math.nan)]
    )
    assert "bruce_up +Inf" in text and "bruce_down -Inf" in text and "bruce_nan NaN" in text
    fams = families(text)
    assert fams["bruce_up"][1][("bruce_up", ())] == math.inf
    assert math.isnan(fams["bruce_nan"][1][("bruce_nan", ())])


def test_gauge_named_like_a_counter_is_refused() -> None:
    counters = Counters()
    counters.inc("AckOk")
    with pytest.raises(UsageError, match="bruce_ack_ok_total is both a gauge and a counter"):
        render([("bruce.proxy", counters)], gauges=[Gauge("AckOkTotal", "clash", 1)])


def test_duplicate_gauge_sample_is_refused() -> None:
    with pytest.raises(UsageError, match="reported twice"):
        render(gauges=[Gauge("Brokers", "a", 1), Gauge("Brokers", "b", 2)])


def test_gauge_colliding_with_a_builtin_is_500_over_http(status: RunningStatus) -> None:
    status.source.gauge_list.append(Gauge("NewMessages", "collides with the built-in bruce_new_messages", 1))
    reply = status.get("/metrics")
    assert reply.status == 500
    assert "bruce_new_messages is reported twice" in reply.text
    assert status.server.counters.get("StatusHandlerError") == 1
