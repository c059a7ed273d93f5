"""What the daemon takes from the producer's hooks: the three message debug files (``msg_send`` from the producer's
``sent`` hook) for the enabled topic only, and the connected-brokers and in-flight-requests gauges on ``/metrics``."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from fakebroker import FakeCluster, Fault

from bruce.wire.protocol import produce

from .harness import ClusterThread, DaemonThread, daemon_starter, make_config, wait_for

pytestmark = pytest.mark.e2e

LINE = re.compile(rb"^ts: (\d+) topic: (\d+)\[(.*)\] key: (\d+)\[(.*)\] value: (\d+)\[(.*)\]$")


def _debug_lines(path: Path) -> list[tuple[str, bytes | None, bytes]]:
    """(topic, key, value) per line of a debug file, checking each line's lengths."""
    out = []
    for line in path.read_bytes().splitlines():
        match = LINE.match(line)
        assert match, line
        _, topic_len, topic, key_len, key, value_len, value = match.groups()
        assert (int(topic_len), int(key_len), int(value_len)) == (len(topic), len(key), len(value)), line
        out.append((topic.decode(), base64.b64decode(key) if key else None, base64.b64decode(value)))
    return out


def test_debug_files_log_receive_send_and_ack_for_the_enabled_topic_only(
    start_daemon: Callable[..., DaemonThread], new_topic: Callable[..., str], workdir: Path
) -> None:
    debugged, other = new_topic(partitions=2), new_topic(partitions=1)
    d = start_daemon()
    status, _, body = d.get("/msg_debug/add_topic/" + debugged)
    assert status == 200 and body == f"Enabled debug topic [{debugged}]\n"
    values = [b"debug-%d" % i for i in range(6)]
    with d.client() as client:
        for i, value in enumerate(values):
            client.send_partition_key(debugged, i, value, key=b"k%d" % i)
            client.send_any_partition(other, b"not debugged")
    d.settle(12)
    assert d.counter("MsgDiscard") == 0
    d.stop()  # closes (flushes) the debug files
    debug = workdir / "debug"
    expected = sorted((debugged, b"k%d" % i, v) for i, v in enumerate(values))
    for name in ("msg_receive", "msg_send", "msg_got_ack"):
        assert sorted(_debug_lines(debug / name)) == expected, name


@pytest.mark.parametrize("idempotence", ["auto", "false"], ids=["idempotent", "at-least-once"])
def test_connected_brokers_and_in_flight_requests_gauges(workdir: Path, idempotence: str) -> None:
    """At least once, nothing is connected before the first message; idempotent (the default, which the fake broker
    takes), one broker is connected at start to get the producer id."""
    with ClusterThread(FakeCluster(2)) as cluster, daemon_starter(workdir, cluster.brokers) as start:
        cluster.call(lambda: cluster.cluster.add_topic("t", [1]))
        cluster.call(lambda: cluster.cluster.brokers[1].script(produce.KEY, Fault.delay(1.0)))
        d = start(make_config(cluster.brokers, batching=False), enable_idempotence=idempotence)
        wait_for(lambda: d.call(d.daemon.producer.cluster) is not None, what="the first metadata")
        if idempotence == "auto":
            wait_for(lambda: d.counter("ProducerIdAssigned") == 1, what="the producer id")
        metrics = d.metrics()
        connected = 1 if idempotence == "auto" else 0
        assert (metrics["bruce_connected_brokers"], metrics["bruce_in_flight_requests"]) == (connected, 0)
        with d.client() as client:
            client.send_any_partition("t", b"slow")
        wait_for(lambda: d.metrics()["bruce_in_flight_requests"] == 1, what="the request in flight")
        assert d.metrics()["bruce_connected_brokers"] == 1
        d.settle(1)
        metrics = d.metrics()
        assert (metrics["bruce_connected_brokers"], metrics["bruce_in_flight_requests"]) == (1, 0)
        a = d.stop()
        assert (a.received, a.delivered) == (1, 1)
    cluster.cluster.verify()
