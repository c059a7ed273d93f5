"""``/metrics``: the counters, queue counts, metadata times and gauges in Prometheus text exposition format 0.0.4.

Rules:
- Names: a CamelCase counter or gauge name becomes snake_case with a ``bruce_`` prefix (``AckOk`` →
  ``bruce_ack_ok``; ``MsgSetCompressionYes`` → ``bruce_msg_set_compression_yes``); counters get ``_total``. Any
  character Prometheus does not allow becomes ``_``.
- One family per name, with one ``# HELP`` and one ``# TYPE`` line, its samples together. The same counter (name and
  labels) in several counter sets is one sample: the sum. Two gauge samples with the same name and labels, or a gauge
  whose name is also a counter's, are a bug in the caller and raise :class:`~bruce.wire.errors.UsageError`.
- Label values escape ``\\``, ``"`` and newline; HELP texts escape ``\\`` and newline (the format's rules).
- Besides the caller's counters and gauges: ``bruce_build_info{version}`` (1), ``bruce_start_time_seconds``,
  ``bruce_queued_messages{topic,state}`` (state: batch, send_wait, ack_wait), ``bruce_new_messages``,
  ``bruce_metadata_last_updated_timestamp_seconds`` and ``bruce_metadata_last_modified_timestamp_seconds`` (0 before
  the first metadata).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from bruce.wire import UsageError

from .source import CounterSet, Gauge, Labels, MetadataTimes, QueueStats, ServerInfo

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PREFIX = "bruce_"

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NOT_NAME_CHAR = re.compile(r"[^a-zA-Z0-9_]")


def metric_name(name: str) -> str:
    """``bruce_`` + the snake_case form of a CamelCase name, made a valid Prometheus name."""
    snake = _NOT_NAME_CHAR.sub("_", _CAMEL_BOUNDARY.sub("_", name)).lower()
    return PREFIX + snake


def counter_name(name: str) -> str:
    """The sample name of a counter: :func:`metric_name` + ``_total``."""
    base = metric_name(name)
    return base if base.endswith("_total") else base + "_total"


def _label_name(name: str) -> str:
    clean = _NOT_NAME_CHAR.sub("_", name) or "_"
    if clean[0].isdigit() or clean.startswith("__"):
        clean = "_" + clean.lstrip("_")
    return clean


def _label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _help_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if isinstance(value, int):  # bool included
        return str(int(value))
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


@dataclass(slots=True)
class _Family:
    kind: str  # "counter" or "gauge"
    help: str
    samples: dict[Labels, float] = field(default_factory=dict)


class _Exposition:
    def __init__(self) -> None:
        self.families: dict[str, _Family] = {}

    def add(self, kind: str, name: str, help_text: str, labels: Labels, value: float) -> None:
        family = self.families.get(name)
        if family is None:
            family = self.families[name] = _Family(kind, help_text)
        elif family.kind != kind:
            raise UsageError(f"metric {name} is both a {family.kind} and a {kind}: rename one of them")
        key = tuple((_label_name(k), v) for k, v in labels)
        if key in family.samples:
            if kind != "counter":
                labelled = f" with labels {dict(key)}" if key else ""
                raise UsageError(f"gauge {name}{labelled} is reported twice: each name and labels must be unique")
            family.samples[key] += value
        else:
            family.samples[key] = value

    def text(self) -> str:
        out = []
        for name, family in self.families.items():
            out.append(f"# HELP {name} {_help_text(family.help)}")
            out.append(f"# TYPE {name} {family.kind}")
            for labels, value in family.samples.items():
                label_text = ",".join(f'{k}="{_label_value(v)}"' for k, v in labels)
                out.append(f"{name}{{{label_text}}} {_number(value)}" if labels else f"{name} {_number(value)}")
        return "\n".join(out) + "\n"


def render_metrics(
    info: ServerInfo,
    counter_sets: Iterable[tuple[str, CounterSet]],
    gauges: Iterable[Gauge],
    stats: QueueStats,
    times: MetadataTimes,
) -> str:
    """The whole ``/metrics`` body."""
    x = _Exposition()
    x.add("gauge", "bruce_build_info", "The running version (always 1).", (("version", info.version),), 1)
    x.add("gauge", "bruce_start_time_seconds", "When the daemon started (epoch seconds).", (), info.start_time)
    for q in stats.topics:
        for state, n in (("batch", q.batch), ("send_wait", q.send_wait), ("ack_wait", q.ack_wait)):
            x.add(
                "gauge",
                "bruce_queued_messages",
                "Held messages by topic and state (batch, send_wait, ack_wait), as on /queues.",
                (("topic", q.topic), ("state", state)),
                n,
            )
    x.add("gauge", "bruce_new_messages", "Messages received and not yet routed to a topic.", (), stats.new)
    for what, ms in (("updated", times.last_updated_ms), ("modified", times.last_modified_ms)):
        x.add(
            "gauge",
            f"bruce_metadata_last_{what}_timestamp_seconds",
            f"When metadata was last {what} (epoch seconds; 0 = never).",
            (),
            ms / 1000,
        )
    for gauge in gauges:
        x.add("gauge", metric_name(gauge.name), gauge.help, gauge.labels, gauge.value)
    for location, counters in counter_sets:
        for name, labels, value in counters.items():
            x.add("counter", counter_name(name), f"Counter {name} ({location}).", labels, value)
    return x.text()
