"""The real ``bruce`` command as a subprocess: the README's flow on the embedded broker (run as run.sh runs it, send
with the ``to_bruce`` command it prints, read back with confluent-kafka), ``--daemon``, SIGTERM and SIGINT, the
shutdown drain of datagrams still queued in the kernel, Bruce's two XML configs unchanged, and start-up errors."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from config_files import COMBINED_CONF, PER_TOPIC_CONF

from bruce.client import BruceClient, SocketFullError
from bruce.proxy.config.ports import KAFKA_PORT, port_is_free
from bruce.proxy.daemon.embedded import EmbeddedBroker

from .harness import BruceProcess, bruce_command, consume_topic, counters_json, http_get, wait_for

pytestmark = pytest.mark.e2e

STOPPED = re.compile(r"stopped: (\d+) received, (\d+) delivered, (\d+) discarded, (\d+) in flight")


def _final_accounting(process: BruceProcess) -> tuple[int, int, int, int]:
    match = STOPPED.search(process.log)
    assert match, process.log
    return tuple(int(g) for g in match.groups())  # type: ignore[return-value]


def _port_open(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def test_a_mistyped_option_under_run_sh_points_at_run_sh_help() -> None:
    """The user typed ``./run.sh``: the refusal names that command's help, not ``bruce --help``."""
    root = Path(__file__).resolve().parents[3]
    run = subprocess.run(["./run.sh", "--no_such_option"], cwd=root, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip().splitlines()[-1].endswith("(see ./run.sh --help)"), run.stderr


def test_readme_flow_on_the_embedded_broker(bruce_process: Callable[..., BruceProcess], workdir: Path) -> None:
    """``./run.sh`` runs ``bruce`` with no broker configured: it starts tansu, says where everything is and how to
    send; the printed ``to_bruce`` command delivers a message that confluent-kafka reads; SIGINT stops both."""
    root = Path(__file__).resolve().parents[3]
    assert (root / "run.sh").read_text().rstrip().endswith('exec .venv/bin/bruce "$@"')  # what this test runs
    readme = (root / "README.md").read_text()
    assert "./run.sh" in readme and "--topic test --value hello" in readme and "http://127.0.0.1:9090/" in readme
    sock = str(workdir / "readme.sock")
    usual_port_free = port_is_free(KAFKA_PORT)
    bruce = bruce_process(["--receive_socket_name", sock, "--status_port", "0"])  # run.sh passes its arguments on
    status_url = bruce.wait_serving()
    wait_for(lambda: "stop with Ctrl-C" in bruce.log, what="the announcement")
    log = bruce.log
    broker = re.search(r"an embedded broker \(tansu\) runs on (\S+)", log).group(1)  # type: ignore[union-attr]
    if usual_port_free:  # as the examples in the docs expect
        assert broker == "127.0.0.1:9092" and "(Kafka's usual port) for this session" in log, log
    else:  # another port, and the banner says why
        assert broker != "127.0.0.1:9092" and f"is taken: use {broker} where an example names 127.0.0.1:9092" in log
    assert f"input socket  {sock}" in log and f"status pages  {status_url}/" in log
    command = re.search(r"send a message from another terminal:\n\s+(.+)\n", log).group(1)  # type: ignore[union-attr]
    assert command.endswith(f"--socket_path {sock} --topic test --value hello")
    sent = subprocess.run(shlex.split(command), capture_output=True, timeout=30, check=False)
    assert sent.returncode == 0, sent.stderr
    reads = consume_topic(broker, "test", 4, 1, timeout=60)  # created on first use, with 4 partitions
    assert [(r.key, r.value) for r in reads] == [(None, b"hello")]
    assert http_get(status_url + "/server_info/json")[0] == 200
    bruce.signal(signal.SIGINT)
    assert bruce.wait() == 0
    assert _final_accounting(bruce) == (1, 1, 0, 0)
    assert not _port_open(broker), "the embedded broker must stop with bruce"
    assert not os.path.exists(sock), "the socket is unlinked at exit"


def test_daemon_mode_prints_the_pid_and_serves(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], workdir: Path
) -> None:
    topic = new_topic(partitions=1)
    sock = str(workdir / "daemon.sock")
    log_path = workdir / "daemon.log"
    args = ["--daemon", "--receive_socket_name", sock, "--status_port", "0", "--initial_brokers", tansu.address]
    with open(log_path, "wb") as log:
        parent = subprocess.run([*bruce_command(), *args], stdout=subprocess.PIPE, stderr=log, timeout=60, check=False)
    assert parent.returncode == 0, log_path.read_text()
    pid = int(parent.stdout.decode().strip())
    try:
        assert os.path.exists(sock)  # serving when the command returns
        with BruceClient(sock) as client:
            client.send_any_partition(topic, b"from-daemon-mode")
        assert [r.value for r in consume_topic(tansu.address, topic, 1, 1)] == [b"from-daemon-mode"]
        # the pages name the daemon (the PID printed for the pid file, the one in its log), not the exited parent
        log = log_path.read_text()
        status_url = re.search(r"status (http://\S+)/\n", log).group(1)  # type: ignore[union-attr]
        assert f" bruce[{pid}] " in log
        for page in ("server_info", "counters", "queues", "discards", "metadata_fetch_time"):
            status, _, body = http_get(f"{status_url}/{page}/json")
            assert status == 200 and json.loads(body)["pid"] == pid, (page, body[:200])
        assert f"pid: {pid}\n" in http_get(f"{status_url}/server_info/plain")[2]
    finally:
        os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not _alive(pid), what=f"daemon {pid} to exit")
    assert "stopped: 1 received, 1 delivered, 0 discarded, 0 in flight" in log_path.read_text()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_datagrams_queued_in_the_kernel_at_sigterm_are_delivered(
    bruce_process: Callable[..., BruceProcess], tansu: EmbeddedBroker, new_topic: Callable[..., str], workdir: Path
) -> None:
    """The daemon is stopped (SIGSTOP) while a client fills everything that can hold datagrams — the kernel's socket
    queue and the reader process's pipe — then gets SIGTERM and continues. Every datagram the kernel accepted is read
    and delivered (Bruce loses these)."""
    topic = new_topic(partitions=2)
    sock = str(workdir / "drain.sock")
    bruce = bruce_process(["--receive_socket_name", sock, "--status_port", "0", "--initial_brokers", tansu.address])
    status_url = bruce.wait_serving()
    wait_for(lambda: counters_json(status_url).get("MetadataChanged", 0) >= 1, what="the first metadata")
    pid = bruce.process.pid
    os.kill(pid, signal.SIGSTOP)
    sent = 0
    try:
        with BruceClient(sock, blocking=False) as client:
            full_since = None
            while True:  # until the socket stays full: the reader process's pipe is full as well
                try:
                    client.send_any_partition(topic, b"%08d" % sent + b"q" * 92)
                    sent += 1
                    full_since = None
                except SocketFullError:
                    full_since = full_since or time.monotonic()
                    if time.monotonic() - full_since > 0.5:
                        break
                    time.sleep(0.01)
        os.kill(pid, signal.SIGTERM)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert bruce.wait() == 0
    assert sent > 1000, "the pipe and the socket queue should have held thousands"
    assert _final_accounting(bruce) == (sent, sent, 0, 0)
    reads = consume_topic(tansu.address, topic, 2, sent)
    assert sorted(r.value[:8] for r in reads) == [b"%08d" % i for i in range(sent)]


