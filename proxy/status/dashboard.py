"""The front page (``/``): a live dashboard of the daemon — totals, rates with sparklines, held messages and budget
use, the spool (:mod:`.spool_panel`, with ``--spool_dir``), per-topic rows, each broker's connection state and last
error (before the first metadata: each configured bootstrap broker and its last error) — above the links to every
page, the "Update Metadata" form and the message debug commands (:mod:`.controls`).

Rules:
- One self-contained HTML5 document: inline CSS and server-rendered inline SVG; no script, no font, no image, nothing
  fetched from anywhere. It reloads itself every :data:`REFRESH_S` seconds (``<meta http-equiv="refresh">``).
- It reads only what the other pages read, through the same :class:`~bruce.proxy.status.source.StatusSource` calls:
  counters and gauges (``/metrics``), queue stats (``/queues``), metadata times, server info, plus the
  broker states and the rate samples (:mod:`bruce.proxy.status.history`). Rates are differences of sampled totals,
  every one (totals and topics) over the same window, stated beside them ("over the last 60 s", or "since start,
  44 s" while the daemon is younger than the window); each chart states its scale in words (that window, and its
  top: the highest rate; its bottom is 0). A rate or share that is not zero never reads as zero (two significant
  digits below 1).
- The layout fills the window (up to 1800 px); below 1000 px the sections stack.
- Every value shown is in an element with ``data-src`` (where it comes from: ``counters:<Name>``,
  ``counters:<Name>{<label>=<value>}``, ``gauge:<Name>``, ``queues:<topic>:<field>``, ``server_info:<field>``,
  ``metadata:<field>``, ``broker:<id>:<field>``, ``bootstrap:<host:port>:<field>``, ``topic:<name>``,
  ``rate:<what>``, ``derived:<what>``), ``data-v`` (the raw value) and ``data-fmt`` (the :data:`FORMATS` entry that
  turned it into the text), so a test — or a person — can check every number on the page against the JSON pages. No
  other text holds a digit.
- Every value is HTML-escaped; colours are never the only signal (states and badges are words too); each chart has a
  text alternative. Bounded: at most :data:`MAX_ROWS` topic rows.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from html import escape

from bruce.producer import CONNECTED, IDLE

from .charts import sparkline
from .controls import controls
from .history import WINDOW_S, RateSample, rate, series, window_span
from .source import BootstrapState, BrokerState, CounterSet, MetadataTimes, QueueStats, StatusSource
from .spool_panel import spool_panel

REFRESH_S = 5
MAX_ROWS = 100
HEALTHY_STATES = frozenset({CONNECTED, IDLE})
BUDGET_WARN = 0.9


def _int(v: float) -> str:
    return f"{int(v):,}"


def _figure(v: float) -> str:
    """A rate or share: whole above 100, one decimal above 1, two significant digits below (0.024, not 0.0: a rate
    that is not zero never reads as zero), ``< 0.001`` below that, ``0`` for none."""
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 1:
        return f"{v:.1f}"
    if v <= 0:
        return "0"
    if v < 0.001:
        return "< 0.001"
    return f"{v:.{1 - math.floor(math.log10(v))}f}".rstrip("0").rstrip(".")


def _bytes(v: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if v >= size:
            return f"{v / size:.1f}\N{NO-BREAK SPACE}{unit}"
    return f"{int(v)}\N{NO-BREAK SPACE}B"


def _time(v: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(v)) if v else "never"


def _duration(v: float) -> str:
    s = int(v)
    if s >= 86400:
        return f"{s // 86400} d {s % 86400 // 3600:02d} h"
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    if s >= 60:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s} s"


FORMATS: dict[str, Callable[[float], str]] = {
    "int": _int,
    "rate": _figure,
    "bytes": _bytes,
    "time": _time,
    "time_ms": lambda v: _time(v / 1000),
    "pct": lambda v: f"{_figure(v)}\N{NO-BREAK SPACE}%",
    "dur": _duration,
    "secs": lambda v: f"{v:.0f}",
}
"""How ``data-fmt`` turns ``data-v`` into the text shown (``text``: shown as it is)."""


def _v(src: str, value: object, fmt: str = "int", cls: str = "") -> str:
    """One shown value with its provenance (see the module rules)."""
    text = str(value) if fmt == "text" else FORMATS[fmt](value)  # type: ignore[arg-type]  # a number: only "text" shows others
    klass = f' class="{cls}"' if cls else ""
    return f'<span{klass} data-src="{escape(src)}" data-v="{escape(str(value))}" data-fmt="{fmt}">{escape(text)}</span>'


class _Counters:
    """Counter values by name and labels, over every counter set (a name is shown from the set that has it)."""

    def __init__(self, counter_sets: Iterable[tuple[str, CounterSet]]) -> None:
        self.values: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
        for _, counters in counter_sets:
            for name, labels, value in counters.items():
                self.values.setdefault((name, tuple(labels)), value)

    def get(self, name: str) -> int:
        return self.values.get((name, ()), 0)

    def labelled(self, name: str, label: str) -> dict[str, int]:
        return {dict(lb)[label]: v for (n, lb), v in self.values.items() if n == name and label in dict(lb)}


def _card(title: str, total: str, detail: str, chart: str, tone: str) -> str:
    return f"""      <section class="card {tone}">
        <h2>{title}</h2>
        <p class="big">{total}</p>
        <p class="detail">{detail}</p>
        {chart}
      </section>"""


def _problems(
    gauges: dict[str, float],
    brokers: Sequence[BrokerState],
    times: MetadataTimes,
    discard_rate: float | None,
    broker_problem: str | None,
) -> list[str]:
    out = []
    if not times.last_updated_ms:
        out.append(
            "no metadata from Kafka yet" + (": no bootstrap broker answered (see Brokers)" if times.bootstrap else "")
        )
    if broker_problem:  # e.g. every broker refused authentication: no sender may exist yet to show it
        out.append(_v("queues:broker_problem", broker_problem, "text"))
    bad = [b for b in brokers if b.state not in HEALTHY_STATES]
    if bad:
        out.append(
            "broker trouble: "
            + ", ".join(f"broker {_v(f'broker:{b.node_id}:node_id', b.node_id, 'text')} {escape(b.state)}" for b in bad)
        )
    if discard_rate:
        out.append("discarding messages")
    cap = gauges.get("MsgBufferCapacityBytes", 0)
    if cap and gauges.get("MsgBufferUsedBytes", 0) >= BUDGET_WARN * cap:
        out.append("message budget nearly full")
    if gauges.get("SpoolDegraded"):
        out.append("spool disk error: holding messages in memory only until restart (the log says why)")
    on_disk = int(gauges.get("SpoolHeldOnDisk", 0))
    if on_disk:
        out.append(f"{_v('gauge:SpoolHeldOnDisk', on_disk)} messages held on disk only (no room in the message budget)")
    return out  # HTML: values escaped


def _scale(what: str, values: Sequence[float], span: float | None) -> str:
    """A chart's scale in words: the time it spans and its top, the highest per-second rate (its bottom is zero)."""
    if len(values) < 2 or span is None:
        return '<p class="scale">no data yet</p>'
    peak = _v(f"rate:{what}:peak", max(values), "rate")
    return f'<p class="scale">last {_v("rate:window", span, "secs")} s, up to {peak} /s</p>'


