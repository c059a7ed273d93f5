"""Accounting benchmark: what the rate limiter, discard tracker, discard log and debug log cost per message, and how
much a discard storm delays the event loop with the discard log on its writer thread versus written inline.

Part 1 prints nanoseconds per call, each as a ratio to an empty method call measured in the same run.
Part 2 runs an asyncio loop with a probe that wakes every millisecond and records how late it was, while a storm
records discards at an offered rate (default 100,000/s, then as fast as it can), yielding to the loop every 500
discards. Designs:
  thread  DiscardLog: the loop formats a line and appends it to a bounded queue; a writer thread writes
  inline  the loop formats and writes each 500-discard chunk itself (os.write, rotation, archive cleanup)
``--disk-stall-ms X`` makes every file write take X ms longer (a slow or saturated disk).

    .venv/bin/python bench/accounting_bench.py                       # both parts, real disk and a 5 ms disk stall
    .venv/bin/python bench/accounting_bench.py --quick               # a short run: checks that it runs
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bruce.producer.reasons import DiscardReason
from bruce.proxy.accounting.discard_log import DiscardLog, DiscardLogFile, format_discard_line
from bruce.proxy.accounting.discards import DiscardTracker
from bruce.proxy.accounting.msg_debug import MessageDebugLog
from bruce.proxy.config.model import RateLimit
from bruce.proxy.routing.ratelimit import RateLimiter

CHUNK = 500


class _Noop:
    def call(self, topic: str, now: int) -> bool:
        return True


def _ns_per_call(fn: Callable[[int], object], n: int, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter_ns()
        fn(n)
        best = min(best, (time.perf_counter_ns() - start) / n)
    return best


def part1(n: int, tmp: Path) -> None:
    topics = [f"topic-{i}" for i in range(100)]
    noop = _Noop()

    def baseline(k: int) -> None:
        call = noop.call
        for i in range(k):
            call(topics[i % 100], i)

    disabled = RateLimiter(None)

    def limiter_off(k: int) -> None:
        for i in range(k):
            if disabled.enabled:
                disabled.allow(topics[i % 100], i)

    limited = RateLimiter(lambda t: RateLimit(1000, 10**9))

    def limiter_on(k: int) -> None:
        allow = limited.allow
        for i in range(k):
            allow(topics[i % 100], i)

    unlimited = RateLimiter(lambda t: None)

    def limiter_unlimited(k: int) -> None:
        allow = unlimited.allow
        for i in range(k):
            allow(topics[i % 100], i)

    debug = MessageDebugLog(str(tmp / "debug"))

    def debug_off(k: int) -> None:
        for i in range(k):
            if debug.active:
                debug.on_receive(topics[i % 100], b"", b"v", i)

    tracker = DiscardTracker(log_discards=False)
    value = b"v" * 100

    def record(k: int) -> None:
        rec = tracker.record
        for i in range(k):
            rec(DiscardReason.NO_AVAILABLE_PARTITIONS, topics[i % 100], b"", value, i)

    log = DiscardLog(str(tmp / "bench-discard.log"), max_queued_bytes=1 << 32, max_file_bytes=1 << 30)
    log.start()
    logged = DiscardTracker(log_discards=False, discard_log=log)

    def record_logged(k: int) -> None:
        rec = logged.record
        for i in range(k):
            rec(DiscardReason.NO_AVAILABLE_PARTITIONS, topics[i % 100], b"", value, i)

    def format_only(k: int) -> None:
        for i in range(k):
            format_discard_line(i, i, "DISC", "NO_AVAILABLE_PARTITIONS", b"topic-1", b"", value, 256)

    base = _ns_per_call(baseline, n)
    print(f"part 1: ns per call (best of 5 x {n:,}); ratio to an empty method call ({base:.0f} ns)")
    rows = [
        ("rate limiter disabled (enabled check)", limiter_off),
        ("rate limiter allow(), limited topic", limiter_on),
        ("rate limiter allow(), unlimited topic", limiter_unlimited),
        ("debug log off (active check)", debug_off),
        ("tracker.record, no discard log", record),
        ("tracker.record + discard log line", record_logged),
        ("format_discard_line alone", format_only),
    ]
    for name, fn in rows:
        ns = _ns_per_call(fn, n)
        print(f"  {name:40s} {ns:8.0f} ns  {ns / base:5.2f}x")
    log.close()


async def _storm(design: str, seconds: float, stall_ms: float, rate: float, tmp: Path) -> dict:
    path = tmp / f"storm-{design}-{stall_ms}-{rate}.log"
    if design == "thread":
        log = DiscardLog(str(path), max_file_bytes=1 << 20, max_archive_bytes=8 << 20)
        log.start()
        file = log.file
    else:
        file = DiscardLogFile(str(path), max_file_bytes=1 << 20, max_archive_bytes=8 << 20)
        file.open()
    if stall_ms:
        real_write = file._write

        def slow_write(chunk: list[bytes]) -> None:
            time.sleep(stall_ms / 1000)
            real_write(chunk)

        file._write = slow_write  # type: ignore[method-assign]
    tracker = DiscardTracker(log_discards=False, discard_log=log if design == "thread" else None)
    lags: list[float] = []
    stop = False

    async def probe() -> None:
        while not stop:
            t = time.perf_counter()
            await asyncio.sleep(0.001)
            lags.append(time.perf_counter() - t - 0.001)

    probe_task = asyncio.create_task(probe())
    value = b"v" * 100
    done = 0
    end = time.perf_counter() + seconds
    started = time.perf_counter()
    while time.perf_counter() < end:
        lines = []
        for i in range(CHUNK):
            tracker.record(DiscardReason.NO_AVAILABLE_PARTITIONS, "storm", b"", value, i)
            if design == "inline":
                lines.append(format_discard_line(i, i, "DISC", "NO_AVAILABLE_PARTITIONS", b"storm", b"", value, 256))
        if design == "inline":
            file.write_lines(lines)
        done += CHUNK
        ahead = done / rate - (time.perf_counter() - started) if rate else 0.0
        await asyncio.sleep(max(0.0, ahead))
    elapsed = time.perf_counter() - started
    stop = True
    await probe_task
    dropped = 0
    if design == "thread":
        dropped = log.counters.get("DiscardLogLinesDropped")
        await asyncio.to_thread(log.close)
    else:
        file.close()
    lags.sort()
    return {
        "rate": done / elapsed,
        "p50": statistics.median(lags) * 1000,
        "p99": lags[int(len(lags) * 0.99)] * 1000,
        "max": lags[-1] * 1000,
        "dropped": dropped,
    }


def part2(seconds: float, stalls: list[float], rates: list[float], tmp: Path) -> None:
    print(f"\npart 2: discard storm for {seconds:.1f} s per design; event-loop lag of a 1 ms probe")
    for rate in rates:
        for stall in stalls:
            results = {d: asyncio.run(_storm(d, seconds, stall, rate, tmp)) for d in ("thread", "inline")}
            target = f"{rate:,.0f}/s" if rate else "as fast as possible"
            print(f"  offered rate: {target}; disk stall per write: {stall:g} ms")
            for design, r in results.items():
                print(
                    f"    {design:7s} {r['rate']:10,.0f} discards/s  lag p50 {r['p50']:6.2f} ms  p99 {r['p99']:7.2f} ms"
                    f"  max {r['max']:7.2f} ms  log lines dropped {r['dropped']:,}"
                )
            t, i = results["thread"], results["inline"]
            p99, worst = i["p99"] / max(t["p99"], 1e-6), i["max"] / max(t["max"], 1e-6)
            print(f"    ratio inline/thread: lag p99 {p99:.1f}x, max {worst:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a short run that only checks the script works")
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--disk-stall-ms", type=float, action="append", help="default: 0 and 5")
    parser.add_argument(
        "--rate", type=float, action="append", help="offered discards/s, 0 = unpaced; default 100000, 0"
    )
    args = parser.parse_args()
    stalls = args.disk_stall_ms or [0.0, 5.0]
    calls, seconds = (2_000, 0.2) if args.quick else (args.calls, args.seconds)
    with tempfile.TemporaryDirectory(prefix="bruce-accounting-bench-") as tmp:
        part1(calls, Path(tmp))
        part2(seconds, stalls, args.rate or [100_000.0, 0.0], Path(tmp))


if __name__ == "__main__":
    main()
