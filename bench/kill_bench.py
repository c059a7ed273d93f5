"""Kill benchmark: the ``bruce`` daemon (a real subprocess, the spool on) killed with SIGKILL under load and restarted
on the same spool, then every message read back by number (docs/spool.md, "Exactly once across crashes").

Each round starts the daemon, sends ``--per-round`` numbered datagrams (even numbers by partition key
with a record key naming it, odd ones to any partition), waits until the daemon has read them all from its socket
(what the kernel still holds at a kill is the sender's, not the daemon's), waits a random
0 to ``--max-delay`` s (seeded) and kills it; a last start drains the spool and stops cleanly. confluent-kafka (CRC
checks on) then reads the topic: sent, read, lost, duplicated, and each key's numbers in order. The daemon's
settling lines (``spool: settled ...``) are printed per start.

    .venv/bin/python bench/kill_bench.py                               # 3 kills of 25,200 messages, seed 25
    .venv/bin/python bench/kill_bench.py --rounds 5 --per-round 50000 --seed 7
    .venv/bin/python bench/kill_bench.py --quick                       # 2 kills of 2,000: checks that it runs
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from e2e.daemon.harness import counters_json, start_bruce, wait_for
from readback import read_back

from bruce.client import BruceClient
from bruce.proxy.daemon.embedded import EmbeddedBroker

PARTITIONS = 4
KEYS = 7


def _send(sock: Path, topic: str, numbers: range) -> None:
    with BruceClient(sock) as client:
        for n in numbers:
            value = b"%07d" % n
            if n % 2 == 0:
                client.send_partition_key(topic, n % KEYS, value, key=b"key-%d" % (n % KEYS))
            else:
                client.send_any_partition(topic, value)


def _read_from_socket(url: str, goal: int):  # type: ignore[no-untyped-def]
    """True once the daemon read ``goal`` datagrams from its socket: what it received, less what it replayed from the
    spool (records settled by the journal are handed out by the spool but not received)."""

    def done() -> bool:
        c = counters_json(url)
        return c.get("MsgReceived", 0) - c.get("SpoolReplayed", 0) + c.get("SpoolSettled", 0) >= goal

    return done


def run(rounds: int, per_round: int, max_delay: float, seed: int) -> int:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="bruce-kill-", dir="/tmp") as tmp, EmbeddedBroker() as broker:
        work = Path(tmp)
        topic = "kill-bench"
        broker.create_topic(topic, PARTITIONS)
        sock, spool = work / "k.sock", work / "spool"
        command = ["--receive_socket_name", str(sock), "--status_port", "0", "--initial_brokers", broker.address]
        command += ["--spool_dir", str(spool)]
        total = rounds * per_round
        print(f"kill: {rounds} kills of {per_round:,} messages each, seed {seed}, tansu, {PARTITIONS} partitions")
        for r in range(rounds + 1):
            log = work / f"bruce-{r}.log"
            daemon = start_bruce(command, log)
            url = daemon.wait_serving()
            if r == rounds:
                wait_for(lambda: not list(spool.glob("*.seg")), 300, "the spool to empty")
                daemon.signal(signal.SIGTERM)
                daemon.wait(60)
            else:
                _send(sock, topic, range(r * per_round, (r + 1) * per_round))
                wait_for(_read_from_socket(url, per_round), 120, "the round read")
                time.sleep(rng.uniform(0.0, max_delay))
                delivered = counters_json(url).get("MsgDelivered", 0)
                daemon.process.send_signal(signal.SIGKILL)
                daemon.wait(30)
                print(f"  start {r + 1}: killed with {delivered:,} delivered in this run")
            for line in log.read_text().splitlines():
                if "spool: settled" in line:
                    print("   ", line.split("bruce.spool: ", 1)[1])
        messages = read_back(broker.address, topic, PARTITIONS, total, timeout=300, extra=1.0)
        numbers = Counter(int(m.value()) for m in messages)
        lost = sum(1 for n in range(total) if numbers[n] == 0)
        duplicated = sum(c - 1 for c in numbers.values() if c > 1)
        by_key: dict[bytes, list[int]] = {}
        for m in sorted(messages, key=lambda m: (m.partition(), m.offset())):
            if m.key() is not None:
                by_key.setdefault(m.key(), []).append(int(m.value()))
        disordered = sum(1 for seen in by_key.values() if seen != sorted(seen))
        print(f"  sent {total:,}  read {len(messages):,}  lost {lost}  duplicated {duplicated}", end="")
        print(f"  keys out of order {disordered}")
        return 0 if lost == duplicated == disordered == 0 else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="daemon kills")
    parser.add_argument("--per-round", type=int, default=25_200, help="messages sent before each kill")
    parser.add_argument("--max-delay", type=float, default=0.3, help="longest wait (s) between reading and the kill")
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--quick", action="store_true", help="2 kills of 2,000 messages")
    args = parser.parse_args()
    if args.quick:
        return run(2, 2_000, 0.1, args.seed)
    return run(args.rounds, args.per_round, args.max_delay, args.seed)


if __name__ == "__main__":
    sys.exit(main())