def _topic_rows(c: _Counters, queues: QueueStats, samples: Sequence[RateSample], span: float | None) -> tuple[str, int]:
    """The topics table's rows (at most :data:`MAX_ROWS`) and how many topics were left out."""
    delivered = c.labelled("TopicMsgDelivered", "topic")
    held = {q.topic: q for q in queues.topics}
    names = sorted(held.keys() | delivered.keys())
    rows = []
    for name in names[:MAX_ROWS]:
        q = held.get(name)
        per_topic = lambda sample, n=name: sample.topic(n)  # noqa: E731
        r = rate(samples, per_topic)
        values = series(samples, per_topic)
        chart = sparkline(values, "Delivered per second", "#059669", width=120, height=24)
        chart += _scale(f"topic:{name}", values, span)
        cells = [
            f'<th scope="row">{_v(f"topic:{name}", name, "text")}</th>',
            f'<td class="num">{_v(f"counters:TopicMsgDelivered{{topic={name}}}", delivered.get(name, 0))}</td>',
            f'<td class="num">{"&ndash;" if r is None else _v(f"rate:topic:{name}", r, "rate")}</td>',
            f"<td>{chart}</td>",
        ]
        for state in ("batch", "send_wait", "ack_wait"):
            cells.append(f'<td class="num">{_v(f"queues:{name}:{state}", getattr(q, state)) if q else "&ndash;"}</td>')
        rows.append("          <tr>" + "".join(cells) + "</tr>")
    if not rows:
        rows.append('          <tr><td colspan="7" class="muted">no topic has seen a message yet</td></tr>')
    return "\n".join(rows), max(0, len(names) - MAX_ROWS)


