"""The status server against hostile neighbours: a foreign ``Host`` (DNS rebinding) refused on every page,
cross-origin requests refused where they would change state, malformed requests logged as one rate-limited line, and
a connection cap that evicts the quietest connection."""

from __future__ import annotations

import http.client
import logging
import socket
import time

import pytest

from bruce.producer.counters import Counters
from bruce.proxy.status import StatusServer
from bruce.proxy.status.guard import RequestErrorLog, connection_cap

from .conftest import NOW, FakeSource, LoopThread, RunningStatus

NOTHING_ON = "No message debug topics are currently enabled\n"


def ask(status: RunningStatus, path: str, *, method: str = "GET", **headers: str) -> tuple[int, str]:
    """One request with exactly these headers (``Host`` defaults to the server's address)."""
    port = status.server.port
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        headers.setdefault("Host", f"127.0.0.1:{port}")
        for name, value in headers.items():
            conn.putheader(name.replace("_", "-"), value)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "LOCALHOST", "10.1.2.3:80"])
def test_addresses_and_local_names_may_ask(status: RunningStatus, host: str) -> None:
    assert ask(status, "/counters/json", Host=host.format(port=status.server.port))[0] == 200


def test_this_hosts_name_may_ask(status: RunningStatus) -> None:
    assert ask(status, "/server_info/plain", Host=f"{socket.gethostname()}:{status.server.port}")[0] == 200


@pytest.mark.parametrize("path", ["/counters/json", "/discards/plain", "/", "/msg_debug/add_all_topics"])
def test_a_rebound_name_is_refused_everywhere(status: RunningStatus, source: FakeSource, path: str) -> None:
    """DNS rebinding: a page on evil.example re-points its name at 127.0.0.1; the browser still sends its Host."""
    code, body = ask(status, path, Host=f"evil.example:{status.server.port}")
    assert code == 403
    assert "Host 'evil.example:" in body and "--status_allowed_hosts" in body and "docs/status.md" in body
    assert source.debug.handle_command("get_topics") == NOTHING_ON  # nothing switched on
    counters = dict(((n, labels), v) for n, labels, v in status.server.counters.items())
    assert counters[("StatusRefused", (("why", "host"),))] == 1


def test_allowed_hosts_extend_the_names(loop_thread: LoopThread, source: FakeSource) -> None:
    server = StatusServer(source, clock=lambda: NOW, allowed_hosts=("bruce.internal",))
    loop_thread.run(server.start("127.0.0.1", 0))
    try:
        running = RunningStatus(server, source)
        assert ask(running, "/counters/json", Host="bruce.internal:9090")[0] == 200
        assert ask(running, "/counters/json", Host="other.internal:9090")[0] == 403
    finally:
        loop_thread.run(server.stop())


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "http://127.0.0.1:8000"},  # another local service: another origin
        {"Origin": "null"},
        {"Sec_Fetch_Site": "cross-site"},  # an <img src> or a link from another site: no Origin, but this
        {"Sec_Fetch_Site": "same-site"},
    ],
    ids=["foreign", "other-port", "null", "cross-site", "same-site"],
)
def test_cross_origin_state_changes_are_refused(status: RunningStatus, source: FakeSource, headers: dict) -> None:
    code, body = ask(status, "/msg_debug/add_all_topics", **headers)
    assert code == 403 and "changes the daemon's state" in body
    assert source.debug.handle_command("get_topics") == NOTHING_ON
    assert ask(status, "/metadata_update", method="POST", **headers)[0] == 403
    assert source.metadata_update_requests == 0
    assert ask(status, "/counters/json", **headers)[0] == 200  # reading is not a state change
    assert ask(status, "/msg_debug/get_topics", **headers)[0] == 200


def test_same_origin_and_tools_may_change_state(status: RunningStatus, source: FakeSource) -> None:
    origin = f"http://127.0.0.1:{status.server.port}"
    assert ask(status, "/msg_debug/add_topic/a", Origin=origin, Sec_Fetch_Site="same-origin")[0] == 200
    assert ask(status, "/msg_debug/add_topic/b", Sec_Fetch_Site="none")[0] == 200  # typed in the address bar
    assert ask(status, "/msg_debug/add_topic/c")[0] == 200  # curl, Bruce's scripts
    assert ask(status, "/metadata_update", method="POST", Origin=origin)[0] == 200
    assert source.debug.handle_command("get_topics") == "topic: [a]\ntopic: [b]\ntopic: [c]\n"
    assert source.metadata_update_requests == 1


def test_malformed_requests_are_one_rate_limited_line(status: RunningStatus, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    count = 2000
    for _ in range(count):
        with socket.create_connection(("127.0.0.1", status.server.port), timeout=10) as s:
            s.sendall(b"GET /" + b"a" * 10_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")  # over aiohttp's 8 KiB line
            assert s.recv(100).split(b"\r\n")[0].endswith(b" 400 Bad Request")
    counters = {n: v for n, labels, v in status.server.counters.items()}
    assert counters["StatusBadRequest"] == count
    records = [r for r in caplog.records if r.name.startswith(("bruce.proxy.status", "aiohttp"))]
    assert len(records) == 1, [r.getMessage() for r in records]
    assert records[0].levelno == logging.WARNING and records[0].exc_info is None
    assert "LineTooLong" in records[0].getMessage() and "\n" not in records[0].getMessage()


def test_the_connection_cap_evicts_the_quietest(loop_thread: LoopThread, source: FakeSource) -> None:
    server = StatusServer(source, clock=lambda: NOW, max_connections=4)
    loop_thread.run(server.start("127.0.0.1", 0))
    idle = []
    try:
        for _ in range(20):
            idle.append(socket.create_connection(("127.0.0.1", server.port), timeout=10))
        running = RunningStatus(server, source)
        deadline = time.monotonic() + 10
        while server.counters.get("StatusConnectionsEvicted") < 16 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ask(running, "/server_info/json")[0] == 200  # served: it evicted a quiet one
        assert len(server.gate.open) <= 4
        assert server.counters.get("StatusConnectionsEvicted") == 17
        assert idle[0].recv(10) == b""  # the first (quietest) was closed
    finally:
        for s in idle:
            s.close()
        loop_thread.run(server.stop())


@pytest.mark.parametrize(("nofile", "cap"), [(64, 8), (256, 16), (1024, 64), (1_048_576, 64)])
def test_the_cap_follows_the_descriptor_limit(nofile: int, cap: int) -> None:
    assert connection_cap(nofile) == cap


def test_request_errors_are_rate_limited_with_a_count(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    counters = Counters()
    errors = RequestErrorLog(counters, clock=lambda: now[0])
    caplog.set_level(logging.DEBUG, logger="bruce.proxy.status")
    for _ in range(5):
        errors.exception("Error handling request from %s", "127.0.0.1", exc_info=ValueError("bad\nline"))
    errors.exception("Unhandled exception", exc_info=RuntimeError("a bug"))  # not a bad request: its own limit
    now[0] = 31.0
    errors.exception("Error handling request from %s", "127.0.0.1", exc_info=ValueError("again"))
    assert [(r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records] == [
        ("WARNING", "status server: Error handling request from 127.0.0.1: ValueError: bad line", False),
        ("ERROR", "status server: Unhandled exception", True),
        (
            "WARNING",
            "status server: Error handling request from 127.0.0.1: ValueError: again (4 more since the last such "
            "message)",
            False,
        ),
    ]
    assert counters.get("StatusBadRequest") == 6
