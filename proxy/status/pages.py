"""The status pages as pure renderers: values in, text out (Bruce's ``/server_info``, ``/counters``, ``/discards``,
``/queues``, ``/metadata_fetch_time`` and the metadata update answer). ``/metrics`` is
:mod:`bruce.proxy.status.prometheus`, the HTML front page :mod:`bruce.proxy.status.dashboard`.

Rules:
- Field names and plain-text layouts are Bruce's (docs/bruce-compatibility.md#status-pages). Times are passed in
  (``now`` in epoch seconds, ``now_ms`` in epoch milliseconds); plain pages show them as ``<number> <ctime>`` like
  Bruce.
- JSON is valid JSON: built with :func:`json.dumps` (Bruce's ``/metadata_fetch_time/json`` has a trailing comma; ours
  has not), four-space indents, a final newline.
- Counters: Bruce's catalogue (:mod:`.bruce_counters`), each name once, present from the start, as
  ``[bruce].<Name>=<value>`` lines and ``{location, name, value}`` items. Labelled detail is on ``/metrics`` only.
- ``/discards`` shows the discard tracker's report; byte prefixes are base64 as in Bruce, topics are printable text
  (the tracker made them so).
"""

from __future__ import annotations

import json
import time
from base64 import b64encode
from collections.abc import Iterable
from typing import Any

from ..accounting import DiscardReport, PeriodReport, TopicInterval
from .bruce_counters import LOCATION, bruce_counters
from .source import CounterSet, MetadataTimes, QueueStats, ServerInfo

PAGE_TITLES = {
    "server_info": "Server info",
    "counters": "Counter values",
    "discards": "Discard info",
    "queues": "Queued message info",
    "metadata_fetch_time": "Metadata fetch time",
}
PAGES = tuple(PAGE_TITLES)
"""The pages that come in ``/plain`` and ``/json``, in front-page order."""
MSG_DEBUG_COMMANDS = ("get_topics", "add_all_topics", "del_all_topics", "truncate_files")


def _ctime(seconds: float) -> str:
    return time.ctime(int(seconds))


def _json(body: dict[str, Any]) -> str:
    return json.dumps(body, indent=4) + "\n"


# -- /server_info -----------------------------------------------------------------------------------------------------


def render_server_info_plain(info: ServerInfo, *, now: float) -> str:
    now_s, since = int(now), int(info.start_time)
    return f"pid: {info.pid}\nnow: {now_s} {_ctime(now_s)}\nversion: {info.version}\nsince: {since} {_ctime(since)}\n"


def render_server_info_json(info: ServerInfo, *, now: float) -> str:
    return _json({"pid": info.pid, "now": int(now), "version": info.version, "since": int(info.start_time)})


# -- /counters --------------------------------------------------------------------------------------------------------


def render_counters_plain(info: ServerInfo, counter_sets: Iterable[tuple[str, CounterSet]], *, now: float) -> str:
    """Bruce's layout: four header lines, a blank line, ``[<location>].<Name>=<value>`` per catalogue name."""
    now_s, since = int(now), int(info.start_time)
    lines = [
        f"now={now_s} {_ctime(now_s)}",
        f"since={since} {_ctime(since)}",
        f"pid={info.pid}",
        f"version={info.version}",
        "",
    ]
    lines.extend(f"[{LOCATION}].{name}={value}" for name, value in bruce_counters(counter_sets))
    return "\n".join(lines) + "\n"


def render_counters_json(info: ServerInfo, counter_sets: Iterable[tuple[str, CounterSet]], *, now: float) -> str:
    """Bruce's layout: ``now``, ``since``, ``pid``, ``version`` and ``counters: [{location, name, value}]``."""
    counters = [{"location": LOCATION, "name": name, "value": value} for name, value in bruce_counters(counter_sets)]
    return _json(
        {"now": int(now), "since": int(info.start_time), "pid": info.pid, "version": info.version, "counters": counters}
    )


# -- /discards -------------------------------------------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return b64encode(data).decode("ascii")


def _len_bracket(text: str) -> str:
    return f"{len(text.encode())}[{text}]"


def _plain_period(p: PeriodReport) -> list[str]:
    lines = [
        f"    report ID: {p.id}",
        f"    start time: {p.start_time} {_ctime(p.start_time)}",
        f"    malformed msg count: {p.malformed_msg_count}",
        f"    unsupported API key msg count: {p.unsupported_api_key_msg_count}",
        f"    unsupported version msg count: {p.unsupported_version_msg_count}",
        f"    bad topic msg count: {p.bad_topic_msg_count}",
    ]
    sections = [
        [f"    recent malformed msg: {_len_bracket(_b64(m))}" for m in p.recent_malformed],
        [f"    unsupported msg version: {v} count: {n}" for v, n in p.unsupported_msg_version],
        [f"    recent bad topic: {_len_bracket(t)}" for t in p.recent_bad_topic],
        [f"    recent too long msg: {_len_bracket(_b64(m))}" for m in p.recent_too_long_msg],
        [f"    rate limit discard topic: {_len_bracket(t)} count {n}" for t, n in p.rate_limit_discard],
        [
            f"    discard topic: {_len_bracket(i.topic)} begin [{i.min_timestamp}] end [{i.max_timestamp}] "
            f"count {i.count}"
            for i in p.discard_topic
        ],
        [
            f"    possible duplicate topic: {_len_bracket(i.topic)} begin [{i.min_timestamp}] end "
            f"[{i.max_timestamp}] count {i.count}"
            for i in p.possible_duplicate_topic
        ],
    ]
    for section in sections:
        if section:
            lines.append("")
            lines.extend(section)
    return lines