def _discard_rows(c: _Counters) -> str:
    rows = [
        f'          <tr><th scope="row"><code>{escape(reason)}</code></th>'
        f'<td class="num">{_v(f"counters:Discard{{reason={reason}}}", n)}</td></tr>'
        for reason, n in sorted(c.labelled("Discard", "reason").items())
    ]
    return "\n".join(rows) or '          <tr><td colspan="2" class="muted">no discards</td></tr>'


def _bootstrap_rows(bootstrap: Sequence[BootstrapState]) -> str:
    """Before the first metadata: each configured broker and the last error in asking it (what the log says)."""
    rows = []
    for b in bootstrap:
        src = f"bootstrap:{b.address}"
        error = _v(f"{src}:last_error", b.last_error, "text") if b.last_error else "no answer yet"
        at = _v(f"{src}:last_error_at", b.last_error_at, "time") if b.last_error else ""
        rows.append(
            f'          <tr><th scope="row">bootstrap</th><td>{_v(f"{src}:address", b.address, "text")}</td>'
            f'<td><span class="state bad">no metadata</span></td><td>start</td><td>{error}</td><td>{at}</td></tr>'
        )
    return "\n".join(rows)


def _broker_rows(brokers: Sequence[BrokerState]) -> str:
    rows = []
    for b in brokers:
        src = f"broker:{b.node_id}"
        tone = "ok" if b.state == CONNECTED else "idle" if b.state == IDLE else "bad"
        rows.append(
            f'          <tr><th scope="row">{_v(f"{src}:node_id", b.node_id, "text")}</th>'
            f"<td>{_v(f'{src}:host', b.host, 'text')}:{_v(f'{src}:port', b.port, 'text')}</td>"
            f'<td><span class="state {tone}">{_v(f"{src}:state", b.state, "text")}</span></td>'
            f"<td>{_v(f'{src}:since', b.since, 'time') if b.since else 'start'}</td>"
            f"<td>{_v(f'{src}:last_error', b.last_error, 'text') if b.last_error else '—'}</td>"
            f"<td>{_v(f'{src}:last_error_at', b.last_error_at, 'time') if b.last_error else ''}</td></tr>"
        )
    return "\n".join(rows) or '          <tr><td colspan="6" class="muted">no broker known yet (no metadata)</td></tr>'


