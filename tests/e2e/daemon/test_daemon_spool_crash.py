"""A ``kill -9`` of a daemon whose spool had delivered everything replays nothing (docs/spool.md, "Done files"): the
done state of the active segment is saved every second, so the restart skips what was read back from Kafka before
the kill. Delivery is checked by consuming with confluent-kafka (CRCs on), counted by message number."""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from bruce.client import BruceClient
from bruce.proxy.daemon.embedded import EmbeddedBroker

from .harness import BruceProcess, consume_topic, counters_json, wait_for

pytestmark = pytest.mark.e2e

DONE_SAVE_S = 1.0  # the spool's done_every_ms default: the documented bound on what a crash replays


def _command(tansu: EmbeddedBroker, sock: Path, spool: Path) -> list[str]:
    return ["--receive_socket_name", str(sock), "--status_port", "0", "--initial_brokers", tansu.address]


@pytest.mark.parametrize("segment_bytes", [16 * 1024 * 1024, 16384], ids=["one-segment", "many-segments"])
def test_kill_9_after_delivery_replays_nothing(
    bruce_process: Callable[..., BruceProcess],
    tansu: EmbeddedBroker,
    workdir: Path,
    new_topic: Callable[..., str],
    segment_bytes: int,
) -> None:
    topic = new_topic(partitions=1)
    sock, spool = workdir / "c.sock", workdir / "spool"
    command = [*_command(tansu, sock, spool), "--spool_dir", str(spool), "--spool_segment_bytes", str(segment_bytes)]
    bruce = bruce_process(command)
    bruce.wait_serving()
    n = 2000
    with BruceClient(sock) as client:
        for i in range(n):
            client.send_any_partition(topic, b"crash-%05d" % i)
    assert len(consume_topic(tansu.address, topic, 1, n)) == n  # delivered: read back by an independent consumer
    time.sleep(DONE_SAVE_S + 1.0)  # one save period, and the timer's tick
    assert list(spool.glob("*.seg")), "the active segment stays until the stop"
    assert max(p.stat().st_size for p in spool.glob("*.seg")) <= segment_bytes  # the bound, bursts or not
    bruce.process.send_signal(signal.SIGKILL)
    assert bruce.wait() == -signal.SIGKILL

    again = bruce_process(command)
    url = again.wait_serving()
    counters = counters_json(url)
    assert counters["SpoolReplayed"] == 0, counters
    skipped = counters["SpoolSkippedDone"]  # the active segment's records (sealed ones went once all done)
    assert skipped == n if segment_bytes > 1_000_000 else 0 < skipped < n
    with BruceClient(sock) as client:
        client.send_any_partition(topic, b"after-restart")
    wait_for(lambda: counters_json(url).get("MsgDelivered") == 1, what="the message after the restart")
    reads = consume_topic(tansu.address, topic, 1, n + 1)
    copies = Counter(r.value for r in reads)
    assert len(reads) == n + 1 and set(copies.values()) == {1}, [v for v, k in copies.items() if k > 1][:5]
    again.signal(signal.SIGTERM)
    assert again.wait() == 0
    assert not list(spool.glob("*.seg"))