def render_discards_plain(info: ServerInfo, report: DiscardReport) -> str:
    """``/discards/plain`` in Bruce's layout."""
    lines = [
        f"pid: {info.pid}",
        f"now: {report.now} {_ctime(report.now)}",
        f"version: {info.version}",
        f"report interval in seconds: {report.interval}",
        "",
        "current (unfinished) reporting period:",
        *_plain_period(report.unfinished),
    ]
    if report.finished is not None:
        lines += ["", "latest finished reporting period:", *_plain_period(report.finished)]
    return "\n".join(lines) + "\n"


def _json_period(p: PeriodReport) -> dict[str, Any]:
    def intervals(items: tuple[TopicInterval, ...]) -> list[dict[str, Any]]:
        return [
            {"topic": i.topic, "min_timestamp": i.min_timestamp, "max_timestamp": i.max_timestamp, "count": i.count}
            for i in items
        ]

    return {
        "id": p.id,
        "start_time": p.start_time,
        "malformed_msg_count": p.malformed_msg_count,
        "unsupported_api_key_msg_count": p.unsupported_api_key_msg_count,
        "unsupported_version_msg_count": p.unsupported_version_msg_count,
        "bad_topic_msg_count": p.bad_topic_msg_count,
        "recent_malformed": [_b64(m) for m in p.recent_malformed],
        "unsupported_msg_version": [{"version": v, "count": n} for v, n in p.unsupported_msg_version],
        "recent_bad_topic": list(p.recent_bad_topic),
        "recent_too_long_msg": [_b64(m) for m in p.recent_too_long_msg],
        "rate_limit_discard": [{"topic": t, "count": n} for t, n in p.rate_limit_discard],
        "discard_topic": intervals(p.discard_topic),
        "possible_duplicate_topic": intervals(p.possible_duplicate_topic),
    }


def render_discards_json(info: ServerInfo, report: DiscardReport) -> str:
    """``/discards/json``: Bruce's field names (``finished_report`` only once a period has finished)."""
    body: dict[str, Any] = {
        "now": report.now,
        "pid": info.pid,
        "version": info.version,
        "interval": report.interval,
        "unfinished_report": _json_period(report.unfinished),
    }
    if report.finished is not None:
        body["finished_report"] = _json_period(report.finished)
    return _json(body)


# -- /queues ----------------------------------------------------------------------------------------------------------


def render_queues_plain(info: ServerInfo, stats: QueueStats, *, now: float) -> str:
    now_s = int(now)
    lines = [f"pid: {info.pid}", f"now: {now_s} {_ctime(now_s)}", f"version: {info.version}", ""]
    lines.extend(
        f"batch: {q.batch:10d}  send_wait: {q.send_wait:10d}  ack_wait: {q.ack_wait:10d}  topic: [{q.topic}]"
        for q in stats.topics
    )
    if stats.topics:
        lines.append("")
    lines += [
        f"{stats.new:10d} total new",
        f"{stats.total_batch:10d} total batch",
        f"{stats.total_send_wait:10d} total send_wait",
        f"{stats.total_ack_wait:10d} total ack_wait",
        f"{stats.total:10d} total (all states: new + batch + send_wait + ack_wait)",
    ]
    if stats.broker_problem:
        lines += ["", f"brokers: {stats.broker_problem}"]
    return "\n".join(lines) + "\n"


def render_queues_json(info: ServerInfo, stats: QueueStats, *, now: float) -> str:
    sending = [
        {"topic": q.topic, "batch": q.batch, "send_wait": q.send_wait, "ack_wait": q.ack_wait} for q in stats.topics
    ]
    body = {"now": int(now), "pid": info.pid, "version": info.version, "sending": sending, "new": stats.new}
    if stats.broker_problem:
        body["broker_problem"] = stats.broker_problem
    return _json(body)


# -- /metadata_fetch_time, /metadata_update ---------------------------------------------------------------------------


def render_metadata_fetch_time_plain(info: ServerInfo, times: MetadataTimes, *, now_ms: int) -> str:
    return (
        f"pid: {info.pid}\n"
        f"version: {info.version}\n"
        f"now (milliseconds since epoch): {now_ms} {_ctime(now_ms // 1000)}\n"
        f"metadata last updated at (milliseconds since epoch): {times.last_updated_ms} "
        f"{_ctime(times.last_updated_ms // 1000)}\n"
        f"metadata last modified at (milliseconds since epoch): {times.last_modified_ms} "
        f"{_ctime(times.last_modified_ms // 1000)}\n"
        + (f"brokers: {times.broker_problem}\n" if times.broker_problem else "")
    )


def render_metadata_fetch_time_json(info: ServerInfo, times: MetadataTimes, *, now_ms: int) -> str:
    return _json(
        {
            "pid": info.pid,
            "version": info.version,
            "now": now_ms,
            "last_updated": times.last_updated_ms,
            "last_modified": times.last_modified_ms,
            **({"broker_problem": times.broker_problem} if times.broker_problem else {}),
        }
    )


def render_metadata_update(*, now: float) -> str:
    """The answer to ``POST /metadata_update``."""
    now_s = int(now)
    return f"Metadata update initiated at {now_s} {_ctime(now_s)}\n"