def render_front_page(source: StatusSource, *, now: float, metrics: bool = True) -> str:
    """The dashboard for ``source`` at wall-clock time ``now`` (epoch seconds)."""
    info = source.server_info()
    c = _Counters(source.counter_sets())
    gauges: dict[str, float] = {}
    for g in source.gauges():  # a labelled gauge is shown as its sum, like a counter in two sets on /metrics
        gauges[g.name] = gauges.get(g.name, 0) + g.value
    queues = source.queue_stats()
    times = source.metadata_times()
    brokers = list(source.broker_states())
    samples: Sequence[RateSample] = source.rate_samples()

    def rates(value: Callable[[RateSample], int | None]) -> tuple[float | None, list[float]]:
        return rate(samples, value), series(samples, value)

    span = window_span(samples)
    if span is None:
        window = "(no rate yet)"
    elif now - info.start_time < WINDOW_S:
        window = f"since start, {_v('rate:window', span, 'secs')} s"
    else:
        window = f"over the last {_v('rate:window', span, 'secs')} s"

    def rate_text(what: str, r: float | None) -> str:
        return "&ndash; /s (no rate yet)" if r is None else f"{_v(f'rate:{what}', r, 'rate')} /s {window}"

    def chart(what: str, values: list[float], label: str, colour: str) -> str:
        return sparkline(values, label, colour) + _scale(what, values, span)

    received_r, received_s = rates(lambda s: s.received)
    delivered_r, delivered_s = rates(lambda s: s.delivered)
    discarded_r, discarded_s = rates(lambda s: s.discarded)
    problems = _problems(gauges, brokers, times, discarded_r, queues.broker_problem)

    used, cap = gauges.get("MsgBufferUsedBytes", 0), gauges.get("MsgBufferCapacityBytes", 0)
    share = 100.0 * used / cap if cap else 0.0
    budget = (
        f'<div class="bar" role="img" aria-label="budget {share:.1f} percent used">'
        f'<div style="width:{min(100.0, share):.1f}%"></div></div>'
    )
    connected = sum(1 for b in brokers if b.state == CONNECTED)
    cards = "\n".join(
        [
            _card(
                "Received",
                _v("counters:MsgReceived", c.get("MsgReceived")),
                rate_text("received", received_r),
                chart("received", received_s, "Received per second", "#2563eb"),
                "blue",
            ),
            _card(
                "Delivered",
                _v("counters:MsgDelivered", c.get("MsgDelivered")),
                rate_text("delivered", delivered_r),
                chart("delivered", delivered_s, "Delivered per second", "#059669"),
                "green",
            ),
            _card(
                "Discarded",
                _v("counters:MsgDiscarded", c.get("MsgDiscarded")),
                rate_text("discarded", discarded_r),
                chart("discarded", discarded_s, "Discarded per second", "#dc2626"),
                "red" if c.get("MsgDiscarded") else "grey",
            ),
            _card(
                "In flight",
                _v("gauge:MsgInFlight", int(gauges.get("MsgInFlight", 0))),
                f"budget {_v('gauge:MsgBufferUsedBytes', int(used), 'bytes')} of "
                f"{_v('gauge:MsgBufferCapacityBytes', int(cap), 'bytes')} "
                f"({_v('derived:budget_pct', share, 'pct')}); most ever "
                f"{_v('gauge:MsgBufferHighWaterBytes', int(gauges.get('MsgBufferHighWaterBytes', 0)), 'bytes')}",
                budget,
                "amber" if share < 100 * BUDGET_WARN else "red",
            ),
            _card(
                "Brokers",
                f"{_v('derived:brokers_connected', connected)} of {_v('derived:brokers_known', len(brokers))}",
                f"connected; requests awaiting an ACK: "
                f"{_v('gauge:InFlightRequests', int(gauges.get('InFlightRequests', 0)))}",
                "",
                "green" if brokers and connected == len(brokers) else "amber",
            ),
        ]
    )

    spool = spool_panel(gauges, c.get, _v)  # "" without --spool_dir
    topic_rows, more = _topic_rows(c, queues, samples, span)
    more_note = f'<p class="muted">and {_v("derived:topics_not_shown", more)} more topics</p>' if more > 0 else ""
    discard_rows = _discard_rows(c)
    no_metadata = not times.last_updated_ms and times.bootstrap
    broker_rows = _bootstrap_rows(times.bootstrap) if no_metadata else _broker_rows(brokers)
    health = (
        '<p class="health ok" role="status">Healthy: metadata fetched, no broker in trouble, nothing discarded in the '
        "rate window</p>"
        if not problems
        else f'<p class="health bad" role="status">Attention: {"; ".join(problems)}</p>'
    )
    return f"""<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8"/>
    <meta name="viewport" content="width=device-width, initial-scale=1"/>
    <meta http-equiv="refresh" content="{REFRESH_S}"/>
    <title>bruce status</title>
    <style>{_CSS}</style>
  </head>
  <body>
    <header>
      <h1>bruce <small>{_v("server_info:version", info.version, "text")}</small></h1>
      <p>pid {_v("server_info:pid", info.pid, "text")} · up {_v("derived:uptime", now - info.start_time, "dur")}
        (since {_v("server_info:since", int(info.start_time), "time")}) · page of
        {_v("server_info:now", int(now), "time")} · refreshes itself</p>
    </header>
    <main>
    {health}
    <div class="cards">
{cards}
    </div>
{spool}
    <div class="cols">
      <section class="wide">
        <h2>Topics</h2>
        <table>
          <thead><tr><th scope="col">topic</th><th scope="col">delivered</th><th scope="col">per second, {window}</th>
            <th scope="col">trend</th><th scope="col">batch</th><th scope="col">send wait</th>
            <th scope="col">ACK wait</th></tr></thead>
          <tbody>
{topic_rows}
          </tbody>
        </table>
        {more_note}
        <p class="muted">Not yet routed to a topic: {_v("queues:new", queues.new)}; held in all:
          {_v("derived:queues_total", queues.total)}.</p>
      </section>
      <section>
        <h2>Discards by reason</h2>
        <table>
          <thead><tr><th scope="col">reason</th><th scope="col">messages</th></tr></thead>
          <tbody>
{discard_rows}
          </tbody>
        </table>
        <p class="muted">Details: the discard report, under Pages.</p>
      </section>
    </div>
    <section>
      <h2>Brokers</h2>
      <table>
        <thead><tr><th scope="col">id</th><th scope="col">address</th><th scope="col">state</th>
          <th scope="col">since</th><th scope="col">last error</th><th scope="col">at</th></tr></thead>
        <tbody>
{broker_rows}
        </tbody>
      </table>
      <p class="muted">Metadata last fetched {_v("metadata:last_updated", times.last_updated_ms, "time_ms")}, last
        changed {_v("metadata:last_modified", times.last_modified_ms, "time_ms")}.</p>
    </section>
{controls(metrics=metrics)}
    </main>
  </body>
</html>
"""


