"""The durable spool in the daemon (``--spool_dir``, docs/spool.md), against tansu: a ``kill -9`` loses nothing the
daemon had read, a clean stop leaves an empty spool, one daemon per spool, a damaged record is one SPOOL_CORRUPT
discard, a disk error falls back to memory only. Delivery is checked by consuming with confluent-kafka (CRCs on)."""

from __future__ import annotations

import errno
import logging
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from dashboard_check import parse_dashboard

from bruce.client import BruceClient
from bruce.proxy.config import NOTICE, Broker
from bruce.proxy.config.ports import free_port
from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.proxy.spool import Spool, SpoolConfig, SpoolMessage

from .harness import BruceProcess, DaemonThread, consume_topic, counters_json, http_get, make_config, wait_for

pytestmark = pytest.mark.e2e


def _segments(spool: Path) -> list[Path]:
    return sorted(spool.glob("*.seg*"))


def _command(tansu: EmbeddedBroker, sock: Path, spool: Path) -> list[str]:
    return [
        "--receive_socket_name",
        str(sock),
        "--status_port",
        "0",
        "--initial_brokers",
        tansu.address,
        "--spool_dir",
        str(spool),
    ]


def test_kill_9_then_restart_delivers_every_message_the_daemon_had_read(
    bruce_process: Callable[..., BruceProcess], tansu: EmbeddedBroker, workdir: Path, new_topic: Callable[..., str]
) -> None:
    """A first half is sent and delivered (its segments, small here, are deleted as they become done); the second
    half is sent and, once the daemon has read it all (``MsgReceived``: what the kernel still held at a kill is not
    the daemon's), the daemon is killed with SIGKILL before the batches ship. The restart replays the spool: every
    message is read back from Kafka at least once; only what was left in the spool came back (not the deleted
    segments), and the duplicates are at most the replayed messages."""
    topic = new_topic(partitions=2)
    sock, spool = workdir / "k.sock", workdir / "spool"
    command = [*_command(tansu, sock, spool), "--spool_segment_bytes", "16384"]
    bruce = bruce_process(command)
    url = bruce.wait_serving()
    values = [b"kill-%05d" % i for i in range(3000)]
    with BruceClient(sock) as client:
        for value in values[:1500]:
            client.send_any_partition(topic, value)
        wait_for(lambda: counters_json(url).get("MsgDelivered") == 1500, what="the first half to be delivered")
        for value in values[1500:]:
            client.send_any_partition(topic, value)
    wait_for(lambda: counters_json(url).get("MsgReceived") == len(values), what="the daemon to read every message")
    bruce.process.send_signal(signal.SIGKILL)
    assert bruce.wait() == -signal.SIGKILL
    assert _segments(spool), "the killed daemon left no segment"

    again = bruce_process(command)
    url = again.wait_serving()
    reads = consume_topic(tansu.address, topic, 2, len(values))
    got = [r.value for r in reads]
    assert set(got) == set(values)
    counters = counters_json(url)
    replayed = counters["SpoolReplayed"]
    assert 0 < replayed < len(values)
    duplicates = len(got) - len(set(got))
    assert duplicates <= replayed
    again.signal(signal.SIGTERM)
    assert again.wait() == 0
    assert _segments(spool) == []  # all delivered: the clean stop left nothing
    print(f"\n{len(values)} messages, {replayed} replayed after kill -9, {duplicates} duplicates read back")


def test_a_clean_stop_after_delivery_leaves_an_empty_spool(
    start_daemon: Callable[..., DaemonThread], tansu: EmbeddedBroker, workdir: Path, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=2)
    spool = workdir / "spool"
    d = start_daemon(spool_dir=str(spool), spool_segment_bytes=8192)  # small segments: several roll and go
    values = [b"clean-%04d" % i for i in range(500)]
    with d.client() as client:
        for value in values:
            client.send_any_partition(topic, value)
    a = d.settle(len(values))
    assert a.delivered == len(values)
    stats = d.call(lambda: d.daemon.spool.stats())  # type: ignore[union-attr]
    assert stats["SpoolAppended"] == len(values) and stats["SpoolPending"] == 0
    metrics = d.metrics()
    assert metrics["bruce_spool_appended_total"] == len(values)
    assert metrics["bruce_spool_pending"] == 0 and metrics["bruce_spool_degraded"] == 0
    assert metrics["bruce_spool_bytes"] >= 0 and "bruce_spool_oldest_ms" in metrics
    assert counters_json(d.daemon.status_url)["SpoolAppended"] == len(values)
    d.stop()
    assert _segments(spool) == []
    assert sorted(r.value for r in consume_topic(tansu.address, topic, 2, len(values))) == values


