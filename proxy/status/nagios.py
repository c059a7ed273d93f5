"""``bruce-check``: Nagios checks of a Bruce daemon (this one or Bruce C++) by the rules of Bruce's monitoring scripts.

Rules:
- Nagios plugin conventions: exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN; one status line on stdout, the problems
  after the state, performance data after ``|``. A daemon that does not answer is CRITICAL (it is probably down); an
  answer in the wrong shape, a bad state file or bad arguments are UNKNOWN.
- ``counters`` reads ``/counters/json`` and keeps each report in a state file (JSON, the reports of the last
  ``--interval`` seconds and the newest older one; at most :data:`MAX_REPORTS`). Against the previous report of the
  same process (same pid; after a restart, against zero) it judges the increases, as Bruce's
  ``check_bruce_counters.py`` does: any of :data:`CRITICAL_COUNTERS` is CRITICAL, any of :data:`WARNING_COUNTERS` is
  WARNING, the sum of :data:`SOCKET_ERROR_COUNTERS` over ``-w``/``-c`` is WARNING/CRITICAL, ``Mongoose*`` errors
  over 1 are UNKNOWN. ``MsgCreate - MsgDestroy`` (messages held) over ``-W``/``-C`` is WARNING/CRITICAL. When a
  report at least ``--interval`` seconds old exists, ``GetMetadataSuccess`` must have grown since (else CRITICAL:
  metadata is not being refreshed). Every counter must be present once, the same names in consecutive reports, and
  none may decrease (else UNKNOWN).
- ``discards`` reads ``/discards/json`` and judges the unfinished and the last finished report as Bruce's
  ``check_bruce_discards.py`` does: malformed datagrams, bad-topic messages (unless ``--ignore_bad_topics``) or a
  discarded topic not named by ``--ignore_topic`` are CRITICAL.
- Standard library only (urllib), bounded: one request with ``--timeout``, answers over :data:`MAX_BODY` refused.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

OK, WARNING, CRITICAL, UNKNOWN = 0, 1, 2, 3
STATE_NAMES = ("OK", "WARNING", "CRITICAL", "UNKNOWN")
MAX_BODY = 16 * 1024 * 1024
MAX_REPORTS = 1000

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
    """The check cannot judge: ``state`` (UNKNOWN or CRITICAL) and why."""

    def __init__(self, state: int, message: str) -> None:
        super().__init__(message)
        self.state = state


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
        text = "; ".join(self.problems) or summary
        return f"BRUCE {what} {STATE_NAMES[self.state]} - {text}" + (" | " + " ".join(self.perf) if self.perf else "")


def fetch_json(url: str, timeout: float) -> dict[str, Any]:
    """One GET; CRITICAL when the daemon does not answer, UNKNOWN when the answer is not a JSON object."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body = response.read(MAX_BODY + 1)
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise CheckError(CRITICAL, f"cannot read {url}: {reason}") from e
    if len(body) > MAX_BODY:
        raise CheckError(UNKNOWN, f"{url} answered more than {MAX_BODY} bytes")
    try:
        data = json.loads(body)
    except ValueError as e:
        raise CheckError(UNKNOWN, f"{url} is not JSON: {e}") from e
    if not isinstance(data, dict):
        raise CheckError(UNKNOWN, f"{url} is not a JSON object")
    return data


def _int(data: dict[str, Any], key: str, where: str) -> int:
    value = data.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise CheckError(UNKNOWN, f"{where}: {key!r} is missing or not an integer")
    return value


