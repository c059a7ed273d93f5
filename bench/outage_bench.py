"""Outage benchmark: the ``bruce`` daemon (a real subprocess) fed a steady stream while its broker goes away for N
seconds and comes back on the same port; every message's fate is checked by reading back.

The broker is tansu. Its storage is in memory, so a real restart would lose the topic and what was stored; instead
tansu advertises a *gate* port, a TCP forwarder in this process, and the gate is what goes away: it closes its
listening socket and resets every connection (connects are refused, as with a killed broker), then listens again on
the same port. A sender process offers ``--rate`` 100-byte AnyPartition datagrams per second, before, during and
after the outage. The script prints, per outage:

- messages held at the peak, the budget in use then, the daemon's RSS growth then (its event loop process, where the
  messages are held) and what these make per held message and per MiB;
- NO_MEM discards (the budget was full) and every other discard;
- resume: from the broker accepting connections again to the first delivery; drain: from then until every message
  received before it has its fate;
- read back (confluent-kafka, CRC checks on) = delivered, and delivered + discarded = sent.

With ``--spool`` the daemon runs with the durable spool (``--spool_dir``, docs/spool.md): what does not fit the budget
is held on disk only, so an outage is bounded by disk, not memory. The script then also prints the peak held on disk
only and the spool's size then, and reads every message back by number: each sent number once (duplicates counted),
and whether each partition holds its numbers in increasing order (arrival order kept).

    .venv/bin/python bench/outage_bench.py                          # 20,000 msgs/s, outages of 10 and 30 s, 64 MiB
    .venv/bin/python bench/outage_bench.py --outages 20,25,30 --budget-kib 65536
    .venv/bin/python bench/outage_bench.py --quick                  # 5,000 msgs/s, a 2 s outage: checks that it runs
    .venv/bin/python bench/outage_bench.py --spool --outages 60 --budget-kib 16384   # the spool's outage figure
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from outage import Forwarder
from proxy_bench import (
    PARTITIONS,
    VALUE_SIZE,
    consume_count,
    counters,
    gauge,
    read_topic,
    settled_count,
    status_kib,
    wait_for,
    wait_serving,
)

from bruce.proxy.config.ports import free_port
from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.wire.datagram import build_any_partition

BEFORE_S = 3.0  # steady sending before the outage
AFTER_S = 3.0  # and after the broker is back
TIMEOUT_S = 300.0
MiB = 1024 * 1024


# ----------------------------------------------------------------------------------------------- the broker's gate


class Gate:
    """The broker's address: a forwarder from ``port`` to ``target`` that can go away (connects refused, every
    connection reset, as with a killed broker) and come back on the same port."""

    def __init__(self, port: int, target: int) -> None:
        self.port = port
        self.target = target
        self._forwarder: Forwarder | None = None

    def open(self) -> None:
        self._forwarder = Forwarder(self.port, self.target)

    def close(self) -> None:
        forwarder, self._forwarder = self._forwarder, None
        if forwarder is not None:
            forwarder.close()


# --------------------------------------------------------------------------------------------------------- sender


def _sender(path: str, topic: str, rate: int, seconds: float, ready: mp.Event, results: mp.Queue) -> None:
    """``rate`` datagrams a second for ``seconds`` (in 10 ms steps), numbered, on a blocking socket. A spawned process
    (a forked one would inherit the gate's listening socket and keep the port taken)."""
    pad = b"v" * (VALUE_SIZE - 8)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.connect(path)
    ready.set()
    sent = 0
    t0 = time.monotonic()
    while True:
        elapsed = time.monotonic() - t0
        if elapsed >= seconds:
            break
        due = min(int(elapsed * rate) + rate // 100, int(seconds * rate))
        while sent < due:
            sock.send(build_any_partition(topic, b"%08d" % sent + pad, timestamp=1_700_000_000_000))
            sent += 1
        time.sleep(0.01)
    while sent < int(seconds * rate):
        sock.send(build_any_partition(topic, b"%08d" % sent + pad, timestamp=1_700_000_000_000))
        sent += 1
    sock.close()
    results.put(sent)


# -------------------------------------------------------------------------------------------------------- reading


@dataclass
class Result:
    outage_s: float
    sent: int
    delivered: int
    discarded: int
    no_mem: int
    read_back: int
    peak_held: int
    peak_budget: float  # bytes in use at the peak
    peak_rss_growth: float  # bytes above the RSS before sending
    resume_s: float
    drain_s: float
    spool: dict[str, int] = field(default_factory=dict)  # with --spool: the figures of read_numbers, the peaks


def read_numbers(address: str, topic: str, sent: int, expected: int, timeout: float = TIMEOUT_S) -> dict[str, int]:
    """Read ``topic`` back (CRC checks on) by the numbers the sender put first in each value, until ``expected``
    distinct ones came: how many distinct numbers of ``0 .. sent-1`` came back, the duplicates, and the partitions
    whose numbers are not increasing."""
    seen = bytearray(sent)
    distinct = duplicates = 0
    last = [-1] * PARTITIONS
    out_of_order: set[int] = set()

    def enough(batch: list) -> bool:
        nonlocal distinct, duplicates
        for m in batch:
            number = int(m.value()[:8])
            if seen[number]:
                duplicates += 1
            else:
                seen[number] = 1
                distinct += 1
            if number <= last[m.partition()]:
                out_of_order.add(m.partition())
            last[m.partition()] = number
        return distinct >= expected

    read_topic(address, topic, enough, timeout)
    return {"distinct": distinct, "duplicates": duplicates, "out_of_order": len(out_of_order)}


def run_one(
    outage: float,
    rate: int,
    budget_kib: int,
    gate: Gate,
    tansu: EmbeddedBroker,
    workdir: Path,
    n: int,
    spool: bool = False,
    spool_max_mib: int = 0,
) -> Result:
    topic = f"outage-{os.getpid()}-{n}"
    tansu.create_topic(topic, PARTITIONS, timeout=60)
    sock = str(workdir / f"bruce-{n}.sock")
    log_path = workdir / f"bruce-{n}.log"
    args = [
        str(Path(sys.executable).parent / "bruce"),
        *("--initial_brokers", f"127.0.0.1:{gate.port}", "--receive_socket_name", sock, "--status_port", "0"),
        *("--msg_buffer_max", str(budget_kib), "--log_level", "LOG_NOTICE"),
        *(("--spool_dir", str(workdir / f"spool-{n}")) if spool else ()),
        *(("--spool_max_bytes", str(spool_max_mib * MiB)) if spool and spool_max_mib else ()),
    ]
    peaks = {"held_on_disk": 0, "spool_bytes": 0}
    with open(log_path, "wb") as log:
        daemon = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = wait_serving(daemon, log_path)
        wait_for(lambda: counters(url).get("MetadataChanged", 0) >= 1, "the daemon's first metadata")
        rss0 = status_kib(daemon.pid, "VmRSS") * 1024
        ctx = mp.get_context("spawn")
        ready, results = ctx.Event(), ctx.Queue()
        total_s = BEFORE_S + outage + AFTER_S
        sender = ctx.Process(target=_sender, args=(sock, topic, rate, total_s, ready, results))
        sender.start()
        if not ready.wait(60):
            raise RuntimeError("the sender did not start")
        t0 = time.monotonic()
        time.sleep(BEFORE_S)
        gate.close()
        peak_held, peak_budget, peak_rss = 0, 0.0, 0.0
        while time.monotonic() < t0 + BEFORE_S + outage:
            c = counters(url)
            held = c.get("MsgReceived", 0) - c.get("MsgDelivered", 0) - c.get("MsgDiscarded", 0)
            if held > peak_held:
                peak_held, peak_budget = held, gauge(url, "bruce_msg_buffer_used_bytes")
                peak_rss = status_kib(daemon.pid, "VmRSS") * 1024 - rss0
                if spool:
                    peaks["held_on_disk"] = int(gauge(url, "bruce_spool_held_on_disk"))
                    peaks["spool_bytes"] = int(gauge(url, "bruce_spool_bytes"))
            time.sleep(0.1)
        c = counters(url)
        backlog = c.get("MsgReceived", 0)  # received before the broker came back
        delivered_before = c.get("MsgDelivered", 0)
        gate.open()
        back = time.monotonic()
        resumed = drained = 0.0
        while not (resumed and drained):
            c = counters(url)
            now = time.monotonic()
            if not resumed and c.get("MsgDelivered", 0) > delivered_before:
                resumed = now - back
            if not drained and c.get("MsgDelivered", 0) + c.get("MsgDiscarded", 0) >= backlog:
                drained = now - back
            if now - back > TIMEOUT_S:
                raise RuntimeError("the backlog did not drain")
            time.sleep(0.01)
        sent = results.get(timeout=TIMEOUT_S)
        sender.join(10)
        wait_for(lambda: settled_count(url) >= sent, "every message to have its fate")
        c = counters(url)
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(60)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait(10)
    if spool:
        figures = read_numbers(f"127.0.0.1:{gate.port}", topic, sent, c.get("MsgDelivered", 0), timeout=120)
        read_back = figures["distinct"] + figures["duplicates"]
        peaks.update(figures)
    else:
        read_back = consume_count(f"127.0.0.1:{gate.port}", topic, c.get("MsgDelivered", 0), timeout=120)
    return Result(
        outage,
        sent,
        c.get("MsgDelivered", 0),
        c.get("MsgDiscarded", 0),
        c.get("Discard:NO_MEM", 0),
        read_back,
        peak_held,
        peak_budget,
        peak_rss,
        resumed,
        drained,
        peaks if spool else {},
    )


def _print(r: Result, budget_kib: int) -> None:
    ok = r.read_back == r.delivered and r.delivered + r.discarded == r.sent
    print(f"\n[outage {r.outage_s:g} s] sent {r.sent:,}: delivered {r.delivered:,}, discarded {r.discarded:,}")
    print(f"  NO_MEM discards {r.no_mem:,}; other discards {r.discarded - r.no_mem:,}")
    held = max(r.peak_held, 1)
    print(
        f"  peak held {r.peak_held:,} messages: budget in use {r.peak_budget / MiB:.1f} MiB of {budget_kib / 1024:g}"
        f" ({r.peak_held / (budget_kib / 1024):,.0f} held per MiB of --msg_buffer_max,"
        f" {r.peak_held / max(r.peak_budget / MiB, 1e-9):,.0f} per MiB in use: {r.peak_budget / held:.0f} B/message)"
    )
    growth = r.peak_rss_growth / r.peak_budget if r.peak_budget else 0.0
    print(
        f"  RSS growth at the peak {r.peak_rss_growth / MiB:.1f} MiB: {r.peak_rss_growth / held:.0f} B per held"
        f" message, {growth:.2f}x the budget in use"
    )
    print(f"  resume: first delivery {r.resume_s:.2f} s after the broker accepted connections again")
    print(f"  drain: every message received during the outage had its fate {r.drain_s:.2f} s after that")
    print(
        f"  read back {r.read_back:,} (= delivered: {'yes' if r.read_back == r.delivered else 'NO'}); "
        f"delivered + discarded = sent: {'yes' if ok else 'NO: LOST'}"
    )
    if r.spool:
        s = r.spool
        print(
            f"  spool: peak held on disk only {s['held_on_disk']:,} messages (spool {s['spool_bytes'] / MiB:.1f} MiB);"
            f" read back by number: {s['distinct']:,} of {r.sent:,} sent, {s['duplicates']:,} duplicates,"
            f" {s['out_of_order']} partitions out of order"
        )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rate", type=int, default=20_000, help="datagrams per second")
    p.add_argument("--outages", default="10,30", help="comma-separated outage lengths in seconds")
    p.add_argument("--budget-kib", type=int, default=65536, help="--msg_buffer_max of the daemon (KiB)")
    p.add_argument("--quick", action="store_true", help="5,000 msgs/s, one 2 s outage")
    p.add_argument("--spool", action="store_true", help="run the daemon with the durable spool (--spool_dir)")
    p.add_argument("--spool-max-mib", type=int, default=0, help="--spool: its --spool_max_bytes, MiB (default 1 GiB)")
    a = p.parse_args(argv)
    if a.quick:
        a.rate, a.outages = 5000, "2"
    outages = [float(x) for x in a.outages.split(",") if x]
    print(
        f"outage bench: {a.rate:,} x {VALUE_SIZE}-byte AnyPartition datagrams/s, {BEFORE_S:g} s before and"
        f" {AFTER_S:g} s after each outage, --msg_buffer_max {a.budget_kib:,} KiB, {PARTITIONS} partitions"
        f"{', spool on' if a.spool else ''}{f' (max {a.spool_max_mib} MiB)' if a.spool and a.spool_max_mib else ''}"
    )
    failed = False
    with tempfile.TemporaryDirectory(prefix="outage-bench-") as tmp:
        gate_port = free_port()
        with EmbeddedBroker(log_path=Path(tmp) / "tansu.log", advertised_port=gate_port) as tansu:
            gate = Gate(gate_port, tansu.port)
            gate.open()
            try:
                for n, outage in enumerate(outages):
                    r = run_one(outage, a.rate, a.budget_kib, gate, tansu, Path(tmp), n, a.spool, a.spool_max_mib)
                    _print(r, a.budget_kib)
                    failed |= r.read_back != r.delivered or r.delivered + r.discarded != r.sent
                    failed |= bool(r.spool) and r.spool["distinct"] != r.delivered
            finally:
                gate.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
