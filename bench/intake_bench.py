"""Intake benchmark: sender processes → Bruce's UNIX datagram socket → the daemon's reader with a no-op sink.

For each reader design it prints datagrams/s received, the daemon's CPU µs per datagram (reader process, plus its
forwarder child for ``process``; simulated loop work excluded) split between the event loop's process and the child,
mean datagrams per burst processed, and what the clients felt: how often a blocking sender blocked and its off-CPU
time, or how many sends a non-blocking (fire-and-forget) sender had to drop because the socket was full (EAGAIN).
Ratios compare each design with ``uvloop`` in the same run.

Designs:
  asyncio  DatagramIntake in the stock asyncio loop: add_reader, read a burst non-blocking, then process it
  uvloop   the same in uvloop (the daemon's loop)
  thread   a reader thread (blocking recv) handing bursts to the loop with call_soon_threadsafe
  process  DatagramIntake with its reader process (bruce.proxy.intake.intake_process): a child reads the socket and
  forwards
           each burst as one pickled list over a pipe that the loop reads (the daemon's default)

``--stall-ms X`` makes the loop busy for X ms every ``--stall-every-ms`` ms, the way batching, compression and produce
work occupy the daemon: it shows which design keeps clients from blocking while the loop is away.

    .venv/bin/python bench/intake_bench.py                  # all designs, idle loop and a loop stalled 2 ms in 10
    .venv/bin/python bench/intake_bench.py --nonblocking --rate 100000  # paced clients that drop on EAGAIN
    .venv/bin/python bench/intake_bench.py --quick          # a few thousand datagrams: checks that it runs
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import multiprocessing as mp
import os
import platform
import resource
import socket
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from _common import max_dgram_qlen, own_cpu_s, proc_cpu_s

from bruce.producer.counters import Counters
from bruce.proxy.intake.intake import DEFAULT_BURST, DatagramIntake
from bruce.proxy.messages.budget import MessageBudget
from bruce.wire.datagram import build_any_partition, build_partition_key

DESIGNS = ("asyncio", "uvloop", "thread", "process")
IDLE_TIMEOUT_S = 10.0  # a receiver that sees nothing for this long reports what it got (loss) and stops


# -------------------------------------------------------------------------------------------------------- senders


class _Pacer:
    """Keeps a sender at ``rate`` datagrams/s: every 8 datagrams, sleep if more than 0.5 ms ahead of schedule."""

    def __init__(self, rate: float) -> None:
        self.step = 8 / rate if rate else 0.0
        self.due = time.perf_counter()
        self.sleeps = 0  # voluntary context switches that were pacing, not blocking
        self.slept = 0.0

    def pace(self) -> None:
        self.due += self.step
        ahead = self.due - time.perf_counter()
        if ahead > 0.0005:
            t0 = time.perf_counter()
            time.sleep(ahead)
            self.slept += time.perf_counter() - t0
            self.sleeps += 1


def _sender(
    path: str, count: int, size: int, nonblocking: bool, rate: float, start: mp.Event, results: mp.Queue
) -> None:
    """Send ``count`` pre-built datagrams (AnyPartition and PartitionKey, ``size``-byte values), flat out or at
    ``rate`` datagrams/s."""
    datagrams = [
        build_any_partition(f"topic-{i % 4}", os.urandom(size), key=b"k%d" % i, timestamp=1_700_000_000_000 + i)
        if i % 2
        else build_partition_key(f"topic-{i % 4}", os.urandom(size), partition_key=i, timestamp=1_700_000_000_000 + i)
        for i in range(64)
    ]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.connect(path)
    sock.setblocking(not nonblocking)
    send = sock.send
    dropped = 0
    start.wait()
    pacer = _Pacer(rate)
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    w0 = time.perf_counter()
    for i, d in enumerate(itertools.islice(itertools.cycle(datagrams), count)):
        if rate and not i & 7:
            pacer.pace()
        if not nonblocking:
            send(d)
            continue
        try:
            send(d)
        except BlockingIOError:
            dropped += 1  # what a fire-and-forget client loses
    wall = time.perf_counter() - w0 - pacer.slept
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    blocked = max(0, r1.ru_nvcsw - r0.ru_nvcsw - pacer.sleeps)
    results.put(("sender", {"wall": wall, "cpu": cpu, "blocked": blocked, "dropped": dropped}))


# ---------------------------------------------------------------------------------------------------------- receiver


class _CountingSink:
    """The no-op sink: counts, and resolves ``done`` at the expected total."""

    def __init__(self, total: int, done: asyncio.Future[None]) -> None:
        self.total = total
        self.count = 0
        self.discards = 0
        self.first = 0.0
        self.last = 0.0
        self.done = done

    def route_many(self, messages: list[object]) -> None:
        for msg in messages:
            self.route(msg)

    def route(self, msg: object) -> None:
        self.count += 1
        self.last = time.perf_counter()
        if self.count == 1:
            self.first = self.last
        if self.count >= self.total and not self.done.done():
            self.done.set_result(None)

    def on_discard(self, *args: object) -> None:
        self.discards += 1

    def on_unparsed(self, *args: object, **kwargs: object) -> None:
        self.discards += 1


def _thread_reader(sock: socket.socket, intake: DatagramIntake, loop: asyncio.AbstractEventLoop) -> None:
    recv = sock.recv
    bufsize = intake.max_input_msg_size + 1
    while True:
        try:
            batch = [recv(bufsize)]
        except OSError:
            return
        try:
            for _ in range(DEFAULT_BURST - 1):
                batch.append(recv(bufsize, socket.MSG_DONTWAIT))
        except BlockingIOError:
            pass
        loop.call_soon_threadsafe(_feed_burst, intake, batch)


def _feed_burst(intake: DatagramIntake, batch: list[bytes]) -> None:
    intake.feed(batch, time.monotonic())


async def _stall(stall_s: float, every_s: float, spent: list[float]) -> None:
    """Busy the loop for ``stall_s`` every ``every_s``: stands in for the daemon's batching and produce work."""
    while True:
        await asyncio.sleep(every_s)
        t0, cpu0 = time.perf_counter(), time.thread_time()
        while time.perf_counter() - t0 < stall_s:
            pass
        spent[0] += time.thread_time() - cpu0  # CPU, not wall time: the stall may have been descheduled


