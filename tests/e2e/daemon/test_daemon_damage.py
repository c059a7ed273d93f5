"""Damage to what the daemon reads at start, against tansu with the real ``bruce`` command (docs/spool.md, "What
damage costs"): the daemon delivers numbered messages with its spool and batch journal, is killed with SIGKILL,
something is damaged, and the restart delivers the rest. confluent-kafka (CRCs on) reads every message back by number:
each message is read back, or counted as lost (``SpoolCorrupt``) — exactly; each one read back twice was reported as a
possible duplicate (``SpoolReplayedPossibleDuplicate``).

The done files are removed after the kill, as a kill before their first save leaves the directory: every message
still in the spool is then replayed and only the batch journal can say which were delivered."""

from __future__ import annotations

import resource
import signal
import struct
import time
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
TOTAL = 4000


def _command(
    tansu: EmbeddedBroker | str, sock: Path, spool: Path, *, segment_bytes: int = 65536, batch_bytes: int = 2048
) -> list[str]:
    """Small batches (20 ms, ``batch_bytes`` of data per request): many journal records, many segments."""
    config = spool.parent / "bruce.toml"
    address = tansu if isinstance(tansu, str) else tansu.address
    brokers = (Broker("127.0.0.1", int(address.rpartition(":")[2])),)
    config.write_text(to_toml(make_config(brokers, nbytes=batch_bytes, produce_request_data_limit=batch_bytes)))
    return [
        *("--config_path", str(config), "--receive_socket_name", str(sock), "--status_port", "0"),
        *("--spool_dir", str(spool), "--spool_segment_bytes", str(segment_bytes)),
    ]


def _deliver(url: str, sock: Path, topic: str, numbers: range, *, paced: bool = False) -> None:
    """Send ``numbers`` (``paced``: 10 at a time, 2 ms apart — many small batches) and wait until delivered."""
    with BruceClient(sock) as client:
        for n in numbers:
            client.send_any_partition(topic, b"%07d" % n)
            if paced and n % 10 == 9:
                time.sleep(0.002)
    wait_for(lambda: counters_json(url).get("MsgDelivered", 0) >= numbers.stop, what="every message delivered")


def _kill(bruce: BruceProcess) -> None:
    bruce.process.send_signal(signal.SIGKILL)
    assert bruce.wait() == -signal.SIGKILL


def _deliver_then_kill(bruce: BruceProcess, sock: Path, topic: str) -> None:
    _deliver(bruce.wait_serving(), sock, topic, range(TOTAL))
    _kill(bruce)


def _file_size_limit(limit: int) -> Callable[[], None]:
    """For the daemon's process: writes that would take any file past ``limit`` bytes fail (EFBIG)."""
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def _forget_done_files(spool: Path) -> None:
    for done in spool.glob("*.done"):
        done.unlink()


def _sent_records(path: Path) -> list[tuple[int, int]]:
    """(offset, first spool sequence) of each SENT record of a journal file (either format's header)."""
    data = path.read_bytes()
    at = 8 if struct.unpack_from(">H", data, 4)[0] == 1 else 32
    records = []
    while at + 8 <= len(data):
        (length,) = struct.unpack_from(">I", data, at)
        body = data[at + 8 : at + 8 + length]
        if body[:1] == b"S":
            topic_size = struct.unpack_from(">H", body, 39)[0]
            records.append((at, struct.unpack_from(">Q", body, 45 + topic_size)[0]))
        at += 8 + length
    return records


def _restart_and_read(
    bruce_process: Callable[..., BruceProcess], command: list[str], address: str, topic: str
) -> tuple[Counter[int], dict[str, int], str]:
    """Restart on the same spool, read every message back, stop; the copies of each number, the counters, the log."""
    again = bruce_process(command)
    url = again.wait_serving()
    wait_for(lambda: "spool replay done" in again.log, what=f"the replay; the log:\n{again.log}")
    wait_for(lambda: _settled(counters_json(url)), what="every replayed message delivered or discarded")
    counters = counters_json(url)
    reads = consume_topic(address, topic, PARTITIONS, TOTAL - counters.get("SpoolCorrupt", 0))
    again.signal(signal.SIGTERM)
    assert again.wait() == 0
    return Counter(int(r.value) for r in reads if r.value is not None), counters, again.log


def _settled(c: dict[str, int]) -> bool:
    return c.get("MsgReceived", 0) == c.get("MsgDelivered", 0) + c.get("MsgDiscarded", 0)


def _check(copies: Counter[int], counters: dict[str, int]) -> None:
    lost = [n for n in range(TOTAL) if copies[n] == 0]
    twice = sum(c - 1 for c in copies.values() if c > 1)
    shown = {k: v for k, v in counters.items() if k.startswith(("Spool", "Journal", "Msg"))}
    assert len(lost) == counters.get("SpoolCorrupt", 0), f"{len(lost)} lost, first {lost[:5]}; {shown}"
    reported = counters.get("SpoolReplayedPossibleDuplicate", 0)
    assert twice <= reported, f"{twice} delivered twice, {reported} reported as possible duplicates; {shown}"


