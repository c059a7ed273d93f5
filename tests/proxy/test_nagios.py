"""``bruce-check`` against canned answers in Bruce C++'s shape (``[file, line]`` locations, names Bruce's scripts read,
and more names than ours): Nagios exit codes and status lines, the state file between runs, and every UNKNOWN case."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import threading
import types
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from nagios_answers import bruce_cpp_counters, bruce_cpp_discards

from bruce.proxy.status import nagios
from bruce.proxy.status.nagios_rules import CRITICAL, OK, READ_COUNTERS, UNKNOWN, WARNING


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


def run(port: int, *args: str) -> tuple[int, str]:
    """One check, in this process (the program itself runs in test_usage_errors_are_unknown): code and its line."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = nagios.main([*args, "-p", str(port)])
    lines = out.getvalue().splitlines()
    assert len(lines) == 1, out.getvalue()  # one status line
    return code, lines[0]


def counters(bruce: Canned, state: Path, *extra: str) -> tuple[int, str]:
    return run(
        bruce.port, "counters", "--state_file", str(state), "-w", "2", "-c", "5", "-W", "100", "-C", "1000", *extra
    )


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


def test_a_daemon_that_does_not_answer_is_unknown(tmp_path: Path) -> None:
    """Nagios reads CRITICAL as "the service is in trouble": a check that cannot ask says UNKNOWN."""
    canned = Canned()
    port = canned.port
    canned.server.shutdown()
    canned.server.server_close()
    code, line = run(port, "counters", "--state_file", str(tmp_path / "s"), "-w", "1", "-c", "2", "-W", "1", "-C", "2")
    assert code == UNKNOWN and line.startswith(
        f"BRUCE COUNTERS UNKNOWN - cannot read http://127.0.0.1:{port}/counters/"
    )
    assert "Connection refused" in line
    assert run(port, "discards")[0] == UNKNOWN
    assert not (tmp_path / "s").exists()


def test_usage_errors_are_unknown(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "bruce.proxy.status.nagios", "counters"], capture_output=True, text=True
    )
    assert out.returncode == UNKNOWN and out.stderr == ""
    assert out.stdout.startswith("BRUCE COUNTERS UNKNOWN - usage: the following arguments are required: -w")


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
    assert run(bruce.port, "discards", "-g", "--ignore_topic", "topic1", "--ignore_topic", "topic2")[0] == OK
    assert run(bruce.port, "discards", "-g", "--ignore_topic", "topic1")[0] == CRITICAL
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


# -- Bruce's command lines ------------------------------------------------------------------------------------------

BRUCE_THRESHOLDS = ("-i", "1200", "-H", "1440", "-w", "5", "-c", "10", "-W", "100000", "-C", "500000")


def test_bruces_counters_command_line(bruce: Canned, tmp_path: Path) -> None:
    """``check_bruce_counters.py -d DIR -s SERVER ...`` as a commands.cfg has it: the state kept in DIR/SERVER."""
    work = tmp_path / "bruce_counters"
    work.mkdir()
    line = ("counters", "-d", str(work), "-s", "nagios1", *BRUCE_THRESHOLDS, "-b", "127.0.0.1")
    bruce.pages["/counters/json"] = bruce_cpp_counters(1000, MsgCreate=5, MsgDestroy=5, GetMetadataSuccess=1)
    assert run(bruce.port, *line)[0] == OK
    state = work / "nagios1" / "bruce-check-counters.json"
    assert [r["now"] for r in json.loads(state.read_text())] == [1000]
    bruce.pages["/counters/json"] = bruce_cpp_counters(
        1060, MsgCreate=5, MsgDestroy=5, GetMetadataSuccess=1, GetMetadataFail=1
    )
    code, text = run(bruce.port, *line)
    assert code == CRITICAL and "CRITICAL: GetMetadataFail=1" in text  # judged against the kept report
    assert [p.name for p in tmp_path.rglob("*")] == ["bruce_counters", "nagios1", "bruce-check-counters.json"]


