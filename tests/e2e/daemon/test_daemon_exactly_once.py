"""Exactly once across daemon crashes (docs/spool.md, "Exactly once across crashes"), against tansu: the daemon runs
with the spool and the idempotent producer, numbered messages (keyed by partition key, and AnyPartition) go in, the
daemon is killed with SIGKILL at several points and restarted on the same spool; confluent-kafka (CRCs on) reads every
message back by number: none lost, none twice, each key's messages in order."""

from __future__ import annotations

import signal
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from netproxy import ThreadedProxy, tansu_behind_proxy

from bruce.client import BruceClient
from bruce.proxy.config import Broker
from bruce.proxy.config.toml_config import to_toml
from bruce.proxy.daemon.embedded import EmbeddedBroker

from .harness import BruceProcess, consume_topic, counters_json, make_config, wait_for

pytestmark = pytest.mark.e2e

PARTITIONS = 3
KEYS = 5


def _command(tansu: EmbeddedBroker | str, sock: Path, spool: Path) -> list[str]:
    """Small batches (20 ms, at most 2 KiB of data per request), so a kill finds many batches in flight."""
    config = spool.parent / "bruce.toml"
    address = tansu if isinstance(tansu, str) else tansu.address
    brokers = (Broker("127.0.0.1", int(address.rpartition(":")[2])),)
    config.write_text(to_toml(make_config(brokers, nbytes=2048, produce_request_data_limit=2048)))
    return [
        *("--config_path", str(config), "--receive_socket_name", str(sock), "--status_port", "0"),
        *("--spool_dir", str(spool), "--spool_segment_bytes", "65536"),
    ]


def _send(client: BruceClient, topic: str, numbers: range) -> None:
    """Even numbers go by partition key (number % KEYS, the record key says which), odd ones to any partition."""
    for n in numbers:
        value = b"%07d" % n
        if n % 2 == 0:
            client.send_partition_key(topic, n % KEYS, value, key=b"key-%d" % (n % KEYS))
        else:
            client.send_any_partition(topic, value)


def _reached(url: str, name: str, value: int) -> Callable[[], bool]:
    return lambda: counters_json(url).get(name, 0) >= value


def _read_from_socket(url: str, goal: int) -> Callable[[], bool]:
    """The daemon read ``goal`` datagrams from its socket (received less replayed; settled records are handed out by
    the spool but not received)."""

    def done() -> bool:
        c = counters_json(url)
        return c.get("MsgReceived", 0) - c.get("SpoolReplayed", 0) + c.get("SpoolSettled", 0) >= goal

    return done


def _check(address: str, topic: str, total: int) -> None:
    reads = consume_topic(address, topic, PARTITIONS, total, timeout=90)
    numbers = Counter(int(r.value) for r in reads if r.value is not None)
    lost = [n for n in range(total) if numbers[n] == 0]
    twice = {n: c for n, c in numbers.items() if c > 1}
    assert not lost, f"{len(lost)} lost, first {lost[:10]}"
    assert not twice, f"{len(twice)} duplicated, first {sorted(twice)[:10]}"
    by_key: dict[bytes, list[int]] = {}
    for r in sorted(reads, key=lambda r: (r.partition, r.offset)):
        if r.key is not None:
            by_key.setdefault(r.key, []).append(int(r.value or b"0"))
    for key, seen in by_key.items():
        assert seen == sorted(seen), f"{key!r} out of order"
    assert sum(len(v) for v in by_key.values()) == (total + 1) // 2


@pytest.fixture(scope="module")
def slow_tansu() -> Iterator[tuple[EmbeddedBroker, ThreadedProxy]]:
    with tansu_behind_proxy(delay_ms=40) as pair:  # acknowledgements take a while: the kill finds batches in flight
        yield pair