def parse_counters(data: dict[str, Any]) -> tuple[int, int, dict[str, int]]:
    """``(now, pid, {name: value})`` from a ``/counters/json`` answer, checked as Bruce's script checks it."""
    now, pid = _int(data, "now", "counter report"), _int(data, "pid", "counter report")
    _int(data, "since", "counter report")
    if not isinstance(data.get("version"), str):
        raise CheckError(UNKNOWN, "counter report: 'version' is missing or not a string")
    items = data.get("counters")
    if not isinstance(items, list):
        raise CheckError(UNKNOWN, "counter report: 'counters' is missing or not a list")
    counters: dict[str, int] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise CheckError(UNKNOWN, "counter report: an item has no name")
        name = item["name"]
        if name in counters:
            raise CheckError(UNKNOWN, f"duplicate counter name [{name}]")
        if not isinstance(item.get("location"), str):
            raise CheckError(UNKNOWN, f"counter [{name}] has no location")
        counters[name] = _int(item, "value", f"counter [{name}]")
    missing = [name for name in READ_COUNTERS if name not in counters]
    if missing:
        raise CheckError(UNKNOWN, f"counter {missing[0]} not found ({len(missing)} of the names read are missing)")
    return now, pid, counters


def load_state(path: Path) -> list[dict[str, Any]]:
    """The reports kept by earlier runs, oldest first (none when the file does not exist yet)."""
    try:
        reports = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as e:
        raise CheckError(UNKNOWN, f"state file {path}: {e}") from e
    if not isinstance(reports, list) or not all(isinstance(r, dict) for r in reports):
        raise CheckError(UNKNOWN, f"state file {path}: not a list of reports")
    return reports


def save_state(path: Path, reports: list[dict[str, Any]]) -> None:
    """Write the reports atomically (a temporary file renamed over the old one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(reports, f)
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise CheckError(UNKNOWN, f"state file {path}: {e}") from e


def _keep(reports: list[dict[str, Any]], now: int, interval: int) -> list[dict[str, Any]]:
    """The reports of the last ``interval`` seconds and the newest older one (what the next run can need)."""
    older = [r for r in reports if r["now"] <= now - interval]
    return (older[-1:] + [r for r in reports if r["now"] > now - interval])[-MAX_REPORTS:]


def judge_counters(
    now: int, pid: int, counters: dict[str, int], previous: list[dict[str, Any]], args: argparse.Namespace
) -> CheckResult:
    """Bruce's rules (module docstring) for one report against the earlier ones (oldest first)."""
    v = CheckResult()
    same = [r for r in previous if r.get("pid") == pid and r.get("now", now) < now]
    last = same[-1]["counters"] if same else None
    if last is not None and set(last) != set(counters):
        changed = sorted(set(last) ^ set(counters))
        raise CheckError(UNKNOWN, f"counter names changed between reports: {', '.join(changed[:5])}")
    deltas = {name: value - (last[name] if last else 0) for name, value in counters.items()}
    dropped = [name for name, d in deltas.items() if d < 0]
    if dropped:
        raise CheckError(UNKNOWN, f"counter {dropped[0]} decreased by {-deltas[dropped[0]]}")
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
        before, after = old[-1]["counters"]["GetMetadataSuccess"], counters["GetMetadataSuccess"]
        if after <= before:
            v.add(CRITICAL, f"GetMetadataSuccess not increasing in {now - old[-1]['now']} s: {before} -> {after}")
    w, c = args.socket_error_warn_threshold, args.socket_error_critical_threshold
    v.perf = [
        f"socket_errors={socket_errors};{w};{c};0",
        f"msgs_held={held};{args.msg_count_warn_threshold};{args.msg_count_critical_threshold};0",
        f"metadata_updates={counters['GetMetadataSuccess']}c",
    ]
    return v


def check_counters(args: argparse.Namespace) -> CheckResult:
    data = fetch_json(f"http://{args.bruce_host}:{args.bruce_status_port}/counters/json", args.timeout)
    now, pid, counters = parse_counters(data)
    state = Path(args.state_file)
    previous = load_state(state)
    verdict = judge_counters(now, pid, counters, previous, args)
    kept = [r for r in previous if r.get("now") != now]
    save_state(state, _keep([*kept, {"now": now, "pid": pid, "counters": counters}], now, args.interval))
    return verdict