def test_a_second_daemon_on_the_same_spool_refuses_to_start(
    start_daemon: Callable[..., DaemonThread],
    bruce_process: Callable[..., BruceProcess],
    tansu: EmbeddedBroker,
    workdir: Path,
) -> None:
    spool = workdir / "spool"
    start_daemon(spool_dir=str(spool))
    second = bruce_process(_command(tansu, workdir / "second.sock", spool))
    assert second.wait() == 1
    log = second.log
    assert f"spool directory {spool} is in use by process" in log, log
    assert "one bruce per spool directory" in log
    assert "Traceback" not in log


def test_deleting_the_lock_file_lets_no_second_daemon_in(
    bruce_process: Callable[..., BruceProcess], tansu: EmbeddedBroker, workdir: Path
) -> None:
    """The lock is held on the directory, not on the file: ``rm DIR/lock`` while daemon 1 runs changes nothing."""
    spool = workdir / "spool"
    first = bruce_process(_command(tansu, workdir / "first.sock", spool))
    first.wait_serving()
    (spool / "lock").unlink()
    second = bruce_process(_command(tansu, workdir / "second.sock", spool))
    assert second.wait() == 1
    assert f"spool directory {spool} is in use by another process" in second.log, second.log
    assert first.process.poll() is None
    first.signal(signal.SIGTERM)
    assert first.wait() == 0
    third = bruce_process(_command(tansu, workdir / "third.sock", spool))  # released at the first one's exit
    third.wait_serving()
    third.signal(signal.SIGTERM)
    assert third.wait() == 0


