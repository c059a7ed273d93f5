"""A chaos run: steady load through the daemon (on a spool) or the library, a seeded random schedule of faults for
N minutes, then every message read back by number with confluent-kafka (CRC checks on).

    python bench/chaos.py [--minutes 3] [--seed 1] [--target daemon|library] [--rate 500] [--rounds 0]
                          [--expect-exactly-once] [--json PATH]

The broker: tansu on an S3 bucket (moto's server: tests/durable_cluster.py), so a broker killed and restarted keeps
its log, behind a proxy that can cut its connections or drop its answers. It serves at one of two addresses; the
daemon's (and the library's) bootstrap list names both, as an operator's list of a cluster's addresses would, and a
move takes the broker to the other one (tansu names only itself in metadata: the client must go back to its
bootstrap list to find it). One broker rather than two on the bucket: two tansu do not share their in-memory view of
a partition (watermarks, producer sequences), so writes through both in turn are not a setup Kafka clients expect.

The faults, drawn as rounds (each round every kind once, in a random order; ``--rounds`` completes at least that
many even past ``--minutes``), a random pause of 1 to 3 s before each:

- ``daemon_kill``: ``kill -9`` of the daemon, restarted on the same spool (library: the worker process);
- ``broker_restart``: the broker killed (SIGKILL) for 1 to 4 s and started again at its address;
- ``broker_move``: the broker killed and started at its other address;
- ``cut``: every connection to the broker reset at once;
- ``drop_answers``: the broker's answers thrown away for 1 to 3 s, then the connections cut (requests that reached
  the broker are answered to nobody);
- ``spool_full`` (daemon): the broker down while a burst beyond ``--spool_max_bytes`` arrives (the daemon runs
  with ``--spool_full_policy discard``, so what does not fit is discarded and reported as SPOOL_FULL), then back;
- ``memory_burst`` (daemon): a burst beyond the memory budget (``--msg_buffer_max``), held on disk by the spool.

Prints (and writes with ``--json``): sent, refused (the sender saw the refusal), delivered, discarded by reason (the
daemon's discard log; the library's sink), discards the daemon counted but never wrote to its log (lines queued when
a kill came although the run waited for them, dropped as the log's queue was full, or lost to a write error: their
numbers cannot be named, so they are a count), lost (sent, not delivered, not reported discarded, less that count;
for the library only acknowledged messages count, the ones the worker held unacknowledged at a kill are counted
apart), duplicated,
reordered (keyed messages read after a higher number of the same key in the same partition), and each fault with
its time. A wait of the harness that expires (e.g. a restarted daemon still settling past its deadline) is noted as
a ``harness`` event and the run goes on with the next fault; a harness failure ends the faults early; either way
the messages are read back and the figures printed. Exit status 1 on any loss, on any duplicate with
``--expect-exactly-once``, or when the harness failed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from chaos_targets import KEYS, DaemonTarget, HarnessTimeout, LibraryTarget, number
from durable_cluster import READ_PROPS, durable_cluster
from proxy_bench import read_topic

from bruce.proxy.config.ports import free_port

TOPIC = "chaos"
PARTITIONS = 4
SPOOL_MAX_BYTES = 4 << 20
BUDGET_KIB = 1024
KILL_WINDOW = 256  # the intake's largest burst: what a kill may find read and not yet spooled
DAEMON_FAULTS = ("daemon_kill", "broker_restart", "broker_move", "cut", "drop_answers", "spool_full", "memory_burst")
LIBRARY_FAULTS = ("daemon_kill", "broker_restart", "broker_move", "cut", "drop_answers")


def schedule(rng: random.Random, kinds: tuple[str, ...]):  # type: ignore[no-untyped-def]
    """Rounds of faults, each kind once per round in a random order: (round, kind)."""
    rounds = 0
    while True:
        deck = list(kinds)
        rng.shuffle(deck)
        for kind in deck:
            yield rounds, kind
        rounds += 1


class Chaos:
    def __init__(self, args: argparse.Namespace, cluster, workdir: Path) -> None:  # type: ignore[no-untyped-def]
        self.args, self.cluster, self.workdir = args, cluster, workdir
        self.ports = [cluster.ports[0], free_port()]  # the broker's two addresses, both in the bootstrap list
        self.bootstrap = ",".join(f"127.0.0.1:{port}" for port in self.ports)
        self.rng = random.Random(args.seed)
        self.t0 = time.monotonic()
        self.faults: list[dict] = []
        if args.target == "daemon":
            extra = ["--spool_max_bytes", str(SPOOL_MAX_BYTES), "--spool_full_policy", "discard"]
            extra += ["--spool_segment_bytes", str(256 << 10), "--msg_buffer_max", str(BUDGET_KIB)]
            self.target: DaemonTarget | LibraryTarget = DaemonTarget(workdir, TOPIC, args.rate, extra)
        else:
            self.target = LibraryTarget(workdir, TOPIC, args.rate)

    def note(self, kind: str, **detail: object) -> None:
        self.faults.append({"at_s": round(time.monotonic() - self.t0, 2), "fault": kind, **detail})
        print(f"{self.faults[-1]['at_s']:8.2f} s  {kind} {detail or ''}", flush=True)

    def run(self) -> None:
        self.target.start(self.bootstrap)
        if isinstance(self.target, DaemonTarget):
            self.target.load.start()
        kinds = DAEMON_FAULTS if isinstance(self.target, DaemonTarget) else LIBRARY_FAULTS
        end = self.t0 + self.args.minutes * 60
        for rounds, kind in schedule(self.rng, kinds):
            if time.monotonic() >= end and rounds >= self.args.rounds:
                break
            time.sleep(self.rng.uniform(1, 3))
            try:
                getattr(self, kind)()
            except HarnessTimeout as e:
                self.note("harness", skipped=kind, why=str(e))

    def daemon_kill(self) -> None:
        self.note("daemon_kill" if isinstance(self.target, DaemonTarget) else "worker_kill")
        self.target.kill(self.bootstrap)

    def broker_restart(self) -> None:
        down = self.rng.uniform(1, 4)
        self.note("broker_restart", down_s=round(down, 2))
        self.cluster.kill()
        time.sleep(down)
        self.cluster.restart()

    def broker_move(self) -> None:
        old = self.cluster.address()
        new = self.cluster.move(port=next(p for p in self.ports if p != self.cluster.ports[0]))
        self.note("broker_move", old=old, new=new)

    def cut(self) -> None:
        self.note("cut", connections=self.cluster.cut())

    def drop_answers(self) -> None:
        hold = self.rng.uniform(1, 3)
        self.note("drop_answers", for_s=round(hold, 2))
        self.cluster.drop_answers(0, True)
        time.sleep(hold)
        self.cluster.drop_answers(0, False)
        self.cluster.cut()

    def spool_full(self) -> None:
        burst = SPOOL_MAX_BYTES // 150 + 5000  # beyond the spool at ~150 bytes a message on disk
        self.note("spool_full", burst=burst)
        self.cluster.kill()
        load = self.target.load  # type: ignore[union-attr]
        with load.lock:
            taken = load.send(burst)
        self.faults[-1]["taken"] = taken
        time.sleep(1.0)
        self.cluster.restart()

    def memory_burst(self) -> None:
        burst = BUDGET_KIB * 1024 // 100 * 2  # twice the budget's worth of 100-byte values
        self.note("memory_burst", burst=burst)
        load = self.target.load  # type: ignore[union-attr]
        with load.lock:
            self.faults[-1]["taken"] = load.send(burst)

    def finish(self) -> dict:
        """Stop the load, let the target deliver what it holds, read everything back and count."""
        settled_at = time.monotonic()
        if isinstance(self.target, DaemonTarget):
            self.target.load.stop()
        settled = self.target.settle(self.args.settle)
        settle_s = time.monotonic() - settled_at
        if isinstance(self.target, DaemonTarget):
            sent, refused = self.target.load.sent, len(self.target.load.refused)
            discarded, reported_dups = self.target.discarded()
            daemon_counters = self.target.counters()
            counted = set(sent)
            unacked = 0
            unlogged = self.target.unlogged_at_kills + sum(
                daemon_counters.get(f"DiscardLogLines{kind}", 0) for kind in ("Dropped", "Lost")
            )
        else:
            sent, acked, discarded = self.target.journal()
            counted, refused, reported_dups, daemon_counters, unlogged = set(acked), 0, 0, {}, 0
        self.target.stop()
        reads = read_back(self.cluster.address(), set(counted) - set(discarded))
        copies = Counter(n for _, _, n in reads)
        delivered = set(copies)
        lost = sorted(counted - delivered - set(discarded))
        kills = getattr(self.target, "killed_after", [])
        at_kill = [n for n in lost if any(k - KILL_WINDOW < n <= k for k in kills)]
        where: dict[str, object] = {}
        if isinstance(self.target, LibraryTarget):
            unacked = len(set(sent) - set(acked) - delivered - set(discarded))
            at = {(p, o): n for p, o, n in reads}
            where = {str(n): [*acked[n], at.get(acked[n])] for n in lost[:20]}  # acked at, and what is there
        return {
            "target": self.args.target,
            "seed": self.args.seed,
            "minutes": self.args.minutes,
            "rate": self.args.rate,
            "settled": settled,
            "settle_s": round(settle_s, 1),
            "sent": len(set(sent)),
            "refused": refused,
            "delivered": len(delivered),
            "discarded": dict(Counter(discarded.values())),
            "discarded_delivered_anyway": len(set(discarded) & delivered),
            "unacknowledged_at_kill": unacked,
            "not_delivered_not_logged": len(lost),
            "discarded_not_logged": unlogged,
            "lost": max(0, len(lost) - unlogged),
            "lost_first": lost[:20],
            "lost_just_before_a_kill": len(at_kill),
            "lost_acked_at": where,
            "duplicated": sum(c - 1 for c in copies.values()),
            "reported_possible_duplicates": reported_dups,
            "read": len(reads),
            "reordered": reordered(reads),
            "daemon_counters": daemon_counters,
            "faults": self.faults,
            "fault_counts": dict(Counter(f["fault"] for f in self.faults)),
            "harness": [f for f in self.faults if f["fault"].startswith("harness")],
        }


def read_back(address: str, expected: set[int]) -> list[tuple[int, int, int]]:
    """(partition, offset, number) of every message of the topic, in each partition's order; read until every
    ``expected`` number came (then a second more) or two minutes passed."""
    reads: list[tuple[int, int, int]] = []
    missing = set(expected)

    def enough(batch: list) -> bool:
        got = [(m.partition(), m.offset(), number(m.value())) for m in batch]
        reads.extend(got)
        missing.difference_update(n for _, _, n in got)
        return not missing

    read_topic(address, TOPIC, enough, timeout=120, partitions=PARTITIONS, props=READ_PROPS)
    return sorted(reads)


def reordered(reads: list[tuple[int, int, int]]) -> dict[int, int]:
    """Per partition: keyed messages (first copies) read after a higher number of the same key."""
    out: dict[int, int] = {}
    seen: set[int] = set()
    highest: dict[tuple[int, int], int] = defaultdict(lambda: -1)
    for partition, _, n in reads:
        if n in seen or n % 2 == 0:
            continue
        seen.add(n)
        stream = (partition, n % KEYS)
        if n < highest[stream]:
            out[partition] = out.get(partition, 0) + 1
        highest[stream] = max(highest[stream], n)
    return out


def report(r: dict) -> None:
    print(f"\nchaos run: target {r['target']}, seed {r['seed']}, {r['minutes']} min at {r['rate']} msgs/s")
    print(f"faults: {r['fault_counts']}")
    for event in r["harness"]:
        why = event.get("why") or event.get("error")
        print(f"  harness event at {event['at_s']} s: {event.get('skipped') or ''} {why}")
    print(f"sent: {r['sent']}  refused at the socket: {r['refused']}")
    print(f"delivered: {r['delivered']}  (read {r['read']} records)")
    print(f"discarded with a reason: {r['discarded']}  (of them delivered anyway: {r['discarded_delivered_anyway']})")
    if r["target"] == "library":
        print(f"unacknowledged when the worker was killed, not delivered: {r['unacknowledged_at_kill']}")
    if r["discarded_not_logged"]:
        print(
            f"discards the daemon counted but never wrote to its log (queued at a kill, dropped, lost): "
            f"{r['discarded_not_logged']}; not delivered and not in the log: {r['not_delivered_not_logged']}"
        )
    print(f"lost: {r['lost']}  {r['lost_first'] if r['not_delivered_not_logged'] else ''}")
    if r["lost_just_before_a_kill"]:
        print(f"  of them among the last {KILL_WINDOW} sent before a daemon kill: {r['lost_just_before_a_kill']}")
    if r["lost_acked_at"]:
        print(f"  acknowledged at [partition, offset, number read there]: {r['lost_acked_at']}")
    print(f"duplicated: {r['duplicated']}")
    if r["target"] == "daemon":
        print(f"possible duplicates the daemon reported (discard log DUP lines): {r['reported_possible_duplicates']}")
    print(f"reordered per partition (keyed): {r['reordered'] or 0}")
    print(f"settled: {r['settled']} after {r['settle_s']} s")
    if r["daemon_counters"]:
        print(f"daemon counters, summed over its runs: {r['daemon_counters']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--target", choices=("daemon", "library"), default="daemon")
    parser.add_argument("--rate", type=int, default=500, help="steady load, messages/s")
    parser.add_argument("--rounds", type=int, default=0, help="complete at least this many rounds of faults")
    parser.add_argument("--settle", type=float, default=120.0, help="seconds to deliver what is held at the end")
    parser.add_argument("--expect-exactly-once", action="store_true", help="fail on any duplicate too")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument(
        "--workdir", type=Path, help="keep the logs, spool and journals here (default: a temporary one)"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="chaos-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        with durable_cluster(workdir) as cluster:
            cluster.create_topic(TOPIC, PARTITIONS)
            chaos = Chaos(args, cluster, workdir)
            try:
                try:
                    chaos.run()
                except Exception as e:  # the harness failed: the faults end here, what was sent is still read back
                    traceback.print_exc()
                    chaos.note("harness_failed", error=repr(e))
                result = chaos.finish()
            finally:
                chaos.target.stop()
    report(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    harness_failed = any(f["fault"] == "harness_failed" for f in result["faults"])
    failed = result["lost"] > 0 or harness_failed or (args.expect_exactly_once and result["duplicated"] > 0)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
