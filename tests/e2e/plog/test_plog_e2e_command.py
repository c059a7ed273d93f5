"""plog's inputs end to end, with the real ``bruce`` command: senders written for plog — socat for an unboxed datagram
and for TCP lines, plog's multipart format from Python — deliver to Kafka through ``bruce --plog_udp PORT:TOPIC`` and
a ``[[plog.listener]]`` table in a TOML config file; confluent-kafka reads every message back; SIGTERM stops it with
everything accounted. And a plog port already in use is a clear start-up error."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.wire.plog import build_fragments

from ..daemon.harness import BruceProcess, bruce_command, consume_topic, counters_json, wait_for
from .conftest import free_port, send_udp

pytestmark = pytest.mark.e2e

CONFIG = """
[batching]
produce_request_data_limit = "1024k"
message_max_bytes = 1000000
combined_topics = {{ enable = true, config = "fast" }}
default_topic = {{ action = "combined_topics" }}

[batching.named_configs.fast]
time = 20
messages = "disable"
bytes = "256k"

[compression]
default_topic = "none"

[compression.named_configs]
none = {{ type = "none" }}

[[initial_brokers]]
host = "127.0.0.1"
port = {broker_port}

[[plog.listener]]
protocol = "tcp"
port = {tcp_port}
topic = "{tcp_topic}"
"""


def socat(*args: str, data: bytes) -> None:
    path = shutil.which("socat")
    assert path, "socat is not installed: run scripts/bootstrap.sh (it installs the Debian package socat)"
    subprocess.run([path, *args], input=data, check=True, timeout=30, capture_output=True)


def test_plog_senders_deliver_through_the_bruce_command(
    bruce_process: Callable[..., BruceProcess], workdir: Path, tansu: EmbeddedBroker, new_topic: Callable[..., str]
) -> None:
    udp_topic, tcp_topic = new_topic(partitions=2), new_topic(partitions=1)
    udp_port, tcp_port = free_port(), free_port(socket.SOCK_STREAM)
    config = workdir / "bruce.toml"
    config.write_text(CONFIG.format(broker_port=tansu.port, tcp_port=tcp_port, tcp_topic=tcp_topic))
    process = bruce_process(
        [
            "--config_path", str(config),
            "--plog_udp", f"{udp_port}:{udp_topic}",
            "--receive_socket_name", str(workdir / "bruce.sock"),
            "--status_port", "0",
        ]
    )  # fmt: skip
    status_url = process.wait_serving()
    subprocess.run(["sh", "-c", f"printf 'hello' | socat - UDP-DATAGRAM:127.0.0.1:{udp_port}"], check=True, timeout=30)
    big = bytes(range(256)) * 400  # 102,400 bytes in 11 fragments
    send_udp(("127.0.0.1", udp_port), build_fragments(big, message_id=7, fragment_size=10_000, partition_key="k"))
    socat("-t0", "-", f"TCP:127.0.0.1:{tcp_port}", data=b"foo\nbar\nbaz")
    wait_for(lambda: counters_json(status_url).get("MsgDelivered", 0) == 5, what="five messages delivered")
    process.signal(signal.SIGTERM)
    assert process.wait() == 0, process.log
    assert "stopped: 5 received, 5 delivered, 0 discarded, 0 in flight" in process.log
    udp_reads = consume_topic(tansu.address, udp_topic, 2, 2)
    assert sorted(((r.key, r.value) for r in udp_reads), key=lambda kv: len(kv[1])) == [(None, b"hello"), (b"k", big)]
    tcp_reads = sorted(consume_topic(tansu.address, tcp_topic, 1, 3), key=lambda r: r.offset)
    assert [r.value for r in tcp_reads] == [b"foo", b"bar", b"baz"]


def test_a_busy_plog_port_is_a_clear_start_up_error(workdir: Path, tansu: EmbeddedBroker) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = ["--initial_brokers", tansu.address, "--plog_tcp", f"{port}:t", "--status_port", "0"]
        args += ["--receive_socket_name", str(workdir / "b.sock")]
        done = subprocess.run([*bruce_command(), *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert f"bruce: plog listener plog-tcp-{port}: cannot listen on tcp 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (workdir / "b.sock").exists()