def test_a_relative_work_directory_is_under_the_nagios_users_home(
    bruce: Canned, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Bruce's script: ``-d bruce -s nagios1 -u nrpe`` keeps the state in ~nrpe/bruce/nagios1, made if missing."""
    homes = {"nrpe": tmp_path / "home" / "nrpe"}
    homes["nrpe"].mkdir(parents=True)
    monkeypatch.setattr(nagios.pwd, "getpwnam", lambda user: types.SimpleNamespace(pw_dir=str(homes[user])))
    bruce.pages["/counters/json"] = bruce_cpp_counters(1000)
    assert run(bruce.port, "counters", "-d", "bruce", "-s", "nagios1", *BRUCE_THRESHOLDS)[0] == OK
    assert (homes["nrpe"] / "bruce" / "nagios1" / "bruce-check-counters.json").is_file()
    code, text = run(bruce.port, "counters", "-d", "bruce", "-s", "nagios1", "-u", "nagios", *BRUCE_THRESHOLDS)
    assert (code, text) == (UNKNOWN, "BRUCE COUNTERS UNKNOWN - no user nagios (-u) to keep the work directory bruce in")
    homes["gone"] = tmp_path / "home" / "gone"
    code, text = run(bruce.port, "counters", "-d", "bruce", "-s", "nagios1", "-u", "gone", *BRUCE_THRESHOLDS)
    assert code == UNKNOWN and text.endswith(f"the home directory {homes['gone']} of gone (-u) does not exist")
    assert not homes["gone"].exists()


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (("-d", "{tmp}/missing", "-s", "nagios1"), "the work directory {tmp}/missing (-d) does not exist"),
        (("--state_file", "{tmp}/missing/state.json"), "the directory of the state file {tmp}/missing/state.json"),
        (("-s", "{tmp}/missing/counters.json"), "is not a name (the Nagios server's, as in Bruce's scripts)"),
        (("-s", "nagios1"), "-s without -d: give -d DIR -s SERVER"),
        (
            (
                "-d",
                "{tmp}",
            ),
            "-d without -s: give -d DIR -s SERVER",
        ),
        ((), "no state: give -d DIR -s SERVER (Bruce's work directory and Nagios server"),
        (("-d", "{tmp}", "-s", "n", "--state_file", "{tmp}/s"), "give -d DIR -s SERVER or --state_file FILE, not both"),
        (("-d", "{tmp}", "-s", "..", "-m", "1"), "'..' is not a name"),
        (("-d", "{tmp}", "-s", "n", "-m", "1000"), "unrecognized arguments: -m 1000"),
    ],
)
def test_no_state_location_is_guessed_or_made(bruce: Canned, tmp_path: Path, args: tuple[str, ...], why: str) -> None:
    """Where the state goes is said, never guessed: nothing is created but Bruce's DIR/SERVER."""
    bruce.pages["/counters/json"] = bruce_cpp_counters(1000)
    argv = [a.format(tmp=tmp_path) for a in args]
    code, text = run(bruce.port, "counters", *argv, *BRUCE_THRESHOLDS)
    assert code == UNKNOWN and why.format(tmp=tmp_path) in text, text
    assert list(tmp_path.iterdir()) == []


def test_bruces_discards_command_line(bruce: Canned, tmp_path: Path) -> None:
    """``check_bruce_discards.py -w DIR -s SERVER -a AGE -g -i TOPICS_FILE ...``: the topics file is read, the rest
    accepted (the discards check keeps no files)."""
    topics = tmp_path / "ignore_topics"
    topics.write_text("topic1\ntopic2\n")
    interval = {"min_timestamp": 1, "max_timestamp": 2}
    bruce.pages["/discards/json"] = bruce_cpp_discards(
        bad_topic_msg_count=15,
        discard_topic=[{"topic": "topic1", **interval, "count": 3}, {"topic": "topic2", **interval, "count": 4}],
    )
    line = ("discards", "-w", "bruce_discards", "-s", "nagios1", "-u", "nrpe", "-a", "28800", "-b", "127.0.0.1")
    assert run(bruce.port, *line, "-g", "-i", str(topics)) == (
        OK,
        "BRUCE DISCARDS OK - no discards | malformed=0;;0;0 bad_topic=15;;0;0 discarded=7;;0;0",
    )
    topics.write_text("topic1\n")
    code, text = run(bruce.port, *line, "-g", "-i", str(topics))
    assert code == CRITICAL and "discards in 1 topics: topic2 (4)" in text
    code, text = run(bruce.port, *line, "-i", str(tmp_path / "none"))
    assert (code, text) == (
        UNKNOWN,
        f"BRUCE DISCARDS UNKNOWN - the ignored topics file {tmp_path / 'none'} (-i): No such file or directory",
    )
    code, text = run(bruce.port, *line, "-D", "db1", "-d", "bruce", "-c", "/etc/creds")
    assert code == UNKNOWN and "unrecognized arguments: -D db1 -d bruce -c /etc/creds" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ignore_topics"]