def _receiver(
    design: str,
    path: str,
    total: int,
    stall_ms: float,
    every_ms: float,
    ready: mp.Event,
    senders_done: mp.Event,
    results,
) -> None:
    if design == "asyncio":
        loop = asyncio.new_event_loop()
    else:
        import uvloop

        loop = uvloop.new_event_loop()
    asyncio.set_event_loop(loop)
    done = loop.create_future()
    sink = _CountingSink(total, done)
    reader = "process" if design == "process" else "loop"
    intake = DatagramIntake(
        path, sink=sink, discards=sink, budget=MessageBudget(1 << 60), counters=Counters(), reader=reader
    )
    intake.open()
    stalled = [0.0]
    child_cpu = [0.0]

    async def main() -> None:
        tasks = []
        if design == "thread":
            blocking = socket.socket(fileno=os.dup(intake.fileno))
            threading.Thread(target=_thread_reader, args=(blocking, intake, loop), daemon=True).start()
        else:
            tasks.append(asyncio.ensure_future(intake.serve()))
        if stall_ms:
            tasks.append(asyncio.ensure_future(_stall(stall_ms / 1000, every_ms / 1000, stalled)))
        await asyncio.sleep(0.3)  # the reader process is up
        child = intake._process.process.pid if intake._process and intake._process.process else None
        child_cpu[0] = -proc_cpu_s(child) if child else 0.0  # its startup does not count against the datagrams
        ready.set()
        idle_since = time.monotonic()
        last = -1
        while not done.done() and not senders_done.is_set():  # all received, or the senders are done (drops)
            await asyncio.wait([done], timeout=0.05)
            if sink.count != last:
                last, idle_since = sink.count, time.monotonic()
            elif time.monotonic() - idle_since > IDLE_TIMEOUT_S:
                break  # silence: report the loss
        if child:
            child_cpu[0] += proc_cpu_s(child)
        if design == "thread":  # let the thread hand over its last bursts
            while True:
                count = sink.count
                await asyncio.sleep(0.3)
                if sink.count == count:
                    break
        else:
            await intake.drain()
        intake.close()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    cpu0 = own_cpu_s()
    loop.run_until_complete(main())
    main_cpu = own_cpu_s() - cpu0 - stalled[0]
    cpu = main_cpu + child_cpu[0]
    wall = (sink.last or time.perf_counter()) - sink.first
    results.put(
        (
            "receiver",
            {
                "received": sink.count,
                "discarded": sink.discards,
                "wall": wall,
                "cpu": cpu,
                "main_cpu": main_cpu,
                "wakeups": intake.wakeups,
            },
        )
    )


@dataclass(frozen=True, slots=True)
class Result:
    design: str
    stall_ms: float
    sent: int
    received: int
    rate: float  # datagrams per second received
    cpu_us: float  # daemon CPU per datagram (all its processes)
    main_us: float  # the event loop process's CPU per datagram (the critical path)
    per_wakeup: float
    blocked: int  # times the blocking senders blocked (voluntary context switches)
    off_cpu_s: float  # senders' wall time not on a CPU
    dropped: int  # non-blocking sends refused with EAGAIN (what fire-and-forget clients lose)


