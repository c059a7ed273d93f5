"""The producer's fault scenarios driven through the whole daemon, against the project's fake broker (Bruce's
integration checklist, docs/bruce-compatibility.md#test-checklist): every message is accounted for, and the status pages
and the discard log show what happened. Bruce's setup: no batching, one message per produce request."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakebroker import FakeCluster, Fault

from bruce.wire.protocol import produce

from .harness import ClusterThread, DaemonThread, counters_json, daemon_starter, make_config, wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture
def cluster() -> Iterator[ClusterThread]:
    with ClusterThread(FakeCluster(2)) as c:
        c.call(lambda: c.cluster.add_topic("t", [1]))  # one partition, led by broker 1
        yield c
    c.cluster.verify()


@pytest.fixture
def start(cluster: ClusterThread, workdir: Path) -> Iterator[Callable[..., DaemonThread]]:
    """``start(**options)``: a daemon on the fake cluster that has its first metadata."""
    config = make_config(cluster.brokers, batching=False, produce_request_data_limit=0)
    with daemon_starter(workdir, cluster.brokers) as start_daemon:

        def make(**overrides: Any) -> DaemonThread:
            settings = {"discard_log_path": str(workdir / "discard.log"), "max_failed_delivery_attempts": 2}
            d = start_daemon(config, **{**settings, **overrides})
            wait_for(lambda: d.call(d.daemon.producer.cluster) is not None, what="the first metadata")
            return d

        yield make


@pytest.fixture
def daemon(start: Callable[..., DaemonThread]) -> DaemonThread:
    return start()


def _script(cluster: ClusterThread, *faults: Fault) -> None:
    cluster.call(lambda: cluster.cluster.brokers[1].script(produce.KEY, *faults))


def _send(d: DaemonThread, *values: bytes) -> None:
    with d.client() as client:
        for value in values:
            client.send_any_partition("t", value)


def _log_events(d: DaemonThread, workdir: Path) -> list[tuple[str, str]]:
    d.stop()
    lines = (workdir / "discard.log").read_text().splitlines()
    return [(line.split(" event: ")[1].split(" ")[0], line.split(" info: ")[1].split(" ")[0]) for line in lines]


def test_successful_delivery(cluster: ClusterThread, daemon: DaemonThread) -> None:
    _send(daemon, *(b"body%d" % i for i in range(4)))
    a = daemon.settle(4)
    assert (a.delivered, a.discarded) == (4, 0)
    assert sorted(cluster.call(lambda: cluster.cluster.values("t"))) == [b"body0", b"body1", b"body2", b"body3"]
    assert len(cluster.call(lambda: cluster.cluster.requests("Produce"))) == 4  # one message per request


def test_disconnect_before_ack_is_one_possible_duplicate_at_least_once(
    cluster: ClusterThread, start: Callable[..., DaemonThread], workdir: Path
) -> None:
    """Bruce's at-least-once delivery (idempotence off): the broker stores the message, then drops the connection
    before answering: pause, new metadata, the message goes again. Exactly one possible duplicate, no discard."""
    daemon = start(enable_idempotence="false")
    _script(cluster, Fault.disconnect(store=True))
    _send(daemon, b"dup-me")
    a = daemon.settle(1)
    assert (a.delivered, a.discarded) == (1, 0)
    assert cluster.call(lambda: cluster.cluster.values("t")) == [b"dup-me", b"dup-me"]  # stored twice
    report = json.loads(daemon.get("/discards/json")[2])["unfinished_report"]
    assert [(t["topic"], t["count"]) for t in report["possible_duplicate_topic"]] == [("t", 1)]
    assert report["discard_topic"] == []
    assert _log_events(daemon, workdir) == [("DUP", "NONE")]


def test_disconnect_before_ack_is_stored_once_by_the_idempotent_producer(
    cluster: ClusterThread, daemon: DaemonThread, workdir: Path
) -> None:
    """Idempotence on (the default: the fake broker takes it): the resend carries the same sequence, the broker
    recognises it, the message is stored once and no possible duplicate is reported; /counters and /metrics show the
    producer id."""
    _script(cluster, Fault.disconnect(store=True))
    _send(daemon, b"once")
    a = daemon.settle(1)
    assert (a.delivered, a.discarded) == (1, 0)
    assert cluster.call(lambda: cluster.cluster.values("t")) == [b"once"]
    assert daemon.counter("PossibleDuplicateMsg") == 0 and daemon.counter("ProducerIdAssigned") == 1
    assert counters_json(daemon.daemon.status_url)["ProducerIdAssigned"] == 1
    assert daemon.metrics()["bruce_producer_id_assigned_total"] == 1
    report = json.loads(daemon.get("/discards/json")[2])["unfinished_report"]
    assert report["possible_duplicate_topic"] == [] and report["discard_topic"] == []
    assert _log_events(daemon, workdir) == []


def test_error_ack_6_pauses_and_redelivers(cluster: ClusterThread, daemon: DaemonThread, workdir: Path) -> None:
    _script(cluster, Fault.error(6))
    _send(daemon, b"after-pause")
    a = daemon.settle(1)
    assert (a.delivered, a.discarded) == (1, 0)
    assert cluster.call(lambda: cluster.cluster.values("t")) == [b"after-pause"]  # once: the error stored nothing
    assert daemon.counter("GotPauseAck") == 1 and daemon.counter("PossibleDuplicateMsg") == 0
    outcomes = [s.outcome for s in cluster.call(lambda: cluster.cluster.requests("Produce"))]
    assert outcomes == ["error 6", "ok"]
    assert _log_events(daemon, workdir) == []


def test_non_retriable_error_ack_is_discarded(cluster: ClusterThread, daemon: DaemonThread, workdir: Path) -> None:
    _script(cluster, Fault.error(10))  # MESSAGE_TOO_LARGE: discard
    _send(daemon, b"too-large-for-the-broker", b"fine")
    a = daemon.settle(2)
    assert (a.delivered, a.discarded, daemon.discards("KAFKA_ERROR_ACK")) == (1, 1, 1)
    report = json.loads(daemon.get("/discards/json")[2])["unfinished_report"]
    assert [(t["topic"], t["count"]) for t in report["discard_topic"]] == [("t", 1)]
    assert _log_events(daemon, workdir) == [("DISC", "KAFKA_ERROR_ACK")]


def test_repeated_errors_reach_the_delivery_attempt_limit(
    cluster: ClusterThread, daemon: DaemonThread, workdir: Path
) -> None:
    """max_failed_delivery_attempts 2: the third error ACK discards the message."""
    _script(cluster, Fault.error(2), Fault.error(2), Fault.error(2))  # CORRUPT_MESSAGE: resend at once
    _send(daemon, b"unlucky")
    a = daemon.settle(1)
    assert (a.delivered, a.discarded, daemon.discards("DELIVERY_ATTEMPT_LIMIT")) == (0, 1, 1)
    assert cluster.call(lambda: cluster.cluster.values("t")) == []
    assert _log_events(daemon, workdir) == [("DISC", "DELIVERY_ATTEMPT_LIMIT")]


@pytest.mark.parametrize("force", [False, True], ids=["deadline", "second-request"])
def test_unanswered_request_at_shutdown_counts_server_shutdown(
    force: bool, cluster: ClusterThread, start: Callable[..., DaemonThread], workdir: Path
) -> None:
    """Broker 1 does not answer (a delay longer than the test): the shutdown waits for the ACK until
    shutdown_max_delay (1.5 s) — or until a second stop request — then counts the message as SERVER_SHUTDOWN."""
    daemon = start(shutdown_max_delay=1500)
    _script(cluster, Fault.delay(20))
    _send(daemon, b"never-acked")
    wait_for(lambda: daemon.counter("MsgSent") == 1, what="the produce request")
    begun = time.monotonic()
    daemon.loop.call_soon_threadsafe(daemon.daemon.request_shutdown)
    time.sleep(0.5)
    assert daemon.running  # waiting for the acknowledgement
    a = daemon.stop(force=force)
    waited = time.monotonic() - begun
    assert (a.received, a.delivered, a.discarded, a.in_flight) == (1, 0, 1, 0)
    assert waited < 1.4 if force else waited >= 1.5
    assert _log_events(daemon, workdir) == [("DISC", "SERVER_SHUTDOWN")]
