"""A brand-new cluster (no topic yet, as every new Kafka cluster starts) is a cluster: the real ``bruce`` command given
``--initial_brokers`` of a fresh tansu delivers to topics it creates with ``--topic_autocreate`` and, without it,
discards each message as BAD_TOPIC at once (named, counted) instead of calling the broker unreachable. Read back with
confluent-kafka."""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bruce.client import BruceClient
from bruce.proxy.daemon.embedded import EmbeddedBroker

from .harness import BruceProcess, consume_topic, counters_json, http_get, wait_for

pytestmark = pytest.mark.e2e

STOPPED = re.compile(r"stopped: (\d+) received, (\d+) delivered, (\d+) discarded, (\d+) in flight")
TANSU_PARTITIONS = 4  # what tansu gives a topic it creates on first use


@pytest.fixture
def fresh_broker(workdir: Path) -> Iterator[EmbeddedBroker]:
    """A tansu of its own with no topic at all (not the session broker, which other tests fill)."""
    with EmbeddedBroker(log_path=workdir / "fresh-tansu.log") as broker:
        yield broker


def _run(
    bruce_process: Callable[..., BruceProcess], workdir: Path, broker: EmbeddedBroker, *extra: str
) -> BruceProcess:
    sock = str(workdir / "empty.sock")
    args = ["--receive_socket_name", sock, "--status_port", "0", "--initial_brokers", broker.address, *extra]
    return bruce_process([*args, "--shutdown_max_delay", "10000"])


def _stop(bruce: BruceProcess) -> tuple[int, ...]:
    bruce.signal(signal.SIGTERM)
    assert bruce.wait() == 0, bruce.log
    match = STOPPED.search(bruce.log)
    assert match, bruce.log
    return tuple(int(g) for g in match.groups())


def test_a_fresh_cluster_gets_its_topics_created(
    bruce_process: Callable[..., BruceProcess], workdir: Path, fresh_broker: EmbeddedBroker
) -> None:
    bruce = _run(bruce_process, workdir, fresh_broker, "--topic_autocreate")
    status = bruce.wait_serving()
    wait_for(lambda: counters_json(status).get("MetadataChanged", 0) >= 1, what="the first (empty) metadata")
    topics = ("first-a", "first-b")
    with BruceClient(str(workdir / "empty.sock")) as client:
        for i in range(10):
            client.send_any_partition(topics[i % 2], b"message %d" % i)
    wait_for(lambda: counters_json(status).get("MsgDelivered", 0) >= 10, timeout=60, what="10 deliveries")
    assert _stop(bruce) == (10, 10, 0, 0)
    assert "unreachable" not in bruce.log, bruce.log
    for n, topic in enumerate(topics):
        reads = consume_topic(fresh_broker.address, topic, TANSU_PARTITIONS, 5)
        assert sorted(r.value for r in reads) == [b"message %d" % i for i in range(n, 10, 2)]


def test_a_fresh_cluster_without_autocreate_discards_each_topic_as_bad_topic(
    bruce_process: Callable[..., BruceProcess], workdir: Path, fresh_broker: EmbeddedBroker
) -> None:
    bruce = _run(bruce_process, workdir, fresh_broker)
    status = bruce.wait_serving()
    wait_for(lambda: counters_json(status).get("MetadataChanged", 0) >= 1, what="the first (empty) metadata")
    with BruceClient(str(workdir / "empty.sock")) as client:
        for i in range(4):
            client.send_any_partition(f"nowhere-{i % 2}", b"lost %d" % i)
    wait_for(lambda: _report(status)["bad_topic_msg_count"] == 4, timeout=20, what="4 BAD_TOPIC discards")
    assert sorted(_report(status)["recent_bad_topic"]) == ["nowhere-0", "nowhere-1"]
    assert _stop(bruce) == (4, 0, 4, 0)
    assert "unreachable" not in bruce.log, bruce.log


def _report(status: str) -> dict:
    return json.loads(http_get(status + "/discards/json")[2])["unfinished_report"]
