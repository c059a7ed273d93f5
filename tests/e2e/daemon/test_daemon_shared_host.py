"""The real ``bruce`` command on a host shared with hostile users (docs/operations.md#running-on-a-shared-host): a
squatted default socket directory and a live socket are refused with one line (no traceback), the default directory
is created private; the status server keeps descriptors for Kafka under a flood of idle connections."""

from __future__ import annotations

import os
import resource
import signal
import socket
import stat
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from bruce.client import BruceClient
from bruce.proxy.daemon.embedded import EmbeddedBroker

from .harness import BruceProcess, bruce_command, consume_topic, counters_json, http_get, wait_for

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
    """A second daemon (--status_port 0, so no port clash) on the first one's socket path refuses to start;
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


NOFILE = 512  # the daemon's descriptor limit in the flood test: status cap 32, plog tcp 256, the rest for Kafka


def _open_idle(port: int, count: int) -> list[socket.socket]:
    """``count`` connections that never send a byte (the connect completes in the kernel's accept queue)."""
    idle = []
    for _ in range(count):
        s = socket.socket()
        s.settimeout(10)
        s.connect(("127.0.0.1", port))
        idle.append(s)
    return idle


def _descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_floods_of_idle_connections_leave_descriptors_for_kafka(
    bruce_process: Callable[..., BruceProcess], tansu: EmbeddedBroker, new_topic: Callable[..., str], workdir: Path
) -> None:
    """The resource probes rerun on the real daemon with RLIMIT_NOFILE 512: 1,100 idle status connections and 1,000
    idle plog TCP connections. The status pages still answer (the quietest connection makes room), the plog listener
    holds its 256 and refuses the rest (counted), the daemon stays far from its limit, and a message sent meanwhile
    is delivered to Kafka."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert hard == resource.RLIM_INFINITY or hard >= 2600, f"this test opens 2,100 sockets; the hard limit is {hard}"
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, hard))  # inherited by the daemon
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            plog_port = probe.getsockname()[1]
        topic = new_topic()
        sock = str(workdir / "flood.sock")
        args = ["--receive_socket_name", sock, "--status_port", "0", "--initial_brokers", tansu.address]
        bruce = bruce_process([*args, "--plog_tcp", f"{plog_port}:{topic}"])
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 4096) if hard == resource.RLIM_INFINITY else hard, hard))
    idle: list[socket.socket] = []
    try:
        status_url = bruce.wait_serving()
        pid = bruce.process.pid
        wait_for(lambda: counters_json(status_url).get("MetadataChanged", 0) >= 1, what="the first metadata")
        baseline = _descriptors(pid)
        status_port = int(status_url.rsplit(":", 1)[1])
        idle += _open_idle(status_port, 1100)
        idle += _open_idle(plog_port, 1000)
        wait_for(
            lambda: counters_json(status_url).get("PlogTcpRejectedConnections", 0) == 1000 - 256,
            what="the plog connections over the limit refused",
        )
        counters = counters_json(status_url)
        assert counters["PlogTcpConnections"] == 256
        assert counters["StatusConnectionsEvicted"] >= 1100 - 32
        held = _descriptors(pid)
        assert held <= baseline + 256 + 32 + 2, (baseline, held)  # 2: the requests just made
        assert held < NOFILE * 3 // 4
        with BruceClient(sock) as client:
            client.send_any_partition(topic, b"delivered during the flood")
        [read] = consume_topic(tansu.address, topic, 1, 1)
        assert read.value == b"delivered during the flood"
        status, _, body = http_get(status_url + "/server_info/json")
        assert status == 200 and '"pid"' in body
    finally:
        for s in idle:
            s.close()
    bruce.signal(signal.SIGTERM)
    assert bruce.wait() == 0


def test_hostile_status_requests_change_nothing_and_log_one_line(
    bruce_process: Callable[..., BruceProcess], workdir: Path
) -> None:
    """The status pages' probes on the real daemon: 2,000 over-long requests log one line (no traceback); a
    cross-origin GET and a rebound Host cannot switch on message debugging (which writes message contents)."""
    debug_dir = workdir / "debug"
    sock = str(workdir / "status.sock")
    bruce = bruce_process(["--receive_socket_name", sock, *NO_BROKER, "--debug_dir", str(debug_dir)])
    status_url = bruce.wait_serving()
    port = int(status_url.rsplit(":", 1)[1])
    for _ in range(2000):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /" + b"a" * 10_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert b" 400 " in s.recv(100)
    for headers in (
        {"Host": f"127.0.0.1:{port}", "Origin": "http://evil.example"},
        {"Host": f"127.0.0.1:{port}", "Sec-Fetch-Site": "cross-site"},
        {"Host": f"rebound.evil.example:{port}"},
    ):
        request = urllib.request.Request(status_url + "/msg_debug/add_all_topics", headers=headers)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 403
    assert http_get(status_url + "/msg_debug/get_topics")[2] == "No message debug topics are currently enabled\n"
    counters = counters_json(status_url)
    assert counters["StatusBadRequest"] == 2000 and counters["StatusRefused"] == 3
    bruce.signal(signal.SIGTERM)
    assert bruce.wait() == 0
    log = bruce.log
    assert "Traceback" not in log
    assert len([line for line in log.splitlines() if "status server:" in line]) == 1
