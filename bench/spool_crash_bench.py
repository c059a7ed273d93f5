"""Spool crash measurement: how many messages a ``kill -9`` makes the next start deliver twice (docs/spool.md).

Each scenario runs the ``bruce`` daemon (a real subprocess) with ``--spool_dir`` against a tansu broker started
here, sends numbered 100-byte messages through the UNIX socket, kills the daemon with SIGKILL, restarts it on the same
spool and reads the topic back from the start (confluent-kafka, CRC checks on) until every message the first daemon
had read is there. It prints, per scenario: messages sent, read by the first daemon, delivered before the kill (the
first daemon's ``MsgDelivered`` just before it), replayed at the restart (``SpoolReplayed``), the duplicates read back
(a message number seen twice) and the missing (a number the first daemon read but the topic lacks: must be 0).

Scenarios: ``idle +W s`` — 20,000 messages sent, every one delivered, then the kill W seconds later; ``load R/s`` —
messages sent at R per second and the kill 3 s in, while sending.

    .venv/bin/python bench/spool_crash_bench.py
    .venv/bin/python bench/spool_crash_bench.py --quick   # two scenarios: checks that it runs
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import proxy_bench

from bruce.client import BruceClient
from bruce.proxy.daemon.embedded import EmbeddedBroker

VALUE = b"v" * 90


def _start(broker: EmbeddedBroker, sock: Path, spool: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    bruce = Path(sys.executable).parent / "bruce"
    args = [str(bruce), "--receive_socket_name", str(sock), "--status_port", "0"]
    args += ["--initial_brokers", broker.address, "--spool_dir", str(spool)]
    with open(log, "wb") as out:
        daemon = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    return daemon, proxy_bench.wait_serving(daemon, log)


def _read_numbers(address: str, topic: str, expected: set[int]) -> Counter[int]:
    seen: Counter[int] = Counter()

    def enough(batch: list) -> bool:
        for m in batch:
            seen[int(m.value()[:10])] += 1
        return expected <= seen.keys()

    proxy_bench.read_topic(address, topic, enough)
    return seen


def scenario(broker: EmbeddedBroker, work: Path, name: str, *, count: int, rate: float, wait_s: float) -> None:
    """Send ``count`` messages at ``rate``/s (0: as fast as possible), kill -9 ``wait_s`` after the last one was
    delivered (``rate`` 0) or 3 s after the start (else), restart, read back."""
    topic = f"crash-{name.replace(' ', '-').replace('/', '').replace('+', '').replace('.', '')}-{time.time_ns()}"
    sock, spool = work / f"{topic}.sock", work / topic
    broker.create_topic(topic, proxy_bench.PARTITIONS)
    daemon, url = _start(broker, sock, spool, work / f"{topic}-1.log")
    start = time.monotonic()
    sent = 0
    with BruceClient(sock) as client:
        while sent < count:
            client.send_any_partition(topic, b"%010d" % sent + VALUE)
            sent += 1
            if rate:
                if time.monotonic() - start >= 3.0:
                    break
                ahead = sent / rate - (time.monotonic() - start)
                if ahead > 0.001:
                    time.sleep(ahead)
    if not rate:
        proxy_bench.wait_for(lambda: proxy_bench.counters(url).get("MsgDelivered", 0) >= sent, "delivery")
        time.sleep(wait_s)
    before = proxy_bench.counters(url)
    daemon.send_signal(signal.SIGKILL)
    daemon.wait()
    again, url = _start(broker, sock, spool, work / f"{topic}-2.log")
    read = before.get("MsgReceived", 0)
    proxy_bench.wait_for(lambda: proxy_bench.counters(url).get("SpoolPending", 0) == 0, "the replay's delivery")
    after = proxy_bench.counters(url)
    seen = _read_numbers(broker.address, topic, set(range(read)))
    again.send_signal(signal.SIGTERM)
    again.wait(60)
    duplicates = sum(n - 1 for n in seen.values())
    missing = sum(1 for i in range(read) if i not in seen)
    print(
        f"  {name:<14} sent {sent:>7,}  read {read:>7,}  delivered before the kill {before.get('MsgDelivered', 0):>7,}"
        f"  replayed {after.get('SpoolReplayed', 0):>6,}  duplicates {duplicates:>6,}  missing {missing}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two scenarios")
    args = parser.parse_args()
    idle = (0.0, 5.0) if args.quick else (0.0, 0.5, 1.5, 5.0)
    loads = () if args.quick else (2_000, 10_000)
    with tempfile.TemporaryDirectory(prefix="spool-crash-") as tmp, EmbeddedBroker() as broker:
        work = Path(tmp)
        print("kill -9 of a daemon with --spool_dir, restarted on the same spool (done_every_ms 1,000)")
        for wait in idle:
            scenario(broker, work, f"idle +{wait} s", count=20_000, rate=0, wait_s=wait)
        for rate in loads:
            scenario(broker, work, f"load {rate:,}/s", count=10**9, rate=rate, wait_s=0)


if __name__ == "__main__":
    main()
