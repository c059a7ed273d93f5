"""The real ``bruce`` command on a host shared with hostile users (docs/operations.md#running-on-a-shared-host): a
squatted default socket directory and a live socket are refused with one line (no traceback), the default directory
is created private; the status server keeps descriptors for Kafka under a flood of idle connections."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from bruce.proxy.client import BruceClient

from .harness import BruceProcess, bruce_command, counters_json, wait_for

pytestmark = pytest.mark.e2e

NOBODY = 65534
NO_BROKER = ["--status_port", "0", "--initial_brokers", "127.0.0.1:1", "--shutdown_max_delay", "300"]


def _default_env(workdir: Path) -> dict[str, str]:
    """The default socket path, moved under ``workdir`` ($TMPDIR) so no test touches the real one."""
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env["TMPDIR"] = str(workdir)
    return env


def _refused(result: subprocess.CompletedProcess[bytes]) -> str:
    """The one-line refusal: exit status 1, a single ``bruce: ...`` line, no traceback."""
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bruce: "), err
    return lines[0]


@pytest.mark.parametrize("squat", ["other-user", "symlink"])
def test_a_squatted_default_socket_directory_is_refused(workdir: Path, squat: str) -> None:
    """Another local user created ``$TMPDIR/bruce-<uid>`` first, with a socket in it that would receive what clients
    send: the daemon refuses in one line naming the directory and the fix, and never uses it."""
    squatted = workdir / f"bruce-{os.geteuid()}"
    theirs = workdir / "theirs"
    theirs.mkdir(mode=0o777)
    if squat == "symlink":
        squatted.symlink_to(theirs)
    else:
        squatted.mkdir(mode=0o777)
    trap = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    trap.bind(str(squatted / "bruce.socket"))
    try:
        if squat == "other-user":
            assert os.geteuid() == 0, "simulating another user needs root (chown)"
            os.chown(squatted, NOBODY, NOBODY)
            os.chown(squatted / "bruce.socket", NOBODY, NOBODY)
        result = subprocess.run(
            [*bruce_command(), *NO_BROKER], capture_output=True, timeout=60, check=False, env=_default_env(workdir)
        )
        line = _refused(result)
        assert str(squatted) in line and "--receive_socket_name" in line
        assert ("belongs to uid 65534" if squat == "other-user" else "is a symbolic link") in line
        trap.setblocking(False)
        with pytest.raises(BlockingIOError):
            trap.recv(100)  # nothing reached the squatter, and its socket is still there (not taken over)
        assert (squatted / "bruce.socket").exists()
    finally:
        trap.close()


def test_the_default_socket_directory_is_created_private(
    bruce_process: Callable[..., BruceProcess], workdir: Path
) -> None:
    bruce = bruce_process(NO_BROKER, env=_default_env(workdir))
    status_url = bruce.wait_serving()
    directory = workdir / f"bruce-{os.geteuid()}"
    st = os.lstat(directory)
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.geteuid()
    with BruceClient(directory / "bruce.socket") as client:
        client.send_any_partition("t", b"reaches the daemon")
    wait_for(lambda: counters_json(status_url).get("MsgReceived", 0) == 1, what="the datagram read")
    bruce.signal(signal.SIGTERM)
    assert bruce.wait() == 0


def test_a_second_daemon_never_takes_over_a_live_socket(
    bruce_process: Callable[..., BruceProcess], workdir: Path
) -> None:
    """Issue 12: a second daemon (--status_port 0, so no port clash) on the first one's socket path refuses to start;
    the first keeps receiving."""
    sock = str(workdir / "shared.sock")
    first = bruce_process(["--receive_socket_name", sock, *NO_BROKER])
    status_url = first.wait_serving()
    second = subprocess.run(
        [*bruce_command(), "--receive_socket_name", sock, *NO_BROKER], capture_output=True, timeout=60, check=False
    )
    line = _refused(second)
    assert f"the input socket {sock} is live" in line and "another bruce running" in line
    with BruceClient(sock) as client:
        client.send_any_partition("t", b"still the first daemon's")
    wait_for(lambda: counters_json(status_url).get("MsgReceived", 0) == 1, what="the first daemon to read it")
    first.signal(signal.SIGTERM)
    assert first.wait() == 0


def test_a_stale_socket_is_still_replaced(bruce_process: Callable[..., BruceProcess], workdir: Path) -> None:
    sock = workdir / "stale.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    stale.bind(str(sock))
    stale.close()  # left behind by a killed daemon
    bruce = bruce_process(["--receive_socket_name", str(sock), *NO_BROKER])
    status_url = bruce.wait_serving()
    with BruceClient(sock) as client:
        client.send_any_partition("t", b"x")
    wait_for(lambda: counters_json(status_url).get("MsgReceived", 0) == 1, what="the datagram read")
    bruce.signal(signal.SIGTERM)
    assert bruce.wait() == 0
