"""Starting and stopping the status server: loopback by default, a clear error naming host:port when the port cannot
be bound (Bruce's startup check included), restart after a failure, stop releases the port."""

from __future__ import annotations

import inspect
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from bruce.proxy.status import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    StatusBindError,
    StatusServer,
    check_status_port,
)
from bruce.wire.errors import UsageError

from .conftest import FakeSource, LoopThread


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port on 127.0.0.1 that another process-like listener holds."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_defaults_are_loopback_and_bruces_port() -> None:
    assert (DEFAULT_HOST, DEFAULT_PORT) == ("127.0.0.1", 9090)
    for fn in (StatusServer.start, check_status_port):
        params = inspect.signature(fn).parameters
        assert params["host"].default == "127.0.0.1"
        assert params["port"].default == 9090


def _outward_address() -> str | None:
    """A non-loopback address of this machine, if it has one (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))
        except OSError:
            return None
        address = s.getsockname()[0]
    return None if address.startswith("127.") else address


def test_server_started_without_host_listens_on_loopback_only(loop_thread: LoopThread, source: FakeSource) -> None:
    server = StatusServer(source)
    loop_thread.run(server.start(port=0))
    try:
        assert server.host == "127.0.0.1"
        assert server._runner is not None
        assert [address[0] for address in server._runner.addresses] == ["127.0.0.1"]
        with urllib.request.urlopen(server.url + "/server_info/json", timeout=5) as r:
            assert r.status == 200
        other = _outward_address()
        if other is not None:  # the same port on another interface of this machine is closed
            with pytest.raises(OSError), socket.create_connection((other, server.port), timeout=2):
                pass
    finally:
        loop_thread.run(server.stop())


def test_bind_failure_names_host_and_port(loop_thread: LoopThread, source: FakeSource, busy_port: int) -> None:
    server = StatusServer(source)
    with pytest.raises(StatusBindError) as info:
        loop_thread.run(server.start("127.0.0.1", busy_port))
    message = str(info.value)
    assert message.startswith(f"cannot serve the status interface on 127.0.0.1:{busy_port}: ")
    assert "is another bruce already running?" in message
    assert info.value.reason == "STATUS_BIND"
    # The failed server holds nothing and can start elsewhere.
    with pytest.raises(UsageError, match="not running"):
        _ = server.url
    loop_thread.run(server.start("127.0.0.1", 0))
    assert server.port not in (None, 0, busy_port)
    loop_thread.run(server.stop())


def test_bind_failure_on_an_address_not_on_this_machine(loop_thread: LoopThread, source: FakeSource) -> None:
    with pytest.raises(StatusBindError, match=r"on 203\.0\.113\.254:9090: "):
        loop_thread.run(StatusServer(source).start("203.0.113.254", 9090))
    with pytest.raises(StatusBindError, match=r"on 203\.0\.113\.254:9090: "):
        check_status_port("203.0.113.254", 9090)


def test_check_status_port_is_bruces_startup_test_bind(busy_port: int) -> None:
    with pytest.raises(StatusBindError, match=f"on 127.0.0.1:{busy_port}: .*already running"):
        check_status_port("127.0.0.1", busy_port)
    with socket.socket() as s:  # a free port passes, and stays free
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    check_status_port("127.0.0.1", free)
    check_status_port("127.0.0.1", free)


def test_check_status_port_fails_while_a_status_server_runs(loop_thread: LoopThread, source: FakeSource) -> None:
    server = StatusServer(source)
    loop_thread.run(server.start("127.0.0.1", 0))
    port = server.port
    assert port is not None
    try:
        with pytest.raises(StatusBindError):
            check_status_port("127.0.0.1", port)
    finally:
        loop_thread.run(server.stop())
    check_status_port("127.0.0.1", port)  # stop released it
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)


def test_double_start_is_refused_and_stop_is_idempotent(loop_thread: LoopThread, source: FakeSource) -> None:
    server = StatusServer(source)
    loop_thread.run(server.stop())  # never started: nothing to do
    loop_thread.run(server.start("127.0.0.1", 0))
    with pytest.raises(UsageError, match="already started"):
        loop_thread.run(server.start("127.0.0.1", 0))
    loop_thread.run(server.stop())
    loop_thread.run(server.stop())