@pytest.mark.parametrize("cut", [False, True], ids=["in-flight", "cut-then-kill"])
def test_kill_9_right_after_sending_then_restart_delivers_each_message_once(
    bruce_process: Callable[..., BruceProcess],
    slow_tansu: tuple[EmbeddedBroker, ThreadedProxy],
    workdir: Path,
    cut: bool,
) -> None:
    """Killed as soon as the daemon has read everything and delivered some (the broker answers 80 ms late): some
    batches are acknowledged, some in flight, some not sent yet. ``cut``: before the kill the proxy stops passing the
    daemon's requests on, until it swallowed at least one Produce request's worth, then the connections are cut: those
    batches were sent (journaled) and never reached the broker, so the restart finds them missing and resends them
    with their producer id and sequences. (Cutting alone, the test depended on a request being inside the proxy's
    40 ms pipe at that instant: on a loaded machine none sometimes was.)"""
    broker, proxy = slow_tansu
    topic = f"exactly-once-kill-{cut}"
    broker.create_topic(topic, PARTITIONS)
    sock, spool = workdir / "e.sock", workdir / "spool"
    total = 6000
    bruce = bruce_process(_command(proxy.address, sock, spool))
    url = bruce.wait_serving()
    with BruceClient(sock) as client:
        _send(client, topic, range(total))
    wait_for(lambda: counters_json(url).get("MsgReceived") == total, what="the daemon to read every message")
    wait_for(_reached(url, "MsgDelivered", 1), what="a first delivery")
    delivered = counters_json(url).get("MsgDelivered", 0)
    if cut:
        proxy.set_drop_requests(True)
        wait_for(lambda: proxy.dropped_request_bytes >= 1024, what="a produce request swallowed by the proxy")
        proxy.cut()
        proxy.set_drop_requests(False)
    bruce.process.send_signal(signal.SIGKILL)
    assert bruce.wait() == -signal.SIGKILL
    assert 0 < delivered < total, "the kill was meant to come during the delivery"
    again = bruce_process(_command(proxy.address, sock, spool))
    url = again.wait_serving()
    _check(proxy.address, topic, total)
    counters = counters_json(url)
    again.signal(signal.SIGTERM)
    assert again.wait() == 0
    if cut:
        assert counters.get("JournalResent", 0) > 0, counters
    print(f"\nkilled at {delivered} delivered: {counters}")


def test_three_kills_during_delivery_deliver_each_message_exactly_once(
    bruce_process: Callable[..., BruceProcess], tansu: EmbeddedBroker, workdir: Path, new_topic: Callable[..., str]
) -> None:
    """A sender keeps sending while the daemon delivers; the daemon is killed three times mid-delivery (after more
    messages were delivered each time), restarted on the same spool each time; at the end every message is in the
    topic once. Messages the kernel still held in the socket at a kill are the sender's to resend: the sender sends
    in steps and only goes on once the daemon read a step from its socket."""
    topic = new_topic(partitions=PARTITIONS)
    sock, spool = workdir / "m.sock", workdir / "spool"
    step, steps = 2000, 4
    settled = replayed = 0
    for round_ in range(steps):
        bruce = bruce_process(_command(tansu, sock, spool))
        url = bruce.wait_serving()
        counters = counters_json(url)
        settled += counters.get("SpoolSettled", 0)
        replayed += counters.get("SpoolReplayed", 0)
        numbers = range(round_ * step, (round_ + 1) * step)
        with BruceClient(sock) as client:
            sender = threading.Thread(target=_send, args=(client, topic, numbers))
            sender.start()
            sender.join(60)
        wait_for(_read_from_socket(url, step), what="the daemon to read the step")
        if round_ == steps - 1:
            wait_for(_reached(url, "MsgDelivered", step // 2), what="some deliveries")
            bruce.signal(signal.SIGTERM)
            assert bruce.wait() == 0
            break
        wait_for(_reached(url, "MsgDelivered", 200 * (round_ + 1)), what="some deliveries")
        bruce.process.send_signal(signal.SIGKILL)
        assert bruce.wait() == -signal.SIGKILL
    _check(tansu.address, topic, step * steps)
    print(f"\n{step * steps} messages, 3 kills: {settled} settled, {replayed} replayed")


def test_without_idempotence_the_start_says_the_spool_is_at_least_once(
    bruce_process: Callable[..., BruceProcess], tansu: EmbeddedBroker, workdir: Path
) -> None:
    sock, spool = workdir / "o.sock", workdir / "spool"
    bruce = bruce_process([*_command(tansu, sock, spool), "--enable_idempotence", "false"])
    bruce.wait_serving()
    bruce.signal(signal.SIGTERM)
    assert bruce.wait() == 0
    assert "NOTICE bruce.spool: spool: at-least-once across crashes (enable_idempotence is off)" in bruce.log
    assert not list(spool.glob("*.batches"))  # nothing journaled
    again = bruce_process(_command(tansu, sock, spool))
    again.wait_serving()
    again.signal(signal.SIGTERM)
    assert again.wait() == 0
    assert "at-least-once across crashes" not in again.log
    assert list(spool.glob("*.batches"))  # the mark a clean stop leaves: this run journaled every send
