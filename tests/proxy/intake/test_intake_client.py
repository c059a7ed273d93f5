"""The Python client library against a plain receiving socket (and a real intake where it matters): datagrams as
built, blocking, bounded and non-blocking sends, limits, and a daemon that is absent or restarted."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bruce.client import (
    BruceClient,
    DaemonUnavailableError,
    MessageTooLargeError,
    SocketFullError,
    TopicTooLargeError,
    default_socket_path,
    now_ms,
)
from bruce.proxy.intake.intake import DatagramIntake
from bruce.wire.datagram import Datagram, DatagramKind, parse_datagram
from bruce.wire.errors import BruceError, UsageError

from .conftest import TIMEOUT, wait_until


def fill(client: BruceClient) -> int:
    """Send until the receiver's queue is full (non-blocking client); returns how many were queued."""
    n = 0
    with pytest.raises(SocketFullError):
        while n < 10_000:
            client.send_any_partition("t", b"%d" % n)
            n += 1
    return n


def test_any_partition_datagram(receiver: socket.socket, sock_path: str) -> None:
    with BruceClient(sock_path) as client:
        client.send_any_partition("clicks", b"value", key=b"key", timestamp=0x123)
        before = now_ms()
        client.send_any_partition(b"clicks", b"v2")
        after = now_ms()
    assert parse_datagram(receiver.recv(1000)) == Datagram(
        DatagramKind.ANY_PARTITION, b"clicks", 0x123, b"key", b"value", None
    )
    second = parse_datagram(receiver.recv(1000))
    assert second.value == b"v2" and second.key == b"" and before <= second.timestamp <= after


@pytest.mark.parametrize(("given", "on_wire"), [(0x444, 0x444), (-5, -5), (2**32 - 1, -1), (2**31, -(2**31))])
def test_partition_key_datagram(receiver: socket.socket, sock_path: str, given: int, on_wire: int) -> None:
    with BruceClient(sock_path) as client:
        client.send_partition_key("orders", given, b"v", key=b"k", timestamp=7)
    assert parse_datagram(receiver.recv(1000)) == Datagram(
        DatagramKind.PARTITION_KEY, b"orders", 7, b"k", b"v", on_wire
    )


def test_partition_key_out_of_range(receiver: socket.socket, sock_path: str) -> None:
    with BruceClient(sock_path) as client, pytest.raises(UsageError):
        client.send_partition_key("t", 2**32, b"v")


def test_nonblocking_full_socket_raises_and_sends_nothing(receiver: socket.socket, sock_path: str) -> None:
    with BruceClient(sock_path, blocking=False) as client:
        queued = fill(client)
        with pytest.raises(SocketFullError) as e:
            client.send_any_partition("t", b"dropped")
        assert isinstance(e.value, BruceError) and e.value.reason == "SOCKET_FULL"
        receiver.setblocking(False)
        got = []
        while True:
            try:
                got.append(parse_datagram(receiver.recv(1000)).value)
            except BlockingIOError:
                break
        assert got == [b"%d" % i for i in range(queued)]  # the refused ones were not sent
        client.send_any_partition("t", b"room again")  # the same client goes on once there is room
        assert parse_datagram(receiver.recv(1000)).value == b"room again"


def test_blocking_send_waits_for_room(receiver: socket.socket, sock_path: str) -> None:
    with BruceClient(sock_path, blocking=False) as filler:
        queued = fill(filler)
    done = threading.Event()

    def send() -> None:
        with BruceClient(sock_path) as client:
            client.send_any_partition("t", b"waited")
        done.set()

    t = threading.Thread(target=send, daemon=True)
    t.start()
    assert not done.wait(0.3)  # blocked: the queue is full
    receiver.recv(1000)  # room for one
    assert done.wait(TIMEOUT)
    values = [parse_datagram(receiver.recv(1000)).value for _ in range(queued)]
    assert values[-1] == b"waited"


def test_no_daemon(sock_path: str) -> None:
    with BruceClient(sock_path) as client, pytest.raises(DaemonUnavailableError, match="no bruce daemon"):
        client.send_any_partition("t", b"v")


def test_stale_socket_file_means_no_daemon(sock_path: str) -> None:
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dead.bind(sock_path)
    dead.close()
    with BruceClient(sock_path) as client, pytest.raises(DaemonUnavailableError):
        client.send_any_partition("t", b"v")


def test_reconnects_to_a_restarted_daemon(sock_path: str) -> None:
    first = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    first.bind(sock_path)
    with BruceClient(sock_path) as client:
        client.send_any_partition("t", b"one")
        assert parse_datagram(first.recv(1000)).value == b"one"
        first.close()
        os.unlink(sock_path)
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as second:
            second.bind(sock_path)
            second.settimeout(TIMEOUT)
            client.send_any_partition("t", b"two")
            assert parse_datagram(second.recv(1000)).value == b"two"


def test_daemon_shutting_down(make_intake: Callable[..., DatagramIntake], sock_path: str, run: Any) -> None:
    intake = make_intake()

    async def scenario() -> None:
        serving = asyncio.ensure_future(intake.serve())
        await asyncio.sleep(0.05)
        with BruceClient(sock_path) as client:
            client.send_any_partition("t", b"before")
            await wait_until(lambda: intake.datagrams == 1)
            intake.stop_accepting()
            with pytest.raises(DaemonUnavailableError):
                client.send_any_partition("t", b"after")
        await intake.drain()
        intake.close()
        await serving

    run(scenario())
    assert [m.value for m in intake.sink.messages] == [b"before"]