def test_combined_conf_delivers_on_shutdown_flush(
    bruce_process: Callable[..., BruceProcess], tansu: EmbeddedBroker, new_topic: Callable[..., str], workdir: Path
) -> None:
    """A production-shaped config: combined-topics batches of 10 s. SIGTERM right after sending: the shutdown flushes
    the open batch and waits for the ACKs, so everything is delivered long before the batch time."""
    topic = new_topic(partitions=3)
    sock = str(workdir / "conf.sock")
    config = COMBINED_CONF
    args = ["--config_path", str(config), "--initial_brokers", tansu.address]
    bruce = bruce_process([*args, "--receive_socket_name", sock, "--status_port", "0"])
    status_url = bruce.wait_serving()
    wait_for(lambda: counters_json(status_url).get("MetadataChanged", 0) >= 1, what="the first metadata")
    with BruceClient(sock) as client:
        for i in range(50):
            client.send_any_partition(topic, b"conf-%02d" % i)
    wait_for(lambda: counters_json(status_url).get("MsgReceived", 0) == 50, what="50 datagrams read")
    begun = time.monotonic()
    bruce.signal(signal.SIGTERM)
    assert bruce.wait() == 0
    assert time.monotonic() - begun < 10, "the shutdown must flush, not wait for the 10 s batch time"
    assert _final_accounting(bruce) == (50, 50, 0, 0)
    assert sorted(r.value for r in consume_topic(tansu.address, topic, 3, 50)) == [b"conf-%02d" % i for i in range(50)]