_CSS = """
      :root { color-scheme: light; --ink: #1f2937; --muted: #6b7280; --line: #e5e7eb; --bg: #f5f6f8; }
      * { box-sizing: border-box; }
      body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
             background: var(--bg); }
      header { background: #111827; color: #f9fafb; padding: 14px 28px; }
      header h1 { margin: 0; font-size: 22px; font-weight: 650; }
      header h1 small { font-weight: 400; color: #9ca3af; font-size: 15px; margin-left: 6px; }
      header p { margin: 4px 0 0; color: #d1d5db; font-size: 13px; }
      main { padding: 18px 28px 28px; max-width: 1800px; }
      h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .06em; color: var(--muted); margin: 0 0 8px; }
      section { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px;
                margin-bottom: 16px; }
      .health { margin: 0 0 16px; padding: 10px 14px; border-radius: 8px; font-weight: 600; }
      .health.ok { background: #ecfdf5; color: #065f46; border: 1px solid #a7f3d0; }
      .health.bad { background: #fef2f2; color: #991b1b; border: 1px solid #fecaca; }
      .cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(200px, 1fr)); gap: 14px;
               margin-bottom: 16px; }
      .card { margin: 0; border-top: 4px solid #9ca3af; }
      .card.blue { border-top-color: #2563eb; } .card.green { border-top-color: #059669; }
      .card.red { border-top-color: #dc2626; } .card.amber { border-top-color: #d97706; }
      .big { font-size: 28px; font-weight: 650; margin: 0; font-variant-numeric: tabular-nums; }
      .detail { margin: 2px 0 8px; color: var(--muted); font-size: 13px; min-height: 2.9em; }
      .spark { display: block; width: 100%; }
      .scale { margin: 2px 0 0; color: var(--muted); font-size: 11px; }
      .bar { height: 10px; background: #f3f4f6; border-radius: 5px; overflow: hidden; border: 1px solid var(--line); }
      .bar div { height: 100%; background: #d97706; }
      .cols { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); column-gap: 16px; }
      .cols section.wide { grid-column: span 2; }
      @media (max-width: 1000px) { .cols { grid-template-columns: 1fr; } .cols section.wide { grid-column: auto; } }
      .spool tbody th { white-space: nowrap; padding-right: 16px; }
      .debug td:first-child { white-space: nowrap; width: 1%; padding-right: 16px; }
      .debug form { margin: 2px 0; }
      table { border-collapse: collapse; width: 100%; font-size: 14px; }
      th, td { text-align: left; padding: 5px 10px 5px 0; border-bottom: 1px solid var(--line);
               vertical-align: middle; }
      thead th { color: var(--muted); font-weight: 500; font-size: 12px; }
      tbody th { font-weight: 600; }
      td.num { text-align: right; font-variant-numeric: tabular-nums; padding-right: 18px; }
      .muted { color: var(--muted); font-size: 13px; }
      .state { padding: 1px 8px; border-radius: 10px; font-size: 13px; font-weight: 600; }
      .state.ok { background: #d1fae5; color: #065f46; } .state.bad { background: #fee2e2; color: #991b1b; }
      .state.idle { background: #f3f4f6; color: #374151; }
      form { display: inline-block; margin: 4px 6px 0 0; }
      input[type=submit] { font: inherit; font-size: 13px; padding: 4px 10px; border: 1px solid #d1d5db;
                           border-radius: 6px; background: #fff; cursor: pointer; }
      ul { margin: 0; padding-left: 18px; } a { color: #1d4ed8; }
    """