def test_topic_limits(receiver: socket.socket, sock_path: str) -> None:
    with BruceClient(sock_path) as client:
        with pytest.raises(TopicTooLargeError):
            client.send_any_partition("", b"v")
        with pytest.raises(TopicTooLargeError):
            client.send_partition_key("x" * 32768, 1, b"v")
        client.send_any_partition("x" * 32767, b"v", timestamp=1)  # the longest topic there is
        assert parse_datagram(receiver.recv(40000)).topic == b"x" * 32767


def test_message_larger_than_the_daemon_accepts(receiver: socket.socket, sock_path: str) -> None:
    with BruceClient(sock_path, max_datagram_size=100) as client:
        client.send_any_partition("t", b"v" * (100 - 29))  # exactly 100 bytes
        with pytest.raises(MessageTooLargeError, match="max_datagram_size=100"):
            client.send_any_partition("t", b"v" * (100 - 28))
    assert len(receiver.recv(1000)) == 100


def test_message_larger_than_the_kernel_carries(receiver: socket.socket, sock_path: str) -> None:
    huge = b"v" * (16 << 20)
    with BruceClient(sock_path, max_datagram_size=None) as client, pytest.raises(MessageTooLargeError, match="kernel"):
        client.send_any_partition("t", huge)


def test_errors_are_usage_or_bruce_errors() -> None:
    assert issubclass(TopicTooLargeError, UsageError) and issubclass(MessageTooLargeError, UsageError)
    assert issubclass(SocketFullError, BruceError) and not issubclass(SocketFullError, UsageError)
    assert issubclass(DaemonUnavailableError, BruceError)


def test_close_releases_the_socket(receiver: socket.socket, sock_path: str) -> None:
    client = BruceClient(sock_path)
    with client:
        client.send_any_partition("t", b"v")
        sock = client._sock
        assert sock is not None
    assert client._sock is None and sock.fileno() == -1


def test_bounded_send_gives_up_after_its_timeout_and_sends_nothing(receiver: socket.socket, sock_path: str) -> None:
    with BruceClient(sock_path, blocking=False) as filler:
        queued = fill(filler)
    with BruceClient(sock_path, timeout=0.2) as client:
        started = time.monotonic()
        with pytest.raises(SocketFullError, match=r"stayed full for 0\.2 s"):
            client.send_any_partition("t", b"late")
        assert time.monotonic() - started >= 0.2  # it did wait
    receiver.setblocking(False)
    got = []
    with contextlib.suppress(BlockingIOError):
        while True:
            got.append(parse_datagram(receiver.recv(1000)).value)
    assert got == [b"%d" % i for i in range(queued)]


@pytest.mark.parametrize("timeout", [TIMEOUT, 1e12, float("inf")])  # huge and infinite: no bound, no overflow
def test_bounded_send_goes_through_as_soon_as_there_is_room(
    receiver: socket.socket, sock_path: str, timeout: float
) -> None:
    with BruceClient(sock_path, blocking=False) as filler:
        queued = fill(filler)
    threading.Timer(0.1, receiver.recv, (1000,)).start()  # room for one, a little later
    with BruceClient(sock_path, timeout=timeout) as client:
        client.send_any_partition("t", b"waited")
    values = [parse_datagram(receiver.recv(1000)).value for _ in range(queued)]
    assert values[-1] == b"waited"


def test_a_send_timeout_overrides_the_clients(receiver: socket.socket, sock_path: str) -> None:
    with BruceClient(sock_path, blocking=False) as client:
        queued = fill(client)
        threading.Timer(0.1, receiver.recv, (1000,)).start()
        client.send_any_partition("t", b"waited", timeout=TIMEOUT)  # this send may wait
        with BruceClient(sock_path, timeout=TIMEOUT) as patient, pytest.raises(SocketFullError, match="is full"):
            patient.send_any_partition("t", b"dropped", timeout=0)  # this one may not
    values = [parse_datagram(receiver.recv(1000)).value for _ in range(queued)]
    assert values[-1] == b"waited"


@pytest.mark.parametrize("kwargs", [{"timeout": -1}, {"timeout": float("nan")}, {"blocking": False, "timeout": 1}])
def test_invalid_timeouts(sock_path: str, kwargs: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        BruceClient(sock_path, **kwargs)
    with BruceClient(sock_path) as client, pytest.raises(UsageError):
        client.send_any_partition("t", b"v", timeout=-0.5)


@pytest.mark.parametrize("runtime_dir", [True, False], ids=["XDG_RUNTIME_DIR", "TMPDIR"])
def test_without_a_path_the_client_sends_to_the_daemons_default_socket(
    runtime_dir: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``BruceClient()`` finds the daemon where ``bruce`` puts its socket without ``--receive_socket_name`` (and
    ``to_bruce`` without ``--socket_path`` sends): ``$XDG_RUNTIME_DIR/bruce.socket``, else
    ``$TMPDIR/bruce-<uid>/bruce.socket``."""
    if runtime_dir:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
        where = tmp_path / "bruce.socket"
    else:
        monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
        monkeypatch.setenv("TMPDIR", str(tmp_path))
        where = tmp_path / f"bruce-{os.geteuid()}" / "bruce.socket"
        where.parent.mkdir(mode=0o700)
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as receiver:
        receiver.bind(str(where))
        receiver.settimeout(TIMEOUT)
        with BruceClient() as client:
            client.send_any_partition("clicks", b"to the default socket")
        assert parse_datagram(receiver.recv(1000)).value == b"to the default socket"
    assert BruceClient().socket_path == os.fsencode(where) == os.fsencode(default_socket_path())
