"""``bruce-check`` against canned answers in Bruce C++'s shape (``[file, line]`` locations, names Bruce's scripts read,
and more names than ours): Nagios exit codes and status lines, the state file between runs, and every UNKNOWN case."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bruce.proxy.status import nagios
from bruce.proxy.status.nagios import CRITICAL, OK, READ_COUNTERS, UNKNOWN, WARNING


class Canned:
    """A tiny HTTP server answering each path with the JSON (or text) set in ``pages``."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        canned = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = canned.pages.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.end_headers()
                self.wfile.write((body or "").encode())

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def bruce() -> Iterator[Canned]:
    canned = Canned()
    yield canned
    canned.server.shutdown()
    canned.server.server_close()


def bruce_cpp_counters(now: int, pid: int = 14246, **values: int) -> str:
    """A /counters/json answer as Bruce C++ writes it: every name the scripts read plus some only Bruce has."""
    names = [*READ_COUNTERS, "SerializeMsg", "RouteSingleMsg", "ConnectorStartRun"]
    counters = [
        {"location": f"[bruce/x.cc, {i + 20}]", "name": n, "value": values.get(n, 0)} for i, n in enumerate(names)
    ]
    return json.dumps({"now": now, "since": 1, "pid": pid, "version": "1.0.6.70.ga324763", "counters": counters})


