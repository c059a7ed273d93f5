"""Bruce's own monitoring on the running daemon: the rules of Bruce's two Nagios scripts (``check_bruce_counters.py``,
``check_bruce_discards.py``), written again here from their documented behaviour, read consecutive reports of the
real daemon and judge them as they would judge Bruce C++: OK while healthy, CRITICAL while discarding or cut off from
its brokers (with socket errors counted per broker, not per retry). ``bruce-check`` agrees, and the counters served are
exactly those docs/bruce-counters.md says are served."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from deploy_files import rule_metrics
from prometheus_client.parser import text_string_to_metric_families

from bruce.proxy.config import Broker
from bruce.wire.datagram import build_any_partition

from .harness import DaemonThread, counters_json, make_config, malformed, wait_for

pytestmark = pytest.mark.e2e

OK, WARNING, CRITICAL, UNKNOWN = 0, 1, 2, 3
DOC = Path(__file__).resolve().parents[3] / "docs" / "bruce-counters.md"

# -- the rules of check_bruce_counters.py (the names it reads, what each one means to it) ------------------------------

ANY_IS_CRITICAL = [
    "MsgUnprocessedDestroy",
    "NoDiscardQuery",
    "MetadataHasEmptyTopicList",
    "MetadataHasEmptyBrokerList",
    "BugDispatchBatchOutOfRangeIndex",
    "BugDispatchMsgOutOfRangeIndex",
    "TopicHasNoAvailablePartitions",
    "InitialGetMetadataFail",
    "GetMetadataFail",
]
ANY_IS_WARNING = [
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
]
SOCKET_ERRORS = [
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
]
OVER_ONE_IS_UNKNOWN = ["MongooseUrlDecodeError", "MongooseStdException", "MongooseUnknownException"]


def counters_report(answer: str) -> dict:
    """A /counters/json answer as the script accepts it, else the UNKNOWN it would exit with."""
    report = json.loads(answer)
    assert {type(report[k]) for k in ("now", "since", "pid")} == {int} and isinstance(report["version"], str)
    names = [c["name"] for c in report["counters"]]
    assert len(names) == len(set(names)), "the script exits UNKNOWN on a repeated name"
    assert all(isinstance(c["location"], str) and type(c["value"]) is int for c in report["counters"])
    return report


def judge_counters(old: dict | None, new: dict, socket_warn: int = 5, socket_crit: int = 10) -> tuple[int, list]:
    """The script's verdict on ``new`` after ``old`` (``None``: its first run, judged on the totals)."""
    now = {c["name"]: c["value"] for c in new["counters"]}
    before = {c["name"]: c["value"] for c in old["counters"]} if old and old["pid"] == new["pid"] else None
    if before is not None and set(before) != set(now):
        return UNKNOWN, ["names differ between consecutive reports"]
    delta = {n: v - (before[n] if before else 0) for n, v in now.items()}
    missing = [n for n in [*ANY_IS_CRITICAL, *ANY_IS_WARNING, *SOCKET_ERRORS, *OVER_ONE_IS_UNKNOWN] if n not in now]
    if missing or "MsgCreate" not in now or "MsgDestroy" not in now or "GetMetadataSuccess" not in now:
        return UNKNOWN, [f"Counter {missing[:1]} not found"]
    if any(d < 0 for d in delta.values()):
        return UNKNOWN, ["a counter decreased"]
    code, problems = OK, []
    for names, state in ((ANY_IS_CRITICAL, CRITICAL), (ANY_IS_WARNING, WARNING)):
        for n in names:
            if delta[n] > 0:
                code, problems = max(code, state), [*problems, f"{n}={delta[n]}"]
    errors = sum(delta[n] for n in SOCKET_ERRORS)
    if errors > socket_warn:
        code, problems = (
            max(code, CRITICAL if errors > socket_crit else WARNING),
            [*problems, f"{errors} socket errors"],
        )
    for n in OVER_ONE_IS_UNKNOWN:
        if delta[n] > 1:
            code, problems = max(code, UNKNOWN), [*problems, n]
    if now["MsgDestroy"] > now["MsgCreate"]:
        code, problems = CRITICAL, [*problems, "MsgDestroy > MsgCreate"]
    return code, problems


