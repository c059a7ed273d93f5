"""Spool benchmark: the record codec and the writer (docs/spool.md).

``--codec``: CPU nanoseconds per message (best of many short rounds) to encode a burst of 64 messages of 100-byte
values with the fast encoder (AnyPartition with a null key, and PartitionKey with an 8-byte key), the same through
the construct spec (ratio), and the intake's own datagram parse of the same message measured in the same run, for
scale; then reading records back (``scan_segment``, what replay does).

``--writer``: ``Spool.append`` of bursts of 64 x 100 B into a temporary directory (``--dir`` to choose the
filesystem), with ``fsync_ms`` = 100 (the timer ticks after every burst) and 0 (fdatasync before each burst is
released): messages/s, wall and CPU µs per message, the longest ``append`` + ``tick`` and the total time of
those over 1 ms (how long the event loop would stall), fsyncs and their latency; then ``done_run`` per message,
with segments deleted as they complete. The "(inline)" row syncs on the timer in the caller's thread instead of
the sync thread, for comparison.

``--path``: the daemon's own spool work in-process, without the sockets, the router or a broker: the datagram
intake's burst path (parse, append, budget) fed bursts of 256 datagrams, and the outcomes marking delivered batches
of 256 done, with the spool off and on, alternating: CPU µs per message and the difference (what the spool adds to
the event loop per message, without the noise of the processes around it).

``--journal``: the batch journal's work per batch (docs/spool.md, "Exactly once across crashes"): the SENT record
(with the batch's messages' spool sequence runs built from the messages) before a send and the FINISHED record after
its acknowledgement, for batches of 1, 64 and 1,000 messages: CPU µs per batch and per message.

``--daemon``: the ``bruce`` daemon end to end (bench/proxy_bench.py's run: 2 sender processes, the ``plain``
configuration, tansu, every message read back) without the spool, then with ``--spool_dir`` (fsync_ms 100), in
the same run: msgs/s and the daemon's CPU per message, and the ratios spool/no spool. The CPU added is also split
by process: the event loop's process (it does all the spool's work, its sync thread included) and the intake reader
process (it never touches the spool; what it adds or saves between two runs is how the scheduler treated it, which
moves either way on a busy machine). With ``--rounds``, the medians of each.

    .venv/bin/python bench/spool_bench.py                 # both parts
    .venv/bin/python bench/spool_bench.py --codec         # one part
    .venv/bin/python bench/spool_bench.py --daemon --messages 500000   # the daemon with and without the spool
    .venv/bin/python bench/spool_bench.py --daemon --rounds 3           # alternating three times: the medians
    .venv/bin/python bench/spool_bench.py --daemon --profile /tmp/sp    # and the CPU added by stage (sampled)
    .venv/bin/python bench/spool_bench.py --path          # the spool's work in the event loop, per message
    .venv/bin/python bench/spool_bench.py --journal       # the batch journal's cost per batch and per message
    .venv/bin/python bench/spool_bench.py --quick         # a short run: checks that it runs
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import own_cpu_s

from bruce.proxy.spool import Spool, SpoolConfig, SpoolMessage, SpoolSlot
from bruce.proxy.spool.format import encode_burst, encode_burst_schema, encode_header
from bruce.proxy.spool.scan import scan_segment
from bruce.wire.datagram import build_any_partition, parse_datagram

BURST = 64
VALUE = b"v" * 100


def best_ns(fn: Callable[[], object], per: int, repeat: int, rounds: int) -> float:
    """Best of ``rounds`` of ``repeat`` calls of ``fn``, in nanoseconds of this thread's CPU per item (``per`` items
    per call): CPU time and many short rounds, so that the best round is one no other process disturbed."""
    best = float("inf")
    gc.disable()
    try:
        for _ in range(rounds):
            start = time.thread_time_ns()
            for _ in range(repeat):
                fn()
            best = min(best, (time.thread_time_ns() - start) / (repeat * per))
    finally:
        gc.enable()
    return best


def codec(quick: bool) -> None:
    repeat, rounds = (50, 2) if quick else (200, 50)
    plain = [SpoolMessage(b"topic-name", None, None, VALUE, 1_700_000_000_000)] * BURST
    keyed = [SpoolMessage(b"topic-name", 0x444, b"key-0001", VALUE, 1_700_000_000_000)] * BURST
    datagram = build_any_partition("topic-name", VALUE, b"", timestamp=1_700_000_000_000)
    parse_ns = best_ns(lambda: [parse_datagram(datagram) for _ in range(BURST)], BURST, repeat, rounds)
    print(f"codec: bursts of {BURST} messages, 100-byte values (CPU time, best of {rounds} x {repeat} bursts)")
    print(f"  {'intake datagram parse (scale)':42} {parse_ns:7.0f} ns/msg")
    for name, burst in (("AnyPartition, null key", plain), ("PartitionKey, 8-byte key", keyed)):
        fast = best_ns(lambda b=burst: encode_burst(0, b), BURST, repeat, rounds)
        spec = best_ns(lambda b=burst: encode_burst_schema(0, b), BURST, max(1, repeat // 20), rounds)
        print(
            f"  encode_burst, {name:27} {fast:7.0f} ns/msg  {fast / parse_ns:5.2f}x the parse   "
            f"spec {spec:7.0f} ns/msg ({spec / fast:.0f}x slower)"
        )
    segment = encode_header(0, 0) + b"".join(encode_burst(i * BURST, plain) for i in range(100))
    scan_ns = best_ns(lambda: scan_segment(segment, name_base=0, last=True), BURST * 100, max(1, repeat // 50), rounds)
    print(f"  {'scan_segment (replay), AnyPartition':42} {scan_ns:7.0f} ns/msg")


class InlineSyncSpool(Spool):
    """The timer's sync in the caller's thread, as without the sync thread: for comparison only."""

    def tick(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if self._dirty and self._fd is not None and now >= self._last_sync + self.config.fsync_ms / 1000:
            self._sync()


def writer(quick: bool, directory: Path | None) -> None:
    bursts = 200 if quick else 5000
    burst = [SpoolMessage(b"topic-name", None, None, VALUE, 1_700_000_000_000)] * BURST
    total = bursts * BURST
    with tempfile.TemporaryDirectory(prefix="bruce-spool-bench-", dir=directory) as tmp:
        fs = os.statvfs(tmp)
        print(f"writer: {bursts} bursts of {BURST} x 100 B into {tmp} ({fs.f_bsize}-byte blocks)")
        for name, kind, fsync_ms in (
            ("fsync_ms=100", Spool, 100),
            ("  (inline)", InlineSyncSpool, 100),
            ("fsync_ms=0", Spool, 0),
        ):
            where = Path(tmp) / f"{kind.__name__}{fsync_ms}"
            with kind.open(SpoolConfig(where, fsync_ms=fsync_ms, max_bytes=1 << 40)) as spool:
                firsts = []
                stall = stalled = 0
                cpu0, wall0 = own_cpu_s(), time.perf_counter()
                for _ in range(bursts):
                    start = time.perf_counter_ns()
                    firsts.append(spool.append(burst))
                    spool.tick()
                    took = time.perf_counter_ns() - start
                    stall = max(stall, took)
                    stalled += took if took > 1_000_000 else 0
                wall, cpu = time.perf_counter() - wall0, own_cpu_s() - cpu0
                assert spool.degraded is None, spool.degraded
                written = spool.bytes
                start = time.perf_counter()
                for first in firsts:
                    spool.done_run(first, BURST)
                done_ns = (time.perf_counter() - start) / total * 1e9
                print(
                    f"  {name:12} {total / wall:10,.0f} msgs/s  {wall / total * 1e6:6.2f} µs/msg wall  "
                    f"{cpu / total * 1e6:6.2f} µs/msg CPU  longest append+tick {stall / 1e3:6.0f} µs  "
                    f"calls over 1 ms {stalled / 1e6:6.1f} ms in all  "
                    f"{written / total:.0f} B/msg on disk  "
                    f"fsyncs {spool.syncer.fsyncs} (last {spool.syncer.last_us} µs, max {spool.syncer.max_us} µs)  "
                    f"done_run {done_ns:.0f} ns/msg"
                )


def daemon(messages: int, directory: Path | None, rounds: int = 1, profile: Path | None = None) -> None:
    """The daemon without and with the spool, alternating, ``rounds`` times in this run (see the module docstring)."""
    import statistics

    import proxy_bench

    from bruce.proxy.daemon.embedded import EmbeddedBroker

    print(f"\ndaemon: {messages:,} x 100 B from 2 senders, plain configuration, without and with the spool")
    with tempfile.TemporaryDirectory(prefix="spool-daemon-", dir=directory) as tmp, EmbeddedBroker() as broker:
        work = Path(tmp)
        rates, cpus, loops, readers, kernels = [], [], [], [], []
        added: dict[tuple[str, str], list[float]] = {}  # (process, stage) -> ns/msg on minus off, per round
        for n in range(rounds):
            runs = []
            for label, extra in (("off", ()), ("on", ("--spool_dir", str(work / f"spool-{n}")))):
                r = proxy_bench.run_one(
                    "plain",
                    broker,
                    messages,
                    2,
                    262144,
                    work,
                    warmup=1000,
                    blocking=True,
                    extra_args=extra,
                    label=label,
                    profile=None if profile is None else profile / f"round-{n}",
                )
                lost = r.sent - r.read_back - r.discarded
                print(
                    f"  spool {label:3}  {r.rate:>9,.0f} msgs/s  daemon CPU {r.cpu_us:.2f} µs/msg "
                    f"(loop {r.loop_cpu_us:.2f} of which kernel {r.loop_sys_us:.2f}, reader {r.reader_cpu_us:.2f})"
                    f"  read back {r.read_back:,}  lost {lost}"
                )
                runs.append(r)
            off, on = runs
            if off.stages is not None and on.stages is not None:
                before = {(r["process"], r["stage"]): r["ns_per_msg"] for r in off.stages}
                after = {(r["process"], r["stage"]): r["ns_per_msg"] for r in on.stages}
                for key in before.keys() | after.keys():
                    added.setdefault(key, []).append(after.get(key, 0.0) - before.get(key, 0.0))
            rates.append(on.rate / off.rate)
            cpus.append(on.cpu_us - off.cpu_us)
            loops.append(on.loop_cpu_us - off.loop_cpu_us)
            readers.append(on.reader_cpu_us - off.reader_cpu_us)
            kernels.append(on.loop_sys_us - off.loop_sys_us)
            print(
                f"  ratio on/off: rate {on.rate / off.rate:.2f}x, CPU per message {on.cpu_us / off.cpu_us:.2f}x"
                f" ({cpus[-1]:+.2f} µs: loop {loops[-1]:+.2f} of which kernel {kernels[-1]:+.2f},"
                f" reader {readers[-1]:+.2f})"
            )
            left = sorted((work / f"spool-{n}").glob("*.seg*"))
            print(f"  spool files left after the clean stop: {len(left)}")
        if rounds > 1:
            print(
                f"  median of {rounds} rounds: rate {statistics.median(rates):.2f}x,"
                f" CPU {statistics.median(cpus):+.2f} µs per message (loop process {statistics.median(loops):+.2f},"
                f" of which kernel {statistics.median(kernels):+.2f},"
                f" reader process {statistics.median(readers):+.2f})"
            )
        if added:
            print(f"  CPU added by stage, ns per message (median of {rounds} rounds; sampled, ±10-20 % per stage):")
            for (process, stage), diffs in sorted(added.items(), key=lambda kv: -statistics.median(kv[1])):
                print(f"    {process:<20} {stage:<45} {statistics.median(diffs):+7.0f}")


def path(quick: bool, directory: Path | None) -> None:
    """The intake's burst path and the done marking, spool off and on, alternating (see the module docstring)."""
    from types import SimpleNamespace

    from bruce.producer.counters import Counters
    from bruce.proxy.accounting.discards import DiscardTracker
    from bruce.proxy.accounting.outcomes import Outcomes
    from bruce.proxy.intake.intake import DatagramIntake
    from bruce.proxy.messages.budget import MessageBudget

    burst, total = 256, 20_000 if quick else 400_000
    stamp = 1_700_000_000_000
    datagrams = [build_any_partition("topic-0001", b"%08d" % i + VALUE[8:], timestamp=stamp) for i in range(burst)]

    def one(spool_dir: Path | None) -> float:
        counters = Counters()
        budget = MessageBudget(10**12, counters=counters)
        spool = SpoolSlot(Spool.open(SpoolConfig(spool_dir)) if spool_dir is not None else None)
        outcomes = Outcomes(budget, DiscardTracker(interval_s=600, log_discards=False, counters=counters), spool=spool)
        batch: list = []
        router = SimpleNamespace(route=batch.append, route_many=batch.extend)
        intake = DatagramIntake(
            "/nonexistent/b.sock",
            sink=router,
            discards=outcomes,
            budget=budget,
            counters=counters,
            spool=spool,
            reader="loop",
        )
        spool = spool.spool
        start = own_cpu_s()
        for _ in range(total // burst):
            intake.feed(datagrams, 1.0)
            outcomes.delivered("topic-0001", 0, 0, batch)
            batch.clear()
            if spool is not None:
                spool.tick()
        cpu = own_cpu_s() - start
        if spool is not None:
            spool.close()
        return cpu / total * 1e6

    print(f"\npath: the intake's burst path and the done marking in-process, bursts of {burst} x 100 B")
    with tempfile.TemporaryDirectory(prefix="spool-path-", dir=directory) as tmp:
        diffs = []
        for n in range(1 if quick else 3):
            off, on = one(None), one(Path(tmp) / f"s{n}")
            diffs.append(on - off)
            print(f"  spool off {off:.2f} µs/msg CPU, on {on:.2f} µs/msg CPU: +{on - off:.2f} µs per message")
        print(f"  median: +{sorted(diffs)[len(diffs) // 2]:.2f} µs per message")


def journal(quick: bool, directory: Path | None) -> None:
    """The batch journal's records per batch (see the module docstring)."""
    from types import SimpleNamespace

    from bruce.producer.idempotence.journal import Journal, PartJournal

    print("\njournal: SENT before a batch is sent + FINISHED after its acknowledgement (the daemon's, spool runs)")
    with tempfile.TemporaryDirectory(prefix="spool-journal-", dir=directory) as tmp:
        for size in (1, 64, 1000):
            batches = 2_000 if quick else max(20_000, 2_000_000 // size)
            j = Journal(Path(tmp) / f"j{size}")
            j.open()
            hook = PartJournal(j, payload=False)
            messages = [SimpleNamespace(spool_seq=i) for i in range(size)]
            parts, items = [], []
            for n in range(batches):
                part = SimpleNamespace(journal_id=-1, messages=messages, data=b"")
                batch = SimpleNamespace(tp=("topic-0001", n % 4), producer_id=7, producer_epoch=0, count=size)
                batch.base_sequence, batch.offset, batch.records = n * size, n * size, part
                parts.append(part)
                items.append(batch)
            gc.disable()
            start = own_cpu_s()
            for part, batch in zip(parts, items, strict=True):
                hook.sent(part, batch)
                hook.finished(batch)
            cpu = own_cpu_s() - start
            gc.enable()
            j.close()
            per_batch = cpu / batches * 1e6
            print(f"  batches of {size:>5}: {per_batch:6.2f} µs CPU per batch, {per_batch / size:6.3f} µs per message")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--codec", action="store_true", help="only the codec")
    parser.add_argument("--writer", action="store_true", help="only the writer")
    parser.add_argument("--path", action="store_true", help="only the spool's work in the event loop's path")
    parser.add_argument("--daemon", action="store_true", help="only the daemon with and without the spool")
    parser.add_argument("--journal", action="store_true", help="only the batch journal's cost per batch")
    parser.add_argument("--messages", type=int, default=500_000, help="--daemon: messages per run")
    parser.add_argument("--rounds", type=int, default=1, help="--daemon: alternate without and with this many times")
    parser.add_argument("--dir", type=Path, help="where the writer's temporary spool goes (default: the temp dir)")
    parser.add_argument("--quick", action="store_true", help="a short run")
    parser.add_argument("--profile", type=Path, help="--daemon: sample both daemon processes (bench/proxy_bench.py)")
    args = parser.parse_args()
    both = not args.codec and not args.writer and not args.daemon and not args.path and not args.journal
    if args.codec or both:
        codec(args.quick)
    if args.writer or both:
        writer(args.quick, args.dir)
    if args.path or both:
        path(args.quick, args.dir)
    if args.journal or both:
        journal(args.quick, args.dir)
    if args.daemon:
        daemon(20_000 if args.quick else args.messages, args.dir, args.rounds, args.profile)


if __name__ == "__main__":
    main()