def test_a_damaged_record_is_one_spool_corrupt_discard_and_the_rest_is_delivered(
    start_daemon: Callable[..., DaemonThread],
    tansu: EmbeddedBroker,
    workdir: Path,
    new_topic: Callable[..., str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A spool left by an earlier run (20 undelivered messages) with one byte of the 8th record's value flipped."""
    topic = new_topic(partitions=1)
    spool = workdir / "spool"
    values = [b"left-%03d" % i for i in range(20)]
    with Spool.open(SpoolConfig(spool)) as left:
        left.append([SpoolMessage(topic.encode(), None, None, v, 1_700_000_000_000) for v in values])
    (segment,) = _segments(spool)
    data = bytearray(segment.read_bytes())
    at = data.index(values[7])
    data[at] ^= 0x01
    segment.write_bytes(bytes(data))

    caplog.set_level(NOTICE, logger="bruce.spool")
    d = start_daemon(spool_dir=str(spool))
    a = d.settle(20)
    assert (a.received, a.delivered, a.discarded) == (20, 19, 1), a
    assert d.discards("SPOOL_CORRUPT") == 1
    assert segment.name in caplog.text
    (notice,) = [r.getMessage() for r in caplog.records if r.levelno == NOTICE and "spool replay" in r.getMessage()]
    assert "spool replay done: 19 messages from 1 segments" in notice and "1 lost to damage" in notice, notice
    status, _, html = http_get(d.daemon.status_url + "/")  # the front page's spool panel
    shown = {v.src: v.text for v in parse_dashboard(html).values}
    assert status == 200 and "replayed at start:" in html
    assert (shown["counters:SpoolReplayed"], shown["counters:SpoolCorrupt"]) == ("19", "1"), shown
    # the earlier run left no batch journal: every replayed record is a possible duplicate
    assert (shown["counters:SpoolSettled"], shown["counters:SpoolReplayedPossibleDuplicate"]) == ("0", "19"), shown
    assert "gauge:SpoolBytes" in shown and "derived:spool_oldest_s" in shown
    reads = consume_topic(tansu.address, topic, 1, 19)
    assert sorted(r.value for r in reads) == values[:7] + values[8:]
    d.stop()
    assert _segments(spool) == []


def test_a_segment_deleted_by_hand_is_counted_spool_corrupt_and_the_rest_is_delivered(
    start_daemon: Callable[..., DaemonThread],
    tansu: EmbeddedBroker,
    workdir: Path,
    new_topic: Callable[..., str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A spool left by an earlier run (60 undelivered messages in several segments); one sealed segment is removed
    by hand before the start: its messages are logged with their sequences and discarded as SPOOL_CORRUPT."""
    topic = new_topic(partitions=1)
    spool = workdir / "spool"
    values = [b"seg-%03d" % i for i in range(60)]
    with Spool.open(SpoolConfig(spool, segment_bytes=2048)) as left:
        left.append([SpoolMessage(topic.encode(), None, None, v, 1_700_000_000_000) for v in values])
    segments = sorted(spool.glob("*.seg"))
    assert len(segments) >= 3
    first, end = int(segments[1].name[:20]), int(segments[2].name[:20])
    segments[1].unlink()
    caplog.set_level(logging.ERROR, logger="bruce.spool")
    d = start_daemon(spool_dir=str(spool))
    a = d.settle(60)
    assert (a.received, a.delivered, a.discarded) == (60, 60 - (end - first), end - first), a
    assert d.discards("SPOOL_CORRUPT") == end - first
    assert f"the segment is missing (sequences {first}-{end - 1})" in caplog.text
    reads = consume_topic(tansu.address, topic, 1, 60 - (end - first))
    assert sorted(r.value for r in reads) == values[:first] + values[end:]
    d.stop()
    assert _segments(spool) == []


def test_a_disk_error_falls_back_to_memory_only_and_loses_nothing(
    start_daemon: Callable[..., DaemonThread],
    tansu: EmbeddedBroker,
    workdir: Path,
    new_topic: Callable[..., str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic = new_topic(partitions=1)
    d = start_daemon(spool_dir=str(workdir / "spool"))
    spool = d.daemon.spool
    assert spool is not None

    def broken(fd: int, data: bytes) -> int:
        raise OSError(errno.EIO, "Input/output error")

    caplog.set_level(logging.ERROR, logger="bruce.spool")
    d.call(lambda: setattr(spool, "_write", broken))
    values = [b"eio-%03d" % i for i in range(200)]
    with d.client() as client:
        for value in values:
            client.send_any_partition(topic, value)
    a = d.settle(len(values))
    assert a.delivered == len(values)
    errors = [r for r in caplog.records if r.name == "bruce.spool" and r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "Input/output error" in errors[0].getMessage(), errors
    assert d.metrics()["bruce_spool_degraded"] == 1
    status, _, page = http_get(d.daemon.status_url + "/")
    assert status == 200 and "spool disk error" in page
    assert sorted(r.value for r in consume_topic(tansu.address, topic, 1, len(values))) == values


def test_messages_left_at_shutdown_stay_and_the_next_start_delivers_them_within_its_budget(
    start_daemon: Callable[..., DaemonThread],
    tansu: EmbeddedBroker,
    workdir: Path,
    new_topic: Callable[..., str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """No broker answers the first daemon: its messages are left at the stop and stay in the spool — kept, not
    discarded SERVER_SHUTDOWN, and the log says so. The next daemon, with a budget of 1 KiB (two messages at a
    time), replays them as the budget frees up."""
    topic = new_topic(partitions=1)
    spool = workdir / "spool"
    nobody = (Broker("127.0.0.1", free_port()),)
    first = start_daemon(make_config(nobody), initial_brokers=nobody, shutdown_max_delay=300, spool_dir=str(spool))
    values = [b"later-%02d" % i for i in range(30)]
    with first.client() as client:
        for value in values:
            client.send_any_partition(topic, value)
    wait_for(lambda: first.accounting().received == len(values), what="the first daemon to read every message")
    caplog.set_level(NOTICE, logger="bruce.proxy.daemon.daemon")
    a = first.stop()
    assert (a.discarded, a.kept) == (0, len(values)) and first.discards("SERVER_SHUTDOWN") == 0, a
    assert a.balanced
    assert f"{len(values)} undelivered messages stay in the spool: the next start delivers them" in caplog.text
    assert f"{len(values)} kept in the spool (not discarded: the next start delivers them)" in caplog.text
    assert _segments(spool)

    second = start_daemon(spool_dir=str(spool), msg_buffer_max=1)
    a = second.settle(len(values))
    assert (a.received, a.delivered, a.discarded) == (len(values), len(values), 0), a  # replay waited for room
    assert second.call(lambda: second.daemon.spool.replayed) == len(values)  # type: ignore[union-attr]
    duplicates = second.call(lambda: second.daemon.tracker.report().unfinished.possible_duplicate_topic)
    assert not duplicates  # never sent (the batch journal says so): no possible duplicates (docs/spool.md)
    assert sorted(r.value for r in consume_topic(tansu.address, topic, 1, len(values))) == values
    second.stop()
    assert _segments(spool) == []


def test_beyond_the_budget_messages_wait_on_disk_only_and_a_stop_leaves_them_for_the_next_start(
    start_daemon: Callable[..., DaemonThread], tansu: EmbeddedBroker, workdir: Path, new_topic: Callable[..., str]
) -> None:
    """No broker answers the first daemon and its budget holds two messages: the rest is held on disk only (no
    NO_MEM), in flight for the accounting and on the status pages; the stop leaves them in the spool (kept, not
    discarded). The next daemon, with a broker, delivers every one."""
    topic = new_topic(partitions=1)
    spool = workdir / "spool"
    nobody = (Broker("127.0.0.1", free_port()),)
    first = start_daemon(
        make_config(nobody), initial_brokers=nobody, shutdown_max_delay=300, spool_dir=str(spool), msg_buffer_max=1
    )
    values = [b"disk-%02d" % i for i in range(40)]
    with first.client() as client:
        for value in values:
            client.send_any_partition(topic, value)
    wait_for(lambda: first.accounting().received == len(values), what="the first daemon to read every message")
    a = first.accounting()
    held_on_disk = first.metrics()["bruce_spool_held_on_disk"]
    in_memory = first.call(lambda: first.daemon.budget.held)
    assert a.discarded == 0 and a.in_flight == len(values) and first.discards("NO_MEM") == 0
    assert held_on_disk == len(values) - in_memory and held_on_disk >= 30
    assert first.metrics()["bruce_msg_in_flight"] == len(values)
    status, _, page = http_get(first.daemon.status_url + "/")
    assert status == 200 and "messages held on disk only" in page
    a = first.stop()
    assert (a.discarded, a.kept) == (0, len(values)) and first.discards("SERVER_SHUTDOWN") == 0, a

    second = start_daemon(spool_dir=str(spool), msg_buffer_max=1)
    a = second.settle(len(values))
    assert (a.received, a.delivered, a.discarded) == (len(values), len(values), 0), a
    assert sorted(r.value for r in consume_topic(tansu.address, topic, 1, len(values))) == values
    second.stop()
    assert _segments(spool) == []


def test_a_stop_delivers_what_is_held_on_disk_only_while_the_broker_takes_it(
    start_daemon: Callable[..., DaemonThread], tansu: EmbeddedBroker, workdir: Path, new_topic: Callable[..., str]
) -> None:
    """A budget of two messages and a burst of 300: most wait on disk only; a stop right after the last one is read
    still delivers every one (read back from the disk until the deadline) and leaves an empty spool."""
    topic = new_topic(partitions=1)
    spool = workdir / "spool"
    d = start_daemon(spool_dir=str(spool), msg_buffer_max=1)
    values = [b"stop-%03d" % i for i in range(300)]
    with d.client() as client:
        for value in values:
            client.send_any_partition(topic, value)
    wait_for(lambda: d.accounting().received == len(values), what="the daemon to read every message")
    assert d.call(lambda: d.daemon.spool.cursor.held_total) > 0  # type: ignore[union-attr]
    held_at_stop = d.call(lambda: d.daemon.spool.cursor.held)  # type: ignore[union-attr]
    a = d.stop()
    assert (a.received, a.delivered, a.discarded) == (len(values), len(values), 0), a
    assert sorted(r.value for r in consume_topic(tansu.address, topic, 1, len(values))) == values
    assert _segments(spool) == []
    print(f"\n{held_at_stop} of {len(values)} messages were held on disk only when the stop was requested")