# -- the rules of check_bruce_discards.py ------------------------------------------------------------------------------


def judge_discards(answer: str) -> int:
    """Malformed input, bad-topic messages or any discarded topic, in either report, is CRITICAL."""
    response = json.loads(answer)
    assert {type(response[k]) for k in ("now", "pid", "interval")} == {int} and isinstance(response["version"], str)
    reports = [response["unfinished_report"], *([response["finished_report"]] if "finished_report" in response else [])]
    for r in reports:
        for key in ("id", "start_time", "malformed_msg_count", "unsupported_api_key_msg_count", "bad_topic_msg_count"):
            assert type(r[key]) is int, key
        for key in ("recent_malformed", "recent_bad_topic", "recent_too_long_msg"):
            assert all(isinstance(x, str) for x in r[key]), key
        if r["malformed_msg_count"] > 0 or r["bad_topic_msg_count"] > 0 or r["discard_topic"]:
            return CRITICAL
    return OK


# -- the daemon ----------------------------------------------------------------------------------------------------


def bruce_check(port: int, *args: str) -> tuple[int, str]:
    out = subprocess.run(
        [str(Path(sys.executable).with_name("bruce-check")), *args, "-p", str(port)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return out.returncode, out.stdout.strip()


def bruce_counters_check(tmp_path: Path) -> tuple[str, ...]:
    """The counters check with the options of Bruce's check_bruce_counters.py, as a Nagios commands.cfg has them (the
    work directory absolute here: a relative one is under the Nagios user's home)."""
    work = tmp_path / "bruce_counters"
    work.mkdir()
    thresholds = ("-w", "5", "-c", "10", "-W", "1000", "-C", "10000")
    return ("counters", "-d", str(work), "-s", "nagios1", "-i", "1200", "-H", "1440", *thresholds, "-b", "127.0.0.1")


BRUCE_DISCARDS_CHECK = ("discards", "-w", "bruce_discards", "-s", "nagios1", "-a", "28800", "-b", "127.0.0.1")
"""The discards check with the options of Bruce's check_bruce_discards.py (without its database)."""


def status_port(d: DaemonThread) -> int:
    return int(d.daemon.status_url.rsplit(":", 1)[1])


def served_in_doc() -> list[str]:
    text = DOC.read_text()
    served = text[text.index("## Served") : text.index("## Not served")]
    return re.findall(r"^\| `(\w+)` \|", served, re.M)


def test_healthy_then_discarding(
    start_daemon: Callable[..., DaemonThread],
    new_topic: Callable[..., str],
    brokers: tuple[Broker, ...],
    tmp_path: Path,
) -> None:
    topic = new_topic(partitions=1)
    d = start_daemon(make_config(brokers), max_input_msg_size=1024)
    port, check = status_port(d), bruce_counters_check(tmp_path)
    first = counters_report(d.get("/counters/json")[2])
    assert [c["name"] for c in first["counters"]] == served_in_doc()  # from the start, before anything counted
    wait_for(lambda: _metadata(d) >= 1, what="the first metadata")
    assert bruce_check(port, *check)[0] == OK
    with d.client() as client:
        for i in range(20):
            client.send_any_partition(topic, b"healthy %d" % i)
    d.settle(20)
    second = counters_report(d.get("/counters/json")[2])
    assert judge_counters(first, second) == (OK, [])  # consecutive reports: same names, nothing wrong
    assert judge_counters(None, second) == (OK, [])
    code, line = bruce_check(port, *check)
    assert code == OK and "msgs_held=0;" in line, line
    assert judge_discards(d.get("/discards/json")[2]) == OK
    assert bruce_check(port, *BRUCE_DISCARDS_CHECK) == (
        OK,
        "BRUCE DISCARDS OK - no discards | malformed=0;;0;0 bad_topic=0;;0;0 discarded=0;;0;0",
    )

    # Discarding: five datagrams over --max_input_msg_size (Bruce: malformed) and one malformed one.
    with d.client(max_datagram_size=None) as client:
        for _ in range(5):
            client.send_datagram(build_any_partition(topic, b"z" * 2000, timestamp=5))
        client.send_datagram(malformed(topic))
    d.settle(26)
    discards = d.get("/discards/json")[2]
    assert json.loads(discards)["unfinished_report"]["malformed_msg_count"] == 6
    assert judge_discards(discards) == CRITICAL
    code, line = bruce_check(port, *BRUCE_DISCARDS_CHECK)
    assert code == CRITICAL and line.startswith("BRUCE DISCARDS CRITICAL - CRITICAL: 6 malformed datagrams |"), line
    third = counters_report(d.get("/counters/json")[2])
    assert judge_counters(second, third) == (OK, [])  # Bruce's counters script does not judge discards
    values = {c["name"]: c["value"] for c in third["counters"]}
    assert values["InputAgentDiscardMsgMalformed"] == 6 and values["MsgCreate"] == values["MsgDestroy"] == 20


def _metadata(d: DaemonThread) -> int:
    report = json.loads(d.get("/counters/json")[2])
    return {c["name"]: c["value"] for c in report["counters"]}["GetMetadataSuccess"]


def test_unreachable_brokers_read_as_bruce_would(
    start_daemon: Callable[..., DaemonThread], brokers: tuple[Broker, ...], tmp_path: Path
) -> None:
    """A broker that refuses connections for seconds (the daemon probes it about every half second): one failed
    refresh and one socket error, CRITICAL once for the failed initial metadata, then OK while nothing else happens."""
    with socket.socket() as dead:  # bound, never listening: connections are refused (and the port stays taken)
        dead.bind(("127.0.0.1", 0))
        d = start_daemon(make_config((Broker("127.0.0.1", dead.getsockname()[1]),)))
        wait_for(lambda: counters_json(d.daemon.status_url).get("MetadataBrokerFail", 0) >= 4, what="failed rounds")
        _judge_outage(d, tmp_path)


def _judge_outage(d: DaemonThread, tmp_path: Path) -> None:
    first = counters_report(d.get("/counters/json")[2])
    code, problems = judge_counters(None, first)
    assert code == CRITICAL and problems == ["InitialGetMetadataFail=1", "GetMetadataFail=1"], problems
    values = {c["name"]: c["value"] for c in first["counters"]}
    assert sum(values[n] for n in SOCKET_ERRORS) == 1  # one broker, one error, however many retries
    time.sleep(1.5)  # more retries
    assert counters_json(d.daemon.status_url)["MetadataBrokerFail"] >= 6
    assert "bruce_metadata_broker_fail_total" in metric_names(d)  # what the BruceBrokerUnreachable alert reads
    second = counters_report(d.get("/counters/json")[2])
    assert judge_counters(first, second) == (OK, [])
    code, line = bruce_check(status_port(d), *bruce_counters_check(tmp_path))
    assert code == CRITICAL and "CRITICAL: InitialGetMetadataFail=1; CRITICAL: GetMetadataFail=1" in line, line


def metric_names(d: DaemonThread) -> set[str]:
    return {s.name for f in text_string_to_metric_families(d.get("/metrics")[2]) for s in f.samples}


def test_alert_rules_use_the_metrics_the_daemon_serves(
    start_daemon: Callable[..., DaemonThread], brokers: tuple[Broker, ...], tmp_path: Path
) -> None:
    """deploy/prometheus/bruce-rules.yml reads only names /metrics really has (a daemon with a spool, after a
    discard; the metadata failures' counter is seen in the outage test below)."""
    d = start_daemon(make_config(brokers), spool_dir=str(tmp_path / "spool"))
    with d.client(max_datagram_size=None) as client:
        client.send_datagram(malformed("t"))
    d.settle(1)
    assert rule_metrics() - metric_names(d) == {"bruce_metadata_broker_fail_total"}
