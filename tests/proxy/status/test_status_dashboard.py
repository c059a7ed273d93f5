"""The dashboard on the front page: valid HTML5 with no script and nothing external, every value equal to the JSON
pages' at the same moment (a frozen source), rates from the sample ring, broker states and problems shown in words,
every value escaped; and the ring of rate samples itself (bounded, rates from differences)."""

from __future__ import annotations

import re

import pytest
from dashboard_check import check_dashboard, parse_dashboard

from bruce.producer.counters import Counters
from bruce.proxy.status import BootstrapState, BrokerState, Gauge, MetadataTimes, QueueStats, RateHistory, TopicQueue
from bruce.proxy.status.dashboard import MAX_ROWS, render_front_page
from bruce.proxy.status.history import MAX_TOPICS, rate, series

from .conftest import NOW, START, FakeSource, RunningStatus

EVIL = '<script>alert("x")</script>&amp;'


def _texts(page_values: list, prefix: str) -> dict[str, str]:
    return {v.src: v.text for v in page_values if v.src.startswith(prefix)}


def test_every_value_on_the_dashboard_equals_the_json_pages(status: RunningStatus) -> None:
    reply = status.get("/")
    assert (reply.status, reply.content_type) == (200, "text/html; charset=utf-8")
    src = status.source
    page = check_dashboard(reply.text, lambda p: status.get(p).text, brokers=src.brokers, samples=src.rate_samples())
    shown = {v.src: v.text for v in page.values}
    # The fake daemon's figures, as a person reads them.
    assert shown["counters:MsgReceived"] == "11,000"
    assert shown["counters:Discard{reason=RATE_LIMIT}"] == "1"
    assert shown["gauge:MsgBufferUsedBytes"] == "1.5\N{NO-BREAK SPACE}KiB"
    assert shown["gauge:MsgBufferCapacityBytes"] == "256.0\N{NO-BREAK SPACE}MiB"
    assert shown["rate:received"] == "200" and shown["rate:discarded"] == "0.6"  # 1000 and 3 per 5 s
    assert shown["rate:received:peak"] == "200"
    assert shown["rate:topic:alpha"] == "120" and shown["queues:beta.events:ack_wait"] == "30"
    assert shown["broker:2:state"] == "connect failed" and shown["broker:2:last_error"] == "cannot connect: refused"
    assert shown["server_info:since"] == "2023-11-14 22:13:20 UTC" and shown["derived:uptime"] == "1 h 00 min"
    assert '<meta http-equiv="refresh" content="5"/>' in reply.text
    assert "Attention: broker trouble: broker" in reply.text and "connect failed; discarding messages" in reply.text


def test_healthy_idle_and_empty(source: FakeSource) -> None:
    source.brokers = [BrokerState(1, "127.0.0.1", 9092, "connected"), BrokerState(2, "127.0.0.1", 9093, "idle")]
    source.history = RateHistory()  # no samples yet: no rate is shown, none is made up
    source.queues = QueueStats()
    html = render_front_page(source, now=NOW)
    page = parse_dashboard(html)
    assert "Healthy:" in html and "Attention" not in html
    assert not [v for v in page.values if v.src.startswith("rate:")]
    assert html.count("&ndash; /s (no rate yet)") == 3
    assert _texts(page.values, "derived:brokers") == {"derived:brokers_connected": "1", "derived:brokers_known": "2"}


def test_every_shown_text_is_escaped(source: FakeSource) -> None:
    source.queues = QueueStats((TopicQueue(EVIL, 1, 2, 3),), 0)
    source.brokers = [BrokerState(7, EVIL, 1, "disconnected", NOW, f"connection lost: {EVIL}", NOW)]
    source.info = type(source.info)(pid=1, version=EVIL, start_time=0)
    html = render_front_page(source, now=NOW)
    page = parse_dashboard(html)
    assert page.scripts == 0 and "<script>" not in html
    texts = {v.src: v.text for v in page.values}
    assert texts[f"topic:{EVIL}"] == EVIL and texts["broker:7:host"] == EVIL
    assert texts["server_info:version"] == EVIL and texts["broker:7:last_error"] == f"connection lost: {EVIL}"


def test_a_failing_source_is_a_500_and_the_server_keeps_serving(status: RunningStatus) -> None:
    status.source.fail = "broker_states"
    assert status.get("/").status == 500
    status.source.fail = None
    assert status.get("/").status == 200