def _reports(data: dict[str, Any]) -> list[dict[str, Any]]:
    for key in ("now", "pid", "interval"):
        _int(data, key, "discard answer")
    reports: list[Any] = [data.get("unfinished_report")] + (
        [data["finished_report"]] if "finished_report" in data else []
    )
    for report in reports:
        if not isinstance(report, dict):
            raise CheckError(UNKNOWN, "discard answer: a report is missing or not an object")
        for key in ("malformed_msg_count", "bad_topic_msg_count", "unsupported_version_msg_count"):
            _int(report, key, "discard report")
        topics = report.get("discard_topic")
        if not isinstance(topics, list) or not all(
            isinstance(t, dict) and isinstance(t.get("topic"), str) for t in topics
        ):
            raise CheckError(UNKNOWN, "discard report: 'discard_topic' is not a list of topics")
    return reports


def check_discards(args: argparse.Namespace) -> CheckResult:
    data = fetch_json(f"http://{args.bruce_host}:{args.bruce_status_port}/discards/json", args.timeout)
    v = CheckResult()
    malformed = bad_topic = discarded = 0
    topics: dict[str, int] = {}
    ignored = set(args.ignore_topic)
    for report in _reports(data):
        malformed += report["malformed_msg_count"]
        bad_topic += report["bad_topic_msg_count"]
        for t in report["discard_topic"]:
            count = t.get("count", 0) if isinstance(t.get("count"), int) else 0
            discarded += count
            if t["topic"] not in ignored:
                topics[t["topic"]] = topics.get(t["topic"], 0) + count
    if malformed:
        v.add(CRITICAL, f"{malformed} malformed datagrams")
    if bad_topic and not args.ignore_bad_topics:
        v.add(CRITICAL, f"{bad_topic} messages for unknown topics")
    if topics:
        shown = ", ".join(f"{t} ({n})" for t, n in sorted(topics.items())[:5])
        v.add(CRITICAL, f"discards in {len(topics)} topics: {shown}")
    v.perf = [f"malformed={malformed};;0;0", f"bad_topic={bad_topic};;0;0", f"discarded={discarded};;0;0"]
    return v


def _nonnegative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors exiting 3 (Nagios UNKNOWN) instead of 2 (which Nagios reads as CRITICAL)."""

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stdout.write(message)
        sys.exit(UNKNOWN if status else 0)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="bruce-check", description="Nagios checks of a Bruce daemon's status pages.")
    sub = p.add_subparsers(dest="check", required=True, parser_class=_Parser)
    common = _Parser(add_help=False)
    common.add_argument("-b", "--bruce_host", default="127.0.0.1", help="status host (default 127.0.0.1)")
    common.add_argument("-p", "--bruce_status_port", type=int, default=9090, help="status port (default 9090)")
    common.add_argument("-t", "--timeout", type=float, default=10.0, help="seconds to wait for the answer (10)")
    c = sub.add_parser("counters", parents=[common], help="judge /counters/json against the previous report")
    c.add_argument("-s", "--state_file", required=True, help="where the previous reports are kept (JSON)")
    c.add_argument("-w", "--socket_error_warn_threshold", type=_nonnegative, required=True)
    c.add_argument("-c", "--socket_error_critical_threshold", type=_nonnegative, required=True)
    c.add_argument("-W", "--msg_count_warn_threshold", type=_nonnegative, required=True)
    c.add_argument("-C", "--msg_count_critical_threshold", type=_nonnegative, required=True)
    c.add_argument(
        "-i", "--interval", type=_nonnegative, default=1200, help="seconds in which metadata must refresh (1200)"
    )
    d = sub.add_parser("discards", parents=[common], help="judge /discards/json")
    d.add_argument("-g", "--ignore_bad_topics", action="store_true", help="bad-topic discards are not a problem")
    d.add_argument("-i", "--ignore_topic", action="append", default=[], help="a topic whose discards are ignored")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run one check; print its status line; return the Nagios exit code."""
    args = parser().parse_args(argv)
    what = "COUNTERS" if args.check == "counters" else "DISCARDS"
    try:
        verdict = check_counters(args) if args.check == "counters" else check_discards(args)
    except CheckError as e:
        print(f"BRUCE {what} {STATE_NAMES[e.state]} - {e}")
        return e.state
    summary = "no problems" if args.check == "counters" else "no discards"
    print(verdict.line(what, summary))
    return verdict.state


if __name__ == "__main__":
    sys.exit(main())
