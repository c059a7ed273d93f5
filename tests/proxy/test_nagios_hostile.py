"""``bruce-check`` against a hostile or broken server on 127.0.0.1, bad state files and bad arguments: every path ends
in exactly one status line and UNKNOWN when it cannot judge (never a traceback, never CRITICAL for "could not ask"),
``-t`` bounds the whole check, and nothing the server sends can add a line or performance data."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from nagios_answers import bruce_cpp_counters, bruce_cpp_discards

from bruce.proxy.status import nagios, nagios_rules
from bruce.proxy.status.nagios_rules import CRITICAL, UNKNOWN, WARNING

Respond = Callable[[socket.socket], None]


class Hostile:
    """A TCP server on 127.0.0.1 answering every connection with ``respond`` (after reading the request)."""

    def __init__(self, respond: Respond) -> None:
        self.respond = respond
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.closed = threading.Event()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                conn.recv(65536)
                self.respond(conn)
            except OSError:
                pass  # the check hung up (as it should at its deadline)

    def close(self) -> None:
        self.closed.set()
        self.sock.close()


@pytest.fixture
def serve() -> Iterator[Callable[[Respond], Hostile]]:
    servers: list[Hostile] = []

    def start(respond: Respond) -> Hostile:
        servers.append(Hostile(respond))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def sends(data: bytes) -> Respond:
    return lambda conn: conn.sendall(data)


def http(body: bytes | str, status: str = "200 OK", headers: str = "") -> Respond:
    body = body.encode() if isinstance(body, str) else body
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{headers}\r\n"
    return sends(head.encode() + body)


def dribble(conn: socket.socket) -> None:
    """A valid answer, one byte a second (a check that waits for all of it takes minutes)."""
    for byte in b"HTTP/1.0 200 OK\r\n\r\n" + bruce_cpp_counters(1).encode():
        conn.sendall(bytes([byte]))
        time.sleep(1)


def silent(conn: socket.socket) -> None:
    time.sleep(30)


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """Run the check in this process: its exit code and its one line (anything else fails the test)."""
    code = nagios.main(list(argv))
    out = capsys.readouterr()
    assert out.err == ""
    lines = out.out.split("\n")
    assert len(lines) == 2 and lines[1] == "", out.out  # exactly one line
    assert lines[0].count("|") <= 1
    return code, lines[0]


def counters_args(port: int, state: Path, *extra: str) -> list[str]:
    return [
        "counters",
        "-p",
        str(port),
        "--state_file",
        str(state),
        "-w",
        "1",
        "-c",
        "2",
        "-W",
        "9",
        "-C",
        "99",
        *extra,
    ]


ANSWERS: list[tuple[str, Respond, str]] = [
    ("garbage", sends(bytes(range(256)) * 4), "did not answer in HTTP"),
    ("not-http", sends(b"SSH-2.0-OpenSSH_9.6\r\n"), "did not answer in HTTP"),
    ("empty", sends(b""), "closed the connection without answering"),
    ("http-404", http("no such page", "404 Not Found"), "answered HTTP 404 Not Found"),
    ("http-500", http("oops", "500 Internal Server Error"), "answered HTTP 500 Internal Server Error"),
    ("no-body", http(""), "is not JSON"),
    ("not-json", http("<html>hello</html>"), "is not JSON"),
    ("deep-json", http("[" * 200_000 + "]" * 200_000), "nested too deep"),
    ("json-list", http("[1, 2]"), "not a JSON object"),
    ("huge-number", http('{"now": ' + "9" * 10_000 + "}"), "is not JSON"),
    ("no-now", http(json.dumps({k: v for k, v in json.loads(bruce_cpp_counters(1)).items() if k != "now"})), "'now'"),
    ("cut-short", sends(b"HTTP/1.0 200 OK\r\nContent-Length: 500\r\n\r\n{}"), "sent 2 of the 500 bytes"),
    ("no-headers-end", sends(b"HTTP/1.0 200 OK\r\nServer: x\r\n"), "no complete HTTP headers"),
    ("chunked", http("{}", headers="Transfer-Encoding: chunked\r\n"), "Transfer-Encoding"),
    ("escape-in-reason", http("", "404 Gone\x1b[2J | x=1"), "answered HTTP 404 Gone?[2J ? x=1"),
]


@pytest.mark.parametrize(("respond", "why"), [a[1:] for a in ANSWERS], ids=[a[0] for a in ANSWERS])
def test_an_answer_it_cannot_judge_is_unknown(
    serve: Callable[[Respond], Hostile], capsys: pytest.CaptureFixture[str], tmp_path: Path, respond: Respond, why: str
) -> None:
    server = serve(respond)
    code, line = check(capsys, *counters_args(server.port, tmp_path / "state.json"))
    assert code == UNKNOWN and line.startswith("BRUCE COUNTERS UNKNOWN - ") and why in line, line
    code, line = check(capsys, "discards", "-p", str(server.port))
    assert code == UNKNOWN and line.startswith("BRUCE DISCARDS UNKNOWN - ") and why.replace("'now'", "") in line
    assert not (tmp_path / "state.json").exists()


def test_no_daemon_is_unknown(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with socket.socket() as taken:  # bound, never listening: connections are refused
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        code, line = check(capsys, *counters_args(port, tmp_path / "state.json"))
    assert code == UNKNOWN and "cannot connect to 127.0.0.1" in line and "Connection refused" in line


@pytest.mark.parametrize("respond", [dribble, silent], ids=["a-byte-a-second", "silent"])
def test_the_timeout_is_a_deadline_for_the_whole_check(
    serve: Callable[[Respond], Hostile], tmp_path: Path, respond: Respond
) -> None:
    server = serve(respond)
    start = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "bruce.proxy.status.nagios", *counters_args(server.port, tmp_path / "s"), "-t", "1.5"],
        capture_output=True,
        text=True,
        timeout=25,
    )
    took = time.monotonic() - start
    assert (out.returncode, out.stderr) == (UNKNOWN, "")
    assert out.stdout == (
        f"BRUCE COUNTERS UNKNOWN - cannot read http://127.0.0.1:{server.port}/counters/json: "
        "no complete answer within 1.5 s\n"
    )
    assert took < 20, took  # ended by the deadline, not by the server (which would take minutes)


def test_server_text_cannot_add_a_line_or_performance_data(
    serve: Callable[[Respond], Hostile], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    topic = {"topic": "evil\nBRUCE DISCARDS OK - fine | x=1", "min_timestamp": 1, "max_timestamp": 2, "count": 3}
    server = serve(http(bruce_cpp_discards(discard_topic=[topic])))
    code, line = check(capsys, "discards", "-p", str(server.port))
    assert code == CRITICAL
    assert line == (
        "BRUCE DISCARDS CRITICAL - CRITICAL: discards in 1 topics: evil?BRUCE DISCARDS OK - fine ? x=1 (3) | "
        "malformed=0;;0;0 bad_topic=0;;0;0 discarded=3;;0;0"
    )
    answer = json.loads(bruce_cpp_counters(1))
    evil = answer["counters"][0] | {"name": "X\r\n|" + "y" * 5000}
    answer["counters"] += [evil, evil]
    server = serve(http(json.dumps(answer)))
    code, line = check(capsys, *counters_args(server.port, tmp_path / "state.json"))
    assert code == UNKNOWN
    assert line.startswith("BRUCE COUNTERS UNKNOWN - duplicate counter name [X???yyy") and line.endswith("y…")
    assert len(line) == len("BRUCE COUNTERS UNKNOWN - ") + nagios_rules.MAX_TEXT


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["-b", "[::1"], "'[::1' is not a host name or address"),
        (["-b", "bad host"], "'bad host' is not a host name or address"),
        (["-b", "no-such-host.invalid"], "cannot resolve no-such-host.invalid"),
        (["-t", "-1"], "-1 is not a number of seconds over 0 and at most 3600"),
        (["-t", "nan"], "nan is not a number of seconds"),
        (["-t", "inf"], "inf is not a number of seconds"),
        (["-t", "0"], "0 is not a number of seconds"),
        (["-t", "soon"], "invalid seconds value: 'soon'"),
        (["-p", "0"], "0 is not a TCP port"),
        (["-p", "x"], "invalid port value: 'x'"),
        (["-w", "-5"], "-5 is negative"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_arguments_are_unknown(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], why: str
) -> None:
    code, line = check(capsys, *counters_args(1, tmp_path / "state.json"), *args)
    assert code == UNKNOWN and line.startswith("BRUCE COUNTERS UNKNOWN - ") and why in line, line


def test_bracketed_ipv6_is_an_address(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, line = check(capsys, *counters_args(1, tmp_path / "state.json"), "-b", "[::1]")
    assert code == UNKNOWN and line.startswith("BRUCE COUNTERS UNKNOWN - cannot read http://[::1]:1/counters/json")


NAMES = [c["name"] for c in json.loads(bruce_cpp_counters(1))["counters"]]
STATES = [
    ("not-json", "{", "not JSON"),
    ("not-a-list", "{}", "not a list of reports"),
    ("no-now", json.dumps([{"pid": 1, "counters": {}}]), "report 1 lacks its integer 'now' and 'pid'"),
    ("text-now", json.dumps([{"now": "1", "pid": 1, "counters": {}}]), "report 1 lacks its integer 'now'"),
    ("no-counters", json.dumps([{"now": 1, "pid": 14246}]), "report 1 lacks its 'counters'"),
    ("bad-counter", json.dumps([{"now": 1, "pid": 14246, "counters": {"a": "1"}}]), "report 1 lacks its 'counters'"),
    ("deep", "[" * 100_000 + "]" * 100_000, "not JSON"),
    (
        "old-report-without-metadata-count",
        json.dumps(
            [
                {"now": -300, "pid": 14246, "counters": {}},
                {"now": 900, "pid": 14246, "counters": dict.fromkeys(NAMES, 0)},
            ]
        ),
        "the report of -300 kept in the state has no GetMetadataSuccess",
    ),
]


@pytest.mark.parametrize(("text", "why"), [s[1:] for s in STATES], ids=[s[0] for s in STATES])
def test_a_bad_state_file_is_unknown(
    serve: Callable[[Respond], Hostile], capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, why: str
) -> None:
    server = serve(http(bruce_cpp_counters(1000)))
    state = tmp_path / "state.json"
    state.write_text(text)
    code, line = check(capsys, *counters_args(server.port, state))
    assert code == UNKNOWN and why in line, line
    assert state.read_text() == text  # left as it was, for a person to look at


def test_any_unexpected_failure_is_one_unknown_line(
    serve: Callable[[Respond], Hostile], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> object:
        raise ZeroDivisionError("a bug\nwith two lines")

    monkeypatch.setattr(nagios, "judge_discards", broken)
    server = serve(http(bruce_cpp_discards()))
    assert check(capsys, "discards", "-p", str(server.port)) == (
        UNKNOWN,
        "BRUCE DISCARDS UNKNOWN - bruce-check failed: ZeroDivisionError: a bug?with two lines",
    )


def test_a_judgement_is_kept_when_it_can_judge(serve: Callable[[Respond], Hostile], capsys, tmp_path: Path) -> None:
    """The hostile server's well-formed answer (HTTP/1.1, its own headers) is read like the daemon's."""
    server = serve(http(bruce_cpp_counters(1000, MsgCreate=20, MsgDestroy=5)))
    code, line = check(capsys, *counters_args(server.port, tmp_path / "state.json"))
    assert code == WARNING and "WARNING: MsgCreate - MsgDestroy is 15" in line