def test_per_topic_conf_starts_without_a_reachable_broker(
    bruce_process: Callable[..., BruceProcess], workdir: Path
) -> None:
    """per_topic_conf.xml names brokers that do not exist: the daemon starts anyway, accepts messages (they wait
    for the first metadata, shown as "new" on /queues), serves its pages, and at shutdown counts them as
    SERVER_SHUTDOWN."""
    sock = str(workdir / "example.sock")
    log_path = workdir / "example-discards.log"
    config = PER_TOPIC_CONF
    args = ["--config_path", str(config), "--shutdown_max_delay", "1000", "--discard_log_path", str(log_path)]
    bruce = bruce_process([*args, "--receive_socket_name", sock, "--status_port", "0"])
    status_url = bruce.wait_serving()
    with BruceClient(sock) as client:
        for i in range(5):
            client.send_any_partition("alerts", b"wait-%d" % i)
    wait_for(lambda: counters_json(status_url).get("MsgReceived", 0) == 5, what="5 datagrams read")
    status, _, body = http_get(status_url + "/queues/plain")
    assert status == 200 and re.search(r"\b5 total new", body), body
    assert http_get(status_url + "/metadata_fetch_time/json")[2].count('"last_updated": 0') == 1
    bruce.signal(signal.SIGTERM)
    assert bruce.wait() == 0
    assert _final_accounting(bruce) == (5, 0, 5, 0)
    assert [line.split(" info: ")[1].split(" ")[0] for line in log_path.read_text().splitlines()] == [
        "SERVER_SHUTDOWN"
    ] * 5


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["--no_such_option"], 2, "unknown option --no_such_option"),
        (["--config_path", "/nonexistent/bruce.xml"], 1, "/nonexistent/bruce.xml"),
        (["--use_old_input_format", "--initial_brokers", "127.0.0.1:1"], 1, "--use_old_input_format"),
        (["--max_input_msg_size", "16777216", "--initial_brokers", "127.0.0.1:1"], 1, "max_input_msg_size=16777216"),
        # A setting the producer refuses while the daemon is built is a bad command line; a preflight check, a failed
        # start (docs/configuration.md: 2 and 1)
        (
            [
                *("--kafka_property", "security.protocol=SSL"),
                *("--kafka_property", "ssl.ca.location=/nonexistent/ca.pem"),
                *("--initial_brokers", "127.0.0.1:1"),
            ],
            2,
            "ssl.ca.location: cannot load /nonexistent/ca.pem",
        ),
        (
            ["--plog_udp", "23456:a,23456:b", "--initial_brokers", "127.0.0.1:1"],
            1,
            "--plog_udp: another listener already uses udp 127.0.0.1:23456",
        ),
    ],
    ids=["unknown-option", "missing-config", "old-input-format", "large-datagrams", "certificate", "plog-port-twice"],
)
def test_startup_errors_name_the_problem(args: list[str], status: int, message: str, workdir: Path) -> None:
    args = [*args, "--receive_socket_name", str(workdir / "x.sock"), "--status_port", "0"]
    result = subprocess.run([*bruce_command(), *args], capture_output=True, timeout=60, check=False)
    assert result.returncode == status, result.stderr
    assert message in result.stderr.decode()
    assert not (workdir / "x.sock").exists()


def test_busy_status_port_is_refused(workdir: Path) -> None:
    """Bruce's test-bind: a second daemon on the same status port fails at once and says what to do."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        args = ["--status_port", str(port), "--initial_brokers", "127.0.0.1:1"]
        args += ["--receive_socket_name", str(workdir / "busy.sock")]
        result = subprocess.run([*bruce_command(), *args], capture_output=True, timeout=60, check=False)
    assert result.returncode == 1
    err = result.stderr.decode()
    assert f"127.0.0.1:{port}" in err and "already running" in err and "--status_port" in err


def test_help_lists_the_options() -> None:
    result = subprocess.run([*bruce_command(), "--help"], capture_output=True, timeout=60, check=False)
    assert result.returncode == 0
    assert "--receive_socket_name" in result.stdout.decode() and "--shutdown_max_delay" in result.stdout.decode()


def test_socket_path_taken_by_a_file_is_refused(workdir: Path) -> None:
    """A file at the socket path is never deleted: bruce stops and says what to change."""
    taken = workdir / "not-a-socket"
    taken.write_text("keep me")
    args = ["--receive_socket_name", str(taken), "--status_port", "0", "--initial_brokers", "127.0.0.1:1"]
    result = subprocess.run([*bruce_command(), *args], capture_output=True, timeout=60, check=False)
    assert result.returncode == 1
    assert "exists and is not a socket" in result.stderr.decode()
    assert taken.read_text() == "keep me"