def run(port: int, *args: str) -> tuple[int, str]:
    out = subprocess.run(
        [sys.executable, "-m", "bruce.proxy.status.nagios", *args, "-p", str(port)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.stderr == "" or "usage" in out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 1, out.stdout  # one status line
    return out.returncode, lines[0]


def counters(bruce: Canned, state: Path, *extra: str) -> tuple[int, str]:
    return run(bruce.port, "counters", "-s", str(state), "-w", "2", "-c", "5", "-W", "100", "-C", "1000", *extra)


def test_counters_ok_then_each_rule(bruce: Canned, tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    bruce.pages["/counters/json"] = bruce_cpp_counters(1000, MsgCreate=50, MsgDestroy=40, GetMetadataSuccess=1)
    code, line = counters(bruce, state)
    assert code == OK and line.startswith("BRUCE COUNTERS OK - ") and "| socket_errors=0;2;5;0 msgs_held=10;" in line
    assert json.loads(state.read_text())[0]["now"] == 1000
    # socket errors: the increase since the last report, summed over Bruce's names
    base = {"MsgCreate": 50, "MsgDestroy": 40, "GetMetadataSuccess": 1}
    bruce.pages["/counters/json"] = bruce_cpp_counters(
        1010, **base, ConnectorSocketError=2, ConnectFailOnTryGetMetadata=1
    )
    code, line = counters(bruce, state)
    assert code == WARNING and "WARNING: 3 socket errors" in line
    bruce.pages["/counters/json"] = bruce_cpp_counters(
        1020, **base, ConnectorSocketError=2, ConnectFailOnTryGetMetadata=1
    )
    assert counters(bruce, state)[0] == OK  # no increase: no problem
    bruce.pages["/counters/json"] = bruce_cpp_counters(
        1030, **base, ConnectorSocketError=8, ConnectFailOnTryGetMetadata=1
    )
    code, line = counters(bruce, state)
    assert code == CRITICAL and "CRITICAL: 6 socket errors" in line
    # a single GetMetadataFail is critical; a warning counter is a warning
    bruce.pages["/counters/json"] = bruce_cpp_counters(
        1040, **base, ConnectorSocketError=8, ConnectFailOnTryGetMetadata=1, GetMetadataFail=1, CorrelationIdMismatch=1
    )
    code, line = counters(bruce, state)
    assert code == CRITICAL and "CRITICAL: GetMetadataFail=1" in line and "WARNING: CorrelationIdMismatch=1" in line


def test_messages_held_thresholds_and_restart(bruce: Canned, tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    bruce.pages["/counters/json"] = bruce_cpp_counters(1000, MsgCreate=150, MsgDestroy=10)
    assert counters(bruce, state)[0] == WARNING
    bruce.pages["/counters/json"] = bruce_cpp_counters(1001, MsgCreate=5000, MsgDestroy=10)
    code, line = counters(bruce, state)
    assert code == CRITICAL and "MsgCreate - MsgDestroy is 4990" in line
    bruce.pages["/counters/json"] = bruce_cpp_counters(1002, MsgCreate=5000, MsgDestroy=5001)
    code, line = counters(bruce, state)
    assert code == CRITICAL and "MsgDestroy 5001 is greater than MsgCreate 5000" in line
    # a restarted daemon (another pid) is judged from zero, so lower values are no decrease
    bruce.pages["/counters/json"] = bruce_cpp_counters(1003, pid=99, MsgCreate=1, MsgDestroy=1)
    assert counters(bruce, state)[0] == OK


def test_metadata_must_refresh_within_the_interval(bruce: Canned, tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    for now in (1000, 1100):  # no report 300 s old yet: not judged
        bruce.pages["/counters/json"] = bruce_cpp_counters(now, GetMetadataSuccess=3)
        assert counters(bruce, state, "-i", "300")[0] == OK
    bruce.pages["/counters/json"] = bruce_cpp_counters(1300, GetMetadataSuccess=3)
    code, line = counters(bruce, state, "-i", "300")
    assert code == CRITICAL and "GetMetadataSuccess not increasing in 300 s: 3 -> 3" in line
    bruce.pages["/counters/json"] = bruce_cpp_counters(1400, GetMetadataSuccess=4)
    assert counters(bruce, state, "-i", "300")[0] == OK
    assert len(json.loads(state.read_text())) <= 3  # only what a later run can need is kept


@pytest.mark.parametrize(
    ("page", "why"),
    [
        ("not json", "is not JSON"),
        (json.dumps([1]), "not a JSON object"),
        (
            json.dumps({"now": 1, "since": 1, "pid": 1, "version": "v", "counters": [{"name": "X", "value": 1}]}),
            "location",
        ),
        (json.dumps({"now": 1, "since": 1, "pid": 1, "version": "v", "counters": []}), "Counter MsgUnprocessedDestroy"),
        (json.dumps({"now": "1", "since": 1, "pid": 1, "version": "v", "counters": []}), "'now'"),
    ],
)
def test_malformed_answers_are_unknown(bruce: Canned, tmp_path: Path, page: str, why: str) -> None:
    bruce.pages["/counters/json"] = page
    code, line = counters(bruce, tmp_path / "s.json")
    assert code == UNKNOWN and line.startswith("BRUCE COUNTERS UNKNOWN - ")
    assert why.lower() in line.lower()


def test_repeated_changed_and_decreasing_names_are_unknown(bruce: Canned, tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    answer = json.loads(bruce_cpp_counters(1000, MsgCreate=5))
    answer["counters"].append(answer["counters"][0])
    bruce.pages["/counters/json"] = json.dumps(answer)
    code, line = counters(bruce, state)
    assert code == UNKNOWN and "duplicate counter name [MsgUnprocessedDestroy]" in line
    bruce.pages["/counters/json"] = bruce_cpp_counters(1000, MsgCreate=5)
    assert counters(bruce, state)[0] == OK
    answer = json.loads(bruce_cpp_counters(1010, MsgCreate=5))
    answer["counters"].pop()  # one name fewer than in the previous report
    bruce.pages["/counters/json"] = json.dumps(answer)
    assert counters(bruce, state) == (
        UNKNOWN,
        "BRUCE COUNTERS UNKNOWN - counter names changed between reports: ConnectorStartRun",
    )
    bruce.pages["/counters/json"] = bruce_cpp_counters(1020, MsgCreate=4)
    code, line = counters(bruce, state)
    assert code == UNKNOWN and "MsgCreate decreased by 1" in line


def test_a_daemon_that_does_not_answer_is_critical(tmp_path: Path) -> None:
    canned = Canned()
    port = canned.port
    canned.server.shutdown()
    canned.server.server_close()
    code, line = run(port, "counters", "-s", str(tmp_path / "s"), "-w", "1", "-c", "2", "-W", "1", "-C", "2")
    assert code == CRITICAL and line.startswith("BRUCE COUNTERS CRITICAL - cannot read http://127.0.0.1:")
    assert run(port, "discards")[0] == CRITICAL


def test_usage_errors_are_unknown(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "bruce.proxy.status.nagios", "counters"], capture_output=True, text=True
    )
    assert out.returncode == UNKNOWN and "required" in out.stdout


def bruce_cpp_discards(**report: object) -> str:
    """A /discards/json answer as Bruce C++ writes it (the second example of its status_monitoring.md)."""
    period = {
        "id": 0,
        "start_time": 1408661147,
        "malformed_msg_count": 0,
        "unsupported_api_key_msg_count": 0,
        "unsupported_version_msg_count": 0,
        "bad_topic_msg_count": 0,
        "recent_malformed": [],
        "unsupported_msg_version": [],
        "recent_bad_topic": [],
        "recent_too_long_msg": [],
        "rate_limit_discard": [],
        "discard_topic": [],
        "possible_duplicate_topic": [],
    }
    unfinished = period | report
    answer = {"now": 1408661249, "pid": 17706, "version": "1.0.6.70.ga324763", "interval": 600}
    return json.dumps(answer | {"unfinished_report": unfinished, "finished_report": period | {"id": 1}})


def test_discards(bruce: Canned, tmp_path: Path) -> None:
    bruce.pages["/discards/json"] = bruce_cpp_discards()
    assert run(bruce.port, "discards") == (
        OK,
        "BRUCE DISCARDS OK - no discards | malformed=0;;0;0 bad_topic=0;;0;0 discarded=0;;0;0",
    )
    interval = {"min_timestamp": 1408661193503, "max_timestamp": 1408661202191}
    bruce.pages["/discards/json"] = bruce_cpp_discards(
        bad_topic_msg_count=15,
        recent_bad_topic=["bad_topic_2", "bad_topic_1"],
        discard_topic=[
            {"topic": "topic1", **interval, "count": 34176},
            {"topic": "topic2", **interval, "count": 32149},
        ],
    )
    code, line = run(bruce.port, "discards")
    assert code == CRITICAL
    assert line.startswith("BRUCE DISCARDS CRITICAL - CRITICAL: 15 messages for unknown topics; ")
    assert "discards in 2 topics: topic1 (34176), topic2 (32149)" in line and "discarded=66325;;0;0" in line
    assert run(bruce.port, "discards", "-g", "-i", "topic1", "-i", "topic2")[0] == OK
    assert run(bruce.port, "discards", "-g", "-i", "topic1")[0] == CRITICAL
    bruce.pages["/discards/json"] = bruce_cpp_discards(malformed_msg_count=5)
    code, line = run(bruce.port, "discards", "-g")
    assert code == CRITICAL
    assert (
        line
        == "BRUCE DISCARDS CRITICAL - CRITICAL: 5 malformed datagrams | "
        + "malformed=5;;0;0 bad_topic=0;;0;0 discarded=0;;0;0"
    )
    bruce.pages["/discards/json"] = json.dumps({"now": 1, "pid": 1, "interval": 600})
    assert run(bruce.port, "discards")[0] == UNKNOWN


def test_counters_names_are_bruces_64() -> None:
    assert len(READ_COUNTERS) == len(set(READ_COUNTERS)) == 64
    assert nagios.main(["counters", "-s", "/nonexistent/x", "-w", "1", "-c", "1", "-W", "1", "-C", "1", "-p", "1"]) == 2