def test_rate_ring_is_bounded_and_rates_are_differences() -> None:
    h = RateHistory(maxlen=5)
    for i in range(8):
        h.sample(100.0 + i, 10 * i, 5 * i, 0, {f"t{k}": i for k in range(MAX_TOPICS + 10)})
    samples = h.samples()
    assert [s.t for s in samples] == [103.0, 104.0, 105.0, 106.0, 107.0]
    assert all(len(s.topics) == MAX_TOPICS for s in samples)
    assert rate(samples, lambda s: s.received) == 10.0
    assert series(samples, lambda s: s.delivered) == [5.0] * 4
    assert rate(samples[:1], lambda s: s.received) is None
    assert rate(samples, lambda s: s.topic("no such topic")) is None


@pytest.mark.parametrize(("gap", "expected"), [(30.0, 2.0), (90.0, None)])
def test_rate_uses_the_last_minute_only(gap: float, expected: float | None) -> None:
    h = RateHistory()
    h.sample(0.0, 0, 0, 0, {})
    h.sample(gap, int(2 * gap), 0, 0, {})
    assert rate(h.samples(), lambda s: s.received) == expected


def test_topic_rows_are_bounded(source: FakeSource) -> None:
    source.queues = QueueStats(tuple(TopicQueue(f"t{i:03d}", 1, 0, 0) for i in range(MAX_ROWS + 5)), 0)
    page = parse_dashboard(render_front_page(source, now=NOW))
    topics = [v.text for v in page.values if v.src.startswith("topic:")]
    assert len(topics) == MAX_ROWS and topics[0] == "alpha"  # sorted: the delivered-only topics come first
    assert _texts(page.values, "derived:topics_not_shown") == {"derived:topics_not_shown": "7"}


def test_the_spool_panel_shows_the_spool_when_there_is_one(status: RunningStatus) -> None:
    src = status.source
    assert 'class="spool"' not in status.get("/").text  # no --spool_dir: no panel
    spool_counters = Counters()
    spool_counters.inc("SpoolReplayed", 1200)
    spool_counters.inc("SpoolSkippedDone", 30)
    spool_counters.inc("SpoolCorrupt", 2)
    daemon_counters = Counters()
    daemon_counters.inc("SpoolSettled", 1000)
    daemon_counters.inc("SpoolReplayedPossibleDuplicate", 150)
    sets = src.counter_sets()
    src.counter_sets = lambda: [  # type: ignore[method-assign]
        *sets,
        ("bruce.proxy.spool", spool_counters),
        ("bruce.proxy", daemon_counters),
    ]
    src.gauge_list += [
        Gauge("SpoolBytes", "Bytes of the spool's segment files.", 5 * 1024 * 1024),
        Gauge("SpoolSegments", "The spool's segment files.", 3),
        Gauge("SpoolPending", "Spooled messages not yet done.", 4000),
        Gauge("SpoolHeldOnDisk", "Held on disk only.", 1500),
        Gauge("SpoolOldestMs", "Age of the oldest segment holding one.", 95_000),
    ]
    reply = status.get("/")
    page = check_dashboard(reply.text, lambda p: status.get(p).text, brokers=src.brokers, samples=src.rate_samples())
    shown = _texts(page.values, "")
    assert shown["gauge:SpoolBytes"] == "5.0\N{NO-BREAK SPACE}MiB" and shown["gauge:SpoolSegments"] == "3"
    assert shown["gauge:SpoolPending"] == "4,000" and shown["gauge:SpoolHeldOnDisk"] == "1,500"
    assert shown["derived:spool_oldest_s"] == "1 min 35 s"
    assert shown["counters:SpoolReplayed"] == "1,200" and shown["counters:SpoolCorrupt"] == "2"
    assert (shown["counters:SpoolSettled"], shown["counters:SpoolReplayedPossibleDuplicate"]) == ("1,000", "150")
    assert "settled as delivered by the batch journal" in reply.text and "possible duplicates" in reply.text
    assert 'data-v="3" data-fmt="int">3</span> segment files</td>' in reply.text
    src.gauge_list = [g if g.name != "SpoolSegments" else Gauge(g.name, g.help, 1) for g in src.gauge_list]
    assert 'data-v="1" data-fmt="int">1</span> segment file</td>' in status.get("/").text  # one file, not "files"


def _shown(html: str) -> dict[str, str]:
    return {v.src: v.text for v in parse_dashboard(html).values}