def test_a_journal_damaged_in_the_middle_reports_every_duplicate(
    bruce_process: Callable[..., BruceProcess], tansu: EmbeddedBroker, workdir: Path, new_topic: Callable[..., str]
) -> None:
    """A flipped bit in the length of a SENT record in the middle of the newest journal file: the reader does not
    take the rest for a torn tail; what it cannot settle is replayed and reported."""
    topic = new_topic(partitions=PARTITIONS)
    sock, spool = workdir / "j.sock", workdir / "spool"
    command = _command(tansu, sock, spool, segment_bytes=16 << 20)  # one segment: it holds every batch's messages
    _deliver_then_kill(bruce_process(command), sock, topic)
    _forget_done_files(spool)
    newest = sorted(spool.glob("*.batches"))[-1]
    held = min(int(p.name[:20]) for p in spool.glob("*.seg"))
    sent = [at for at, first in _sent_records(newest) if first >= held]  # batches whose messages the spool holds
    assert len(sent) >= 2, "the spool was meant to hold several batches' messages"
    data = bytearray(newest.read_bytes())
    data[sent[len(sent) // 2]] ^= 0x80  # the record's length now runs past the end of the file
    newest.write_bytes(bytes(data))
    copies, counters, log = _restart_and_read(bruce_process, command, tansu.address, topic)
    _check(copies, counters)
    assert str(newest) in log


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGKILL"])
def test_a_journal_that_becomes_unwritable_mid_run_is_recorded_before_it_matters(
    bruce_process: Callable[..., BruceProcess],
    tansu: EmbeddedBroker,
    workdir: Path,
    new_topic: Callable[..., str],
    stop: str,
) -> None:
    """The daemon may not write a file past 20 KiB: its journal reaches that mid-run, its segments (16 KiB) never
    do. The daemon goes on unjournaled and says so once, naming the file; a stop shows no traceback; after a SIGKILL
    the restart knows the journal went off, and reports what it cannot settle."""
    topic = new_topic(partitions=PARTITIONS)
    sock, spool = workdir / "u.sock", workdir / "spool"
    command = _command(tansu, sock, spool, segment_bytes=16384, batch_bytes=128)
    bruce = bruce_process(command, preexec_fn=_file_size_limit(20 * 1024))
    _deliver(bruce.wait_serving(), sock, topic, range(TOTAL), paced=True)
    if stop == "SIGTERM":
        bruce.signal(signal.SIGTERM)
        assert bruce.wait() == 0
        assert "Traceback" not in bruce.log
    else:
        _kill(bruce)
        _forget_done_files(spool)
        copies, counters, _ = _restart_and_read(bruce_process, command, tansu.address, topic)
        _check(copies, counters)
    errors = [line for line in bruce.log.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and ".batches" in errors[0] and "unjournaled" in errors[0], errors


def test_a_journal_deleted_while_running_is_noticed_and_what_follows_stays_exact(
    bruce_process: Callable[..., BruceProcess], tansu: EmbeddedBroker, workdir: Path, new_topic: Callable[..., str]
) -> None:
    """The journal files are deleted while the daemon delivers: it says so in one line within about a second, journals
    again from there, and the restart after a SIGKILL settles what was sent after the deletion from the new file."""
    topic = new_topic(partitions=PARTITIONS)
    sock, spool = workdir / "d.sock", workdir / "spool"
    command = _command(tansu, sock, spool, segment_bytes=16 << 20)
    bruce = bruce_process(command)
    url = bruce.wait_serving()
    _deliver(url, sock, topic, range(TOTAL // 2))
    for path in spool.glob("*.batches"):
        path.unlink()
    wait_for(lambda: "deleted or replaced" in bruce.log, 5, "the deletion to be noticed")
    time.sleep(0.1)
    _deliver(url, sock, topic, range(TOTAL // 2, TOTAL))
    _kill(bruce)
    _forget_done_files(spool)
    copies, counters, _ = _restart_and_read(bruce_process, command, tansu.address, topic)
    _check(copies, counters)
    assert counters.get("SpoolSettled", 0) > 0, "what was sent after the deletion is settled by the new file"


@pytest.fixture(scope="module")
def proxied_tansu() -> Iterator[tuple[EmbeddedBroker, ThreadedProxy]]:
    with tansu_behind_proxy() as pair:
        yield pair


def test_an_active_segment_cut_after_kill_9_counts_every_lost_message_exactly(
    bruce_process: Callable[..., BruceProcess],
    proxied_tansu: tuple[EmbeddedBroker, ThreadedProxy],
    workdir: Path,
) -> None:
    """Half the messages are delivered; the proxy then swallows every request, so the other half stays in the spool
    (some sent, none acknowledged); SIGKILL, and the newest segment is cut to half its size. The restart counts each
    message lost in the cut as SPOOL_CORRUPT — exactly those that are not read back — and says it was cut."""
    broker, proxy = proxied_tansu
    topic = "cut-active-segment"
    broker.create_topic(topic, PARTITIONS)
    sock, spool = workdir / "s.sock", workdir / "spool"
    command = _command(proxy.address, sock, spool, segment_bytes=16 << 20)
    bruce = bruce_process(command)
    url = bruce.wait_serving()
    _deliver(url, sock, topic, range(TOTAL // 2))
    proxy.set_drop_requests(True)
    try:
        with BruceClient(sock) as client:
            for n in range(TOTAL // 2, TOTAL):
                client.send_any_partition(topic, b"%07d" % n)
        wait_for(lambda: counters_json(url).get("SpoolAppended", 0) >= TOTAL, what="every message spooled")
        _kill(bruce)
    finally:
        proxy.set_drop_requests(False)
    newest = sorted(spool.glob("*.seg"))[-1]
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])
    copies, counters, log = _restart_and_read(bruce_process, command, proxy.address, topic)
    _check(copies, counters)
    assert counters["SpoolCorrupt"] > 1, counters
    assert f"{newest}" in log and "cut" in log and "torn" not in log
    lost = sum(1 for n in range(TOTAL) if copies[n] == 0)
    print(f"\n{lost} lost in the cut, {counters['SpoolCorrupt']} counted as SPOOL_CORRUPT")
