"""The rules of Bruce's two Nagios scripts, as pure functions of the pages they read: what ``bruce-check`` judges.

Rules:
- ``counters``: a ``/counters/json`` answer is checked as Bruce's ``check_bruce_counters.py`` checks it (``now``,
  ``since``, ``pid``, ``version``, every counter named once with a location and an integer value, every name of
  :data:`READ_COUNTERS` present). Against the previous report of the same process (same pid; after a restart,
  against zero) the increases are judged: any of :data:`CRITICAL_COUNTERS` is CRITICAL, any of
  :data:`WARNING_COUNTERS` is WARNING, the sum of :data:`SOCKET_ERROR_COUNTERS` over ``-w``/``-c`` is
  WARNING/CRITICAL, ``Mongoose*`` errors over 1 are UNKNOWN. ``MsgCreate - MsgDestroy`` (messages held) over
  ``-W``/``-C`` is WARNING/CRITICAL. When a report at least ``--interval`` seconds old exists, ``GetMetadataSuccess``
  must have grown since (else CRITICAL: metadata is not being refreshed). The same names in consecutive reports, and
  none may decrease (else UNKNOWN).
- ``discards``: the unfinished and the last finished report of ``/discards/json``, as Bruce's
  ``check_bruce_discards.py`` judges them: malformed datagrams, bad-topic messages (unless ignored) or a discarded
  topic not ignored are CRITICAL.
- A status line is one line: text from the server (topic and counter names, reasons) has its control characters and
  ``|`` written ``?`` and is cut at :data:`MAX_TEXT` characters, so it cannot add a line or performance data.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

OK, WARNING, CRITICAL, UNKNOWN = 0, 1, 2, 3
STATE_NAMES = ("OK", "WARNING", "CRITICAL", "UNKNOWN")
MAX_TEXT = 400

CRITICAL_COUNTERS = (
    "MsgUnprocessedDestroy",
    "NoDiscardQuery",
    "MetadataHasEmptyTopicList",
    "MetadataHasEmptyBrokerList",
    "BugDispatchBatchOutOfRangeIndex",
    "BugDispatchMsgOutOfRangeIndex",
    "TopicHasNoAvailablePartitions",
    "InitialGetMetadataFail",
    "GetMetadataFail",
)
WARNING_COUNTERS = (
    "MetadataResponseBadTopicNameLen",
    "MetadataResponseBadBrokerHostLen",
    "MetadataResponseNegativeCaughtUpReplicaNodeId",
    "MetadataResponseNegativePartitionCaughtUpReplicaCount",
    "MetadataResponseNegativeReplicaNodeId",
    "MetadataResponseNegativePartitionReplicaCount",
    "MetadataResponseInvalidLeaderNodeId",
    "MetadataResponseNegativePartitionId",
    "MetadataResponseNegativePartitionCount",
    "MetadataResponseNegativeTopicCount",
    "MetadataResponseBadBrokerPort",
    "MetadataResponseNegativeBrokerNodeId",
    "MetadataResponseNegativeBrokerCount",
    "MetadataResponseHasExtraJunk",
    "BadMetadataResponseSize",
    "BadMetadataContent",
    "BadMetadataResponse",
    "ProduceResponseBadPartitionCount",
    "ProduceResponseBadTopicNameLength",
    "ProduceResponseBadTopicCount",
    "BadKafkaResponseSize",
    "BugGetAckWaitQueueOutOfRangeIndex",
    "ProduceResponseUnexpectedTopic",
    "ProduceResponseUnexpectedPartition",
    "ProduceResponseShortPartitionList",
    "ProduceResponseShortTopicList",
    "CorrelationIdMismatch",
    "BadProduceResponseSize",
    "BadProduceResponse",
    "BugAllTopicsEmpty",
    "BugMsgListMultipleTopics",
    "BugMsgSetEmpty",
    "BugMultiPartitionGroupEmpty",
    "BugProduceRequestEmpty",
    "MsgSetCompressionError",
    "ConnectorTruncateLongTimeout",
)
SOCKET_ERROR_COUNTERS = (
    "ConnectFailOnTryGetMetadata",
    "ConnectorConnectFail",
    "ConnectorSocketBrokerClose",
    "ConnectorSocketError",
    "ConnectorSocketTimeout",
    "MetadataResponseRead1LostTcpConnection",
    "MetadataResponseRead1TimedOut",
    "MetadataResponseRead2LostTcpConnection",
    "MetadataResponseRead2TimedOut",
    "MetadataResponseRead2UnexpectedEnd",
    "ReadMetadataResponse2Fail",
    "SendMetadataRequestFail",
    "SendMetadataRequestLostTcpConnection",
)
HTTP_ERROR_COUNTERS = ("MongooseUrlDecodeError", "MongooseStdException", "MongooseUnknownException")
READ_COUNTERS = (
    *CRITICAL_COUNTERS,
    *WARNING_COUNTERS,
    *SOCKET_ERROR_COUNTERS,
    *HTTP_ERROR_COUNTERS,
    "MsgCreate",
    "MsgDestroy",
    "GetMetadataSuccess",
)
"""Every counter name the counters check reads (Bruce's script reads the same 64)."""


class CheckError(Exception):
    """The check cannot judge (UNKNOWN); the message says why."""


def one_line(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` safe in a status line: control characters and ``|`` as ``?``, at most ``limit`` characters."""
    cut = text if len(text) <= limit else text[: limit - 1] + "…"
    return "".join("?" if c == "|" or not c.isprintable() else c for c in cut)


def status_line(what: str, state: int, text: str, perf: Sequence[str] = ()) -> str:
    """The one line Nagios reads: ``BRUCE <what> <STATE> - <text>[ | <perf>]``."""
    return f"BRUCE {what} {STATE_NAMES[state]} - {one_line(text)}" + (" | " + " ".join(perf) if perf else "")


@dataclass
class CheckResult:
    """The worst state so far, the problems found and the performance data."""

    state: int = OK
    problems: list[str] = field(default_factory=list)
    perf: list[str] = field(default_factory=list)

    def add(self, state: int, problem: str) -> None:
        self.state = max(self.state, state)
        self.problems.append(f"{STATE_NAMES[state]}: {problem}")

    def line(self, what: str, summary: str) -> str:
        return status_line(what, self.state, "; ".join(self.problems) or summary, self.perf)


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int(data: dict[str, Any], key: str, where: str) -> int:
    value = data.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise CheckError(f"{where}: {key!r} is missing or not an integer")
    return value


def parse_counters(data: dict[str, Any]) -> tuple[int, int, dict[str, int]]:
    """``(now, pid, {name: value})`` from a ``/counters/json`` answer, checked as Bruce's script checks it."""
    now, pid = _int(data, "now", "counter report"), _int(data, "pid", "counter report")
    _int(data, "since", "counter report")
    if not isinstance(data.get("version"), str):
        raise CheckError("counter report: 'version' is missing or not a string")
    items = data.get("counters")
    if not isinstance(items, list):
        raise CheckError("counter report: 'counters' is missing or not a list")
    counters: dict[str, int] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise CheckError("counter report: an item has no name")
        name = item["name"]
        if name in counters:
            raise CheckError(f"duplicate counter name [{name}]")
        if not isinstance(item.get("location"), str):
            raise CheckError(f"counter [{name}] has no location")
        counters[name] = _int(item, "value", f"counter [{name}]")
    missing = [name for name in READ_COUNTERS if name not in counters]
    if missing:
        raise CheckError(f"counter {missing[0]} not found ({len(missing)} of the names read are missing)")
    return now, pid, counters


def judge_counters(
    now: int, pid: int, counters: dict[str, int], previous: list[dict[str, Any]], args: argparse.Namespace
) -> CheckResult:
    """Bruce's rules (module docstring) for one report against the earlier ones (oldest first)."""
    v = CheckResult()
    same = [r for r in previous if r.get("pid") == pid and r.get("now", now) < now]
    last = same[-1]["counters"] if same else None
    if last is not None and set(last) != set(counters):
        changed = sorted(set(last) ^ set(counters))
        raise CheckError(f"counter names changed between reports: {', '.join(changed[:5])}")
    deltas = {name: value - (last[name] if last else 0) for name, value in counters.items()}
    dropped = [name for name, d in deltas.items() if d < 0]
    if dropped:
        raise CheckError(f"counter {dropped[0]} decreased by {-deltas[dropped[0]]}")
    for name in CRITICAL_COUNTERS:
        if deltas[name] > 0:
            v.add(CRITICAL, f"{name}={deltas[name]}")
    for name in WARNING_COUNTERS:
        if deltas[name] > 0:
            v.add(WARNING, f"{name}={deltas[name]}")
    socket_errors = sum(deltas[name] for name in SOCKET_ERROR_COUNTERS)
    if socket_errors > args.socket_error_critical_threshold:
        v.add(CRITICAL, f"{socket_errors} socket errors")
    elif socket_errors > args.socket_error_warn_threshold:
        v.add(WARNING, f"{socket_errors} socket errors")
    for name in HTTP_ERROR_COUNTERS:
        if deltas[name] > 1:
            v.add(UNKNOWN, f"{name}={deltas[name]}")
    created, destroyed = counters["MsgCreate"], counters["MsgDestroy"]
    held = created - destroyed
    if destroyed > created:
        v.add(CRITICAL, f"MsgDestroy {destroyed} is greater than MsgCreate {created}")
    elif held > args.msg_count_critical_threshold:
        v.add(CRITICAL, f"MsgCreate - MsgDestroy is {held}")
    elif held > args.msg_count_warn_threshold:
        v.add(WARNING, f"MsgCreate - MsgDestroy is {held}")
    old = [r for r in same if r["now"] <= now - args.interval]
    if old:
        before, after = old[-1]["counters"].get("GetMetadataSuccess"), counters["GetMetadataSuccess"]
        if before is None:
            raise CheckError(f"the report of {old[-1]['now']} kept in the state has no GetMetadataSuccess")
        if after <= before:
            v.add(CRITICAL, f"GetMetadataSuccess not increasing in {now - old[-1]['now']} s: {before} -> {after}")
    w, c = args.socket_error_warn_threshold, args.socket_error_critical_threshold
    v.perf = [
        f"socket_errors={socket_errors};{w};{c};0",
        f"msgs_held={held};{args.msg_count_warn_threshold};{args.msg_count_critical_threshold};0",
        f"metadata_updates={counters['GetMetadataSuccess']}c",
    ]
    return v


def _reports(data: dict[str, Any]) -> list[dict[str, Any]]:
    for key in ("now", "pid", "interval"):
        _int(data, key, "discard answer")
    reports: list[Any] = [data.get("unfinished_report")] + (
        [data["finished_report"]] if "finished_report" in data else []
    )
    for report in reports:
        if not isinstance(report, dict):
            raise CheckError("discard answer: a report is missing or not an object")
        for key in ("malformed_msg_count", "bad_topic_msg_count", "unsupported_version_msg_count"):
            _int(report, key, "discard report")
        topics = report.get("discard_topic")
        if not isinstance(topics, list) or not all(
            isinstance(t, dict) and isinstance(t.get("topic"), str) for t in topics
        ):
            raise CheckError("discard report: 'discard_topic' is not a list of topics")
    return reports


def judge_discards(data: dict[str, Any], ignored: set[str], ignore_bad_topics: bool) -> CheckResult:
    """Bruce's discards rules (module docstring) on a ``/discards/json`` answer."""
    v = CheckResult()
    malformed = bad_topic = discarded = 0
    topics: dict[str, int] = {}
    for report in _reports(data):
        malformed += report["malformed_msg_count"]
        bad_topic += report["bad_topic_msg_count"]
        for t in report["discard_topic"]:
            count = t["count"] if is_int(t.get("count")) else 0
            discarded += count
            if t["topic"] not in ignored:
                topics[t["topic"]] = topics.get(t["topic"], 0) + count
    if malformed:
        v.add(CRITICAL, f"{malformed} malformed datagrams")
    if bad_topic and not ignore_bad_topics:
        v.add(CRITICAL, f"{bad_topic} messages for unknown topics")
    if topics:
        shown = ", ".join(f"{t} ({n})" for t, n in sorted(topics.items())[:5])
        v.add(CRITICAL, f"discards in {len(topics)} topics: {shown}")
    v.perf = [f"malformed={malformed};;0;0", f"bad_topic={bad_topic};;0;0", f"discarded={discarded};;0;0"]
    return v