def test_without_metadata_each_bootstrap_address_shows_its_last_error(status: RunningStatus) -> None:
    """What the log says about each configured broker, on the page: the cause, not only "no metadata yet"."""
    src = status.source
    src.brokers = []
    src.times = MetadataTimes(
        bootstrap=(
            BootstrapState("kafka-1.example:9092", "cannot connect: [Errno -2] Name or service not known", NOW - 2),
            BootstrapState("127.0.0.1:1", "cannot connect: [Errno 111] Connect call failed", NOW - 1),
            BootstrapState("kafka-3.example:9093", "authentication failed: SASL credentials refused", NOW - 1),
            BootstrapState("kafka-4.example:9094"),
        )
    )
    html = status.get("/").text
    page = check_dashboard(
        html, lambda p: status.get(p).text, brokers=[], samples=src.rate_samples(), bootstrap=src.times.bootstrap
    )
    shown = {v.src: v.text for v in page.values}
    assert shown["bootstrap:kafka-1.example:9092:last_error"].endswith("Name or service not known")
    assert shown["bootstrap:127.0.0.1:1:last_error"].endswith("Connect call failed")
    assert shown["bootstrap:kafka-3.example:9093:last_error"].startswith("authentication failed")
    assert shown["bootstrap:127.0.0.1:1:last_error_at"] == "2023-11-14 23:13:19 UTC"
    assert "bootstrap:kafka-4.example:9094:last_error" not in shown and "no answer yet" in html
    assert "Attention: no metadata from Kafka yet: no bootstrap broker answered (see Brokers)" in html
    src.times = MetadataTimes(last_updated_ms=1_700_000_100_123, bootstrap=src.times.bootstrap)
    assert not [s for s in _shown(render_front_page(src, now=NOW)) if s.startswith("bootstrap:")]  # brokers instead


def _young(source: FakeSource, up: int) -> None:
    """A daemon up ``up`` s, sampled each second: 10 deliveries a second, all to topic "late", which first got one at
    second 20 (so the oldest samples do not hold it)."""
    source.info = type(source.info)(pid=1, version="v", start_time=START)
    history = RateHistory()
    for t in range(up + 1):
        n = max(0, 10 * (t - 20))
        history.sample(START + t, n, n, 0, {"late": n} if n else {})
    source.history = history
    source.accounting = Counters()
    source.accounting.inc("MsgReceived", 10 * (up - 20))
    source.accounting.inc("MsgDelivered", 10 * (up - 20))
    source.accounting.inc("TopicMsgDelivered", 10 * (up - 20), labels=(("topic", "late"),))
    source.queues = QueueStats()


def test_rates_share_one_window_and_state_it(source: FakeSource) -> None:
    _young(source, 44)
    html = render_front_page(source, now=START + 44.5)
    shown = _shown(html)
    assert shown["rate:delivered"] == shown["rate:topic:late"] == "5.5"  # 240 deliveries over the same 44 s
    assert shown["rate:window"] == "44" and "since start, " in html and "last minute" not in html
    _young(source, 200)
    html = render_front_page(source, now=START + 200.5)
    shown = _shown(html)
    assert shown["rate:delivered"] == shown["rate:topic:late"] == "10.0"
    assert shown["rate:window"] == "60" and "over the last " in html and "since start" not in html


def test_each_chart_states_its_scale(source: FakeSource) -> None:
    """Every sparkline is followed by its scale in plain words: the time it spans and its top, the highest
    per-second rate ("last 55 s, up to 198 /s")."""
    html = render_front_page(source, now=NOW)
    charts = html.split('<svg class="spark"')[1:]
    assert len(charts) == 3 + 2  # three cards, two topic rows
    for chart in charts:
        scale = chart.split("</svg>", 1)[1].split("</p>", 1)[0]
        assert 'class="scale"' in scale and ':peak"' in scale and 'data-src="rate:window"' in scale, scale
        words = re.sub(r"<[^>]+>", "", scale.split(">", 1)[1])
        assert re.fullmatch(r"last \d+ s, up to [\d,.]+ /s", words), words
    shown = _shown(html)
    assert (shown["rate:delivered:peak"], shown["rate:topic:alpha:peak"], shown["rate:window"]) == ("198", "120", "55")


def test_a_small_rate_or_share_never_reads_as_zero(source: FakeSource) -> None:
    """One message in 42 s is 0.024 /s, not "0.0 /s" beside a count of 1; 1.5 KiB of a 256 MiB budget is "< 0.001 %",
    not "0.0 %". Only what is zero reads as zero."""
    source.info = type(source.info)(pid=1, version="v", start_time=START)
    history = RateHistory()
    for t in range(43):
        n = 1 if t >= 20 else 0
        history.sample(START + t, n, n, 0, {"once": n} if n else {})
    source.history = history
    source.accounting = Counters()
    for name in ("MsgReceived", "MsgDelivered"):
        source.accounting.inc(name, 1)
    source.accounting.inc("TopicMsgDelivered", 1, labels=(("topic", "once"),))
    shown = _shown(render_front_page(source, now=START + 42.5))
    assert shown["counters:MsgDelivered"] == "1" and shown["rate:window"] == "42"
    assert shown["rate:received"] == shown["rate:delivered"] == shown["rate:topic:once"] == "0.024"
    assert shown["rate:discarded"] == "0" and shown["rate:delivered:peak"] == "1.0"
    assert shown["derived:budget_pct"] == "< 0.001\N{NO-BREAK SPACE}%"