def run_one(
    design: str,
    *,
    messages: int,
    senders: int,
    size: int,
    stall_ms: float,
    every_ms: float,
    nonblocking: bool,
    rate: float,
) -> Result:
    ctx = mp.get_context("fork")
    with tempfile.TemporaryDirectory(prefix="intake-bench-") as tmp:
        path = str(Path(tmp) / "bruce.socket")
        ready, start, senders_done, results = ctx.Event(), ctx.Event(), ctx.Event(), ctx.Queue()
        per_sender = messages // senders
        total = per_sender * senders
        receiver = ctx.Process(
            target=_receiver, args=(design, path, total, stall_ms, every_ms, ready, senders_done, results)
        )
        receiver.start()
        if not ready.wait(30):
            receiver.kill()
            raise RuntimeError(f"{design}: the receiver did not start")
        procs = [
            ctx.Process(target=_sender, args=(path, per_sender, size, nonblocking, rate / senders, start, results))
            for _ in range(senders)
        ]
        for p in procs:
            p.start()
        time.sleep(0.2)  # every sender connected and waiting
        start.set()
        got = [results.get(timeout=600) for _ in range(senders)]
        senders_done.set()
        got.append(results.get(timeout=600))
        for p in (*procs, receiver):
            p.join(30)
    rx = next(r for kind, r in got if kind == "receiver")
    tx = [r for kind, r in got if kind == "sender"]
    received = rx["received"]
    return Result(
        design=design,
        stall_ms=stall_ms,
        sent=total,
        received=received,
        rate=received / rx["wall"] if rx["wall"] > 0 else 0.0,
        cpu_us=rx["cpu"] / max(received, 1) * 1e6,
        main_us=rx["main_cpu"] / max(received, 1) * 1e6,
        per_wakeup=received / max(rx["wakeups"], 1),
        blocked=sum(t["blocked"] for t in tx),
        off_cpu_s=sum(max(t["wall"] - t["cpu"], 0.0) for t in tx),
        dropped=sum(t["dropped"] for t in tx),
    )


def kernel_queue_depth() -> int:
    """How many small datagrams a UNIX datagram socket queues before a non-blocking sender gets EAGAIN."""
    with (
        tempfile.TemporaryDirectory(prefix="intake-depth-") as tmp,
        socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as rx,
        socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as tx,
    ):
        path = str(Path(tmp) / "s")
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        rx.bind(path)
        tx.connect(path)
        tx.setblocking(False)
        n = 0
        try:
            while n < 100_000:
                tx.send(b"x" * 100)
                n += 1
        except BlockingIOError:
            pass
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=400_000, help="datagrams per run (default 400000)")
    ap.add_argument("--senders", type=int, default=2, help="sender processes (default 2)")
    ap.add_argument("--size", type=int, default=100, help="value bytes per datagram (default 100)")
    ap.add_argument("--designs", nargs="+", choices=DESIGNS, default=list(DESIGNS))
    ap.add_argument("--stall-ms", type=float, nargs="+", default=[0.0, 2.0], help="loop busy time per period")
    ap.add_argument("--stall-every-ms", type=float, default=10.0, help="the period of the simulated work")
    ap.add_argument("--rate", type=float, default=0.0, help="offered datagrams/s in all (default 0: flat out)")
    ap.add_argument("--nonblocking", action="store_true", help="senders drop (and count) what EAGAIN refuses")
    ap.add_argument("--quick", action="store_true", help="a tiny run that only checks the benchmark works")
    args = ap.parse_args(argv)
    if args.quick:
        args.messages, args.designs, args.stall_ms = 4000, ["asyncio", "uvloop", "process"], [0.0]

    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.platform()}")
    print(
        f"kernel queue: max_dgram_qlen={max_dgram_qlen()}, "
        f"measured depth {kernel_queue_depth()} datagrams (with SO_RCVBUF=8 MiB)"
    )
    print(
        f"{args.messages} datagrams from {args.senders} {'non-blocking' if args.nonblocking else 'blocking'} senders, "
        f"{args.size}-byte values, {f'{args.rate:,.0f}/s' if args.rate else 'flat out'}; "
        f"loop stalls every {args.stall_every_ms:g} ms\n"
    )
    header = (
        f"{'design':8} {'stall':>6} {'received':>9} {'dg/s':>9} {'cpu µs/dg':>9} {'loop µs':>7} {'child µs':>8} "
        f"{'dg/wake':>7} {'blocked':>8} {'off-cpu s':>9} {'dropped':>8} {'rate x':>6} {'cpu x':>6}"
    )
    print(header)
    print("-" * len(header))
    for stall in args.stall_ms:
        results = [
            run_one(
                d,
                messages=args.messages,
                senders=args.senders,
                size=args.size,
                stall_ms=stall,
                every_ms=args.stall_every_ms,
                nonblocking=args.nonblocking,
                rate=args.rate,
            )
            for d in args.designs
        ]
        base = next((r for r in results if r.design == "uvloop"), results[0])
        for r in results:
            lost = "" if r.received + r.dropped == r.sent else f"  LOST {r.sent - r.dropped - r.received}"
            print(
                f"{r.design:8} {r.stall_ms:>4g}ms {r.received:>9} {r.rate:>9,.0f} {r.cpu_us:>9.2f} {r.main_us:>7.2f} "
                f"{r.cpu_us - r.main_us:>8.2f} "
                f"{r.per_wakeup:>7.1f} "
                f"{r.blocked:>8} {r.off_cpu_s:>9.2f} {r.dropped:>8} {r.rate / base.rate if base.rate else 0:>6.2f} "
                f"{r.cpu_us / base.cpu_us if base.cpu_us else 0:>6.2f}{lost}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
