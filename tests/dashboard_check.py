"""Checks of the status front page (the dashboard), shared by the status tests and the daemon's end-to-end test.

:func:`check_dashboard` validates the page as HTML5 (html5lib, strict: any parse error fails), collects every value
the page shows (elements with ``data-src``, ``data-v``, ``data-fmt``; see bruce.proxy.status.dashboard) and checks
that no other text holds a digit, that each value's text is its formatted raw value, and that each raw value equals
the JSON pages' (``/queues/json``, ``/server_info/json``, ``/metadata_fetch_time/json``) or ``/metrics``'s (gauges,
and the counters with their labels), the broker states, bootstrap brokers and rate samples given, or what follows
from them
(``derived:``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser

import html5lib
from prometheus_client.parser import text_string_to_metric_families

from bruce.proxy.status import BootstrapState, BrokerState, RateSample
from bruce.proxy.status.dashboard import FORMATS, MAX_ROWS
from bruce.proxy.status.history import rate, series, window_span
from bruce.proxy.status.prometheus import metric_name

_VOID = frozenset({"meta", "input", "br", "hr", "img", "link"})
_SVG_EMPTY = frozenset({"line", "polyline", "polygon", "path", "rect", "circle"})


@dataclass(frozen=True)
class Shown:
    src: str
    v: str
    fmt: str
    text: str


@dataclass
class Page(HTMLParser):
    """The values a dashboard shows, its stray digits, its scripts and external references."""

    values: list[Shown] = field(default_factory=list)
    stray: list[str] = field(default_factory=list)
    scripts: int = 0
    external: list[str] = field(default_factory=list)
    _open: list[str] = field(default_factory=list)
    _value: list[object] | None = None

    def __post_init__(self) -> None:
        super().__init__(convert_charrefs=True)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        for name in ("src", "href", "action"):
            ref = a.get(name) or ""
            if ref and not ref.startswith("/"):
                self.external.append(ref)
        if "data-src" in a:
            assert self._value is None, "values do not nest"
            self._value = [a["data-src"], a["data-v"], a["data-fmt"], tag, ""]
        if tag not in _VOID and tag not in _SVG_EMPTY:
            self._open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID and tag not in _SVG_EMPTY:
            self._open.pop()

    def handle_endtag(self, tag: str) -> None:
        assert self._open and self._open[-1] == tag, f"</{tag}> closes <{self._open[-1] if self._open else None}>"
        self._open.pop()
        v = self._value
        if v is not None and v[3] == tag:
            self.values.append(Shown(str(v[0]), str(v[1]), str(v[2]), str(v[4])))
            self._value = None

    def handle_data(self, data: str) -> None:
        if self._value is not None:
            self._value[4] = str(self._value[4]) + data
        elif re.search(r"\d", data) and (not self._open or self._open[-1] != "style"):
            self.stray.append(data.strip())


def parse_dashboard(html: str) -> Page:
    """Validate ``html`` as HTML5 (strict) and as balanced markup, and collect what it shows."""
    html5lib.HTMLParser(strict=True).parse(html)
    page = Page()
    page.feed(html)
    page.close()
    assert page._open == [], f"unclosed: {page._open}"
    return page


def metric_counters(metrics_text: str) -> list[dict]:
    """The counters on ``/metrics`` as ``{"name", "location", "labels", "value"}`` rows: the CamelCase name and its
    package come from the help text (``Counter <Name> (<location>).``), the labels and value from each sample."""
    rows = []
    for family in text_string_to_metric_families(metrics_text):
        m = re.fullmatch(r"Counter (\w+) \(([\w.]+)\)\.", family.documentation)
        if family.type != "counter" or not m:
            continue
        for sample in family.samples:
            if sample.name.endswith("_total"):
                rows.append({"name": m[1], "location": m[2], "labels": sample.labels, "value": int(sample.value)})
    return rows


def _counter(counters: list[dict], src: str) -> int:
    m = re.fullmatch(r"counters:(\w+)(?:\{(\w+)=(.*)\})?", src)
    assert m, src
    name, key, value = m.groups()
    labels = {key: value} if key else {}
    found = [c["value"] for c in counters if c["name"] == name and c["labels"] == labels]
    assert found, f"{src} is not on /metrics"
    return found[0]


def _sampled(what: str) -> Callable[[RateSample], int | None]:
    what = what.removesuffix(":peak")
    if what.startswith("topic:"):
        topic = what.removeprefix("topic:")
        return lambda s: s.topic(topic)
    return lambda s: getattr(s, what)


def check_dashboard(
    html: str,
    get: Callable[[str], str],
    *,
    brokers: Sequence[BrokerState],
    samples: Sequence[RateSample] | None,
    bootstrap: Sequence[BootstrapState] = (),
) -> Page:
    """Check every value of the page ``html`` (see the module docstring); ``get(path)`` reads another page. Without
    ``samples`` the rates are checked for form only (the daemon may sample between the two reads)."""
    page = parse_dashboard(html)
    assert page.stray == [], f"digits outside a value element: {page.stray}"
    assert page.scripts == 0 and page.external == []
    metrics_text = get("/metrics")
    counters = metric_counters(metrics_text)
    queues = json.loads(get("/queues/json"))
    info = json.loads(get("/server_info/json"))
    meta = json.loads(get("/metadata_fetch_time/json"))
    metrics: dict[str, float] = {}
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:  # a labelled gauge: the dashboard shows the sum
            metrics[sample.name] = metrics.get(sample.name, 0) + sample.value
    sending = {q["topic"]: q for q in queues["sending"]}
    by_broker = {str(b.node_id): b for b in brokers}
    by_address = {b.address: b for b in bootstrap}
    shown = {s.src: s for s in page.values}
    for s in page.values:
        raw: object = s.v
        if s.fmt != "text":
            raw = float(s.v)
            assert s.text == FORMATS[s.fmt](raw), s  # type: ignore[arg-type]
        else:
            assert s.text == s.v, s
        kind, _, rest = s.src.partition(":")
        if kind == "counters":
            assert raw == _counter(counters, s.src), s
        elif kind == "topic":
            delivered = {c["labels"].get("topic") for c in counters if c["name"] == "TopicMsgDelivered"}
            assert raw == rest and (rest in sending or rest in delivered), s
        elif kind == "gauge":
            assert raw == metrics[metric_name(rest)], s
        elif kind == "queues" and rest == "new":
            assert raw == queues["new"], s
        elif kind == "queues" and rest == "broker_problem":
            assert raw == queues["broker_problem"], s
        elif kind == "queues":
            topic, _, what = rest.rpartition(":")
            assert raw == (topic if what == "topic" else sending[topic][what]), s
        elif kind == "server_info" and rest == "now":
            assert abs(raw - info["now"]) <= 2, s  # type: ignore[operator]  # read a moment apart
        elif kind == "server_info":
            assert raw == info[rest] or (rest == "pid" and raw == str(info["pid"])), s
        elif kind == "metadata":
            assert raw == meta[rest], s
        elif kind == "broker":
            node, _, what = rest.partition(":")
            expect = getattr(by_broker[node], what)
            assert raw == (str(expect) if s.fmt == "text" else expect), s
        elif kind == "bootstrap":
            address, _, what = rest.rpartition(":")
            expect = getattr(by_address[address], what)
            assert raw == (str(expect) if s.fmt == "text" else expect), s
        elif kind == "rate":
            assert raw >= 0  # type: ignore[operator]
            if samples is not None:
                if rest == "window":
                    assert raw == window_span(samples), s
                elif rest.endswith(":peak"):
                    assert raw == max(series(samples, _sampled(rest))), s
                else:
                    assert raw == rate(samples, _sampled(rest)), s
        elif kind == "derived":
            if rest == "uptime":
                assert abs(raw - (float(shown["server_info:now"].v) - info["since"])) < 1.0, s  # type: ignore[operator]
            elif rest == "budget_pct":
                cap = metrics["bruce_msg_buffer_capacity_bytes"]
                assert math.isclose(raw, 100 * metrics["bruce_msg_buffer_used_bytes"] / cap), s  # type: ignore[arg-type]
            elif rest == "queues_total":
                assert raw == queues["new"] + sum(q["batch"] + q["send_wait"] + q["ack_wait"] for q in sending.values())
            elif rest == "brokers_known":
                assert raw == len(brokers)
            elif rest == "topics_not_shown":
                delivered = {c["labels"]["topic"] for c in counters if c["name"] == "TopicMsgDelivered"}
                assert raw == len(delivered | sending.keys()) - MAX_ROWS, s
            elif rest == "spool_oldest_s":  # grows between the page and /metrics: a second apart at most
                assert abs(raw - metrics["bruce_spool_oldest_ms"] / 1000) <= 2, s  # type: ignore[operator]
            elif rest == "brokers_connected":
                assert raw == sum(b.state == "connected" for b in brokers)
            else:
                raise AssertionError(f"unknown derived value {s}")
        else:
            raise AssertionError(f"unknown source {s}")
    # Nothing the pages hold is missing from the dashboard.
    for c in counters:
        if c["name"] in ("MsgReceived", "MsgDelivered", "MsgDiscarded"):
            assert f"counters:{c['name']}" in shown
        elif c["name"] == "Discard":
            assert f"counters:Discard{{reason={c['labels']['reason']}}}" in shown
        elif c["name"] == "TopicMsgDelivered":
            assert f"counters:TopicMsgDelivered{{topic={c['labels']['topic']}}}" in shown
    for topic in sending:
        assert {f"queues:{topic}:{w}" for w in ("batch", "send_wait", "ack_wait")} <= shown.keys()
    for b in brokers:
        assert {f"broker:{b.node_id}:{w}" for w in ("node_id", "host", "port", "state")} <= shown.keys()
    return page
