"""plog input benchmark: what parsing, checksums, reassembly and the listeners cost.

Prints, each compared in the same run:
  parse     ns per packet, fast parser vs the construct schema (ratio = how much the fast path saves)
  murmur3   MB/s of MurmurHash3 (C, the mmh3 package) and ns for a 100-byte message
  defrag    messages/s reassembled from 10 fragments, including checksums
  udp       unboxed 100-byte datagrams/s from a sender process through the UDP listener to a counting sink, per
            event loop: the listener's burst reader against asyncio's datagram transport (one datagram per callback),
            both as ratios to a bare recvfrom() loop on the same kind of socket (what the kernel allows here)
  tcp       100-byte lines/s through the TCP listener to a counting sink, per event loop
  sink      ns per unboxed datagram handled by a listener (no socket): into a counting sink, and into the daemon's
            own sink (PlogInputs: budget, message, accounting; the router replaced by a list) — the daemon's share

    .venv/bin/python bench/plog_bench.py            # full run (~30 s)
    .venv/bin/python bench/plog_bench.py --quick    # tiny counts: checks that it runs
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from types import SimpleNamespace

import uvloop

from bruce.producer.counters import Counters
from bruce.proxy.accounting.discards import DiscardTracker
from bruce.proxy.accounting.outcomes import Outcomes
from bruce.proxy.config.listeners import ListenerConfig
from bruce.proxy.daemon.plog_inputs import PlogInputs
from bruce.proxy.messages.budget import MessageBudget
from bruce.proxy.plog.defrag import Defragmenter
from bruce.proxy.plog.listeners import TcpListener, UdpListener
from bruce.proxy.plog.stats import PlogStats
from bruce.wire import plog

LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}


def _best_ns(fn: Callable[[], object], n: int, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter_ns()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter_ns() - start) / n)
    return best


def bench_parse(n: int) -> None:
    samples = {
        "unboxed 100 B": b"x" * 100,
        "command PING": plog.build_command("PING", b"token"),
        "fragment 1000 B + tags": plog.build_fragments(
            b"y" * 5000, message_id=7, fragment_size=1000, topic="events", partition_key="user-7"
        )[-1],
    }
    print("parse (ns per packet)")
    for name, packet in samples.items():
        fast = _best_ns(lambda p=packet: plog.parse_packet(p), n)
        schema = _best_ns(lambda p=packet: plog.parse_packet_schema(p), max(1, n // 10))
        print(f"  {name:24s} fast {fast:8.0f}   schema {schema:8.0f}   schema/fast {schema / fast:6.1f}x")


def bench_murmur(n: int) -> None:
    big = bytes(range(256)) * 4096  # 1 MiB
    per_mib = _best_ns(lambda: plog.murmur3_32(big), max(1, n // 1000))
    small = _best_ns(lambda: plog.murmur3_32(b"z" * 100), n)
    print(f"murmur3: {1e9 / per_mib:8.0f} MiB/s on 1 MiB; {small:5.0f} ns for 100 bytes")


def bench_defrag(n: int) -> None:
    messages = [
        [
            plog.parse_packet(p)
            for p in plog.build_fragments(bytes([i % 256]) * 10_000, message_id=i, fragment_size=1000)
        ]
        for i in range(n)
    ]
    d = Defragmenter(PlogStats("bench"))
    start = time.perf_counter()
    done = sum(1 for parts in messages for f in parts if d.add(("127.0.0.1", 5000), f) is not None)
    elapsed = time.perf_counter() - start
    print(f"defrag: {done / elapsed:8.0f} messages/s of 10 x 1000 B ({done} of {n} complete)")


class CountingSink:
    """Counts submissions and when the first and the last arrived."""

    def __init__(self) -> None:
        self.count = 0
        self.first = self.last = 0.0

    def submit(self, topic, key, value, *, partition_key, listener) -> bool:
        self.count += 1
        self.last = time.perf_counter()
        if self.count == 1:
            self.first = self.last
        return True

    def reject(self, reason, data, *, topic, listener) -> None:
        pass

    def budget_available(self, size) -> bool:
        return True

    def notify_when_free(self, callback, size) -> None:
        callback()

    def cancel_notify(self, callback) -> None:
        pass

    def fail(self, error, *, listener) -> None:
        raise SystemExit(f"plog listener {listener} failed: {error!r}")  # stops the benchmark (and its loop) loudly

    @property
    def rate(self) -> float:
        return (self.count - 1) / (self.last - self.first) if self.count > 1 and self.last > self.first else 0.0


# A separate process sends, so that the receiver has the GIL (and a core) to itself.
SENDER = """
import socket, sys
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
payload = b"m" * 100
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    for i in range(n):
        s.sendto(payload, (host, port))  # flat out: a receiver that falls behind loses datagrams (counted below)
"""


def _send(address: tuple[str, int], n: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", SENDER, address[0], str(address[1]), str(n)])


def _baseline_udp(n: int) -> tuple[float, int]:
    """Datagrams/s, and how many arrived, for a bare blocking recvfrom() loop with the same sender."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as r:
        r.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        r.bind(("127.0.0.1", 0))
        r.settimeout(0.5)
        sender = _send(r.getsockname(), n)
        got, first, last = 0, 0.0, 0.0
        try:
            while got < n:
                r.recvfrom(65536)
                last = time.perf_counter()
                got += 1
                if got == 1:
                    first = last
        except TimeoutError:
            pass
        sender.wait()
    return (got - 1) / (last - first) if got > 1 else 0.0, got


class _OnePerCallback(asyncio.DatagramProtocol):
    """asyncio's datagram transport (one datagram per callback) in front of the listener's packet handling: the
    alternative to the listener's burst reader, for comparison."""

    def __init__(self, listener: UdpListener) -> None:
        self.listener = listener

    def datagram_received(self, data: bytes, addr: tuple) -> None:
        self.listener.handle(data, addr)


async def _udp_run(reader: str, n: int) -> tuple[float, int]:
    sink = CountingSink()
    listener = UdpListener(ListenerConfig(protocol="udp", port=0, topic="bench"), sink)
    transport = None
    if reader == "burst":
        await listener.start()
        address = listener.address
    else:
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        sock.bind(("127.0.0.1", 0))
        transport, _ = await loop.create_datagram_endpoint(lambda: _OnePerCallback(listener), sock=sock)
        address = sock.getsockname()
    sender = _send(address, n)
    last, idle_since = -1, time.perf_counter()
    while time.perf_counter() - idle_since < 0.5 and sink.count < n:
        await asyncio.sleep(0.02)
        if sink.count != last:
            last, idle_since = sink.count, time.perf_counter()
    await asyncio.to_thread(sender.wait)
    if transport is not None:
        transport.close()
    else:
        await listener.stop()
    return sink.rate, sink.count


def bench_udp(n: int, repeat: int) -> None:
    """Medians of ``repeat`` runs each (the machine is shared and noisy)."""
    runs = [_baseline_udp(n) for _ in range(repeat)]
    baseline = statistics.median(rate for rate, _ in runs)
    got = statistics.median(got for _, got in runs)
    print(
        f"udp: 100-byte datagrams from another process, medians of {repeat}; bare recvfrom loop {baseline:8.0f} "
        f"datagrams/s ({got:.0f}/{n} received)"
    )
    for name, factory in LOOPS.items():
        rates = {}
        for reader in ("transport", "burst"):
            results = []
            for _ in range(repeat):
                with asyncio.Runner(loop_factory=factory) as runner:
                    results.append(runner.run(_udp_run(reader, n)))
            rates[reader] = rate = statistics.median(r for r, _ in results)
            got = statistics.median(g for _, g in results)
            print(
                f"  {name:8s} {reader:9s} {rate:8.0f} datagrams/s ({got:.0f}/{n} received)   vs bare loop "
                f"{rate / baseline if baseline else 0:5.2f}x"
            )
        ratio = rates["burst"] / rates["transport"] if rates["transport"] else 0
        print(f"  {name:8s} burst/transport {ratio:5.2f}x")


def bench_tcp(n: int) -> None:
    print("tcp:")
    for name, factory in LOOPS.items():

        async def run() -> float:
            sink = CountingSink()
            listener = TcpListener(ListenerConfig(protocol="tcp", port=0, topic="bench"), sink)
            await listener.start()
            _, writer = await asyncio.open_connection(*listener.address)
            chunk = (b"l" * 99 + b"\n") * 1000
            start = time.perf_counter()
            for _ in range(n // 1000):
                writer.write(chunk)
                await writer.drain()
            while sink.count < (n // 1000) * 1000:
                await asyncio.sleep(0.001)
            elapsed = time.perf_counter() - start
            writer.close()
            await listener.stop()
            return sink.count / elapsed

        with asyncio.Runner(loop_factory=factory) as runner:
            print(f"  {name:8s} {runner.run(run()):10.0f} lines/s")


def bench_sink(n: int) -> None:
    config = ListenerConfig(protocol="udp", port=0, topic="bench", name="bench")
    packet, addr = b"m" * 100, ("127.0.0.1", 5000)
    counting = UdpListener(config, CountingSink())
    counters = Counters()
    budget = MessageBudget(1 << 40, counters=counters)
    outcomes = Outcomes(budget, DiscardTracker(counters=counters, log_discards=False))
    routed: list = []
    router = SimpleNamespace(route=routed.append, route_many=routed.extend)
    daemon = UdpListener(
        config, PlogInputs((config,), sink=router, budget=budget, outcomes=outcomes, counters=counters)
    )
    plain = _best_ns(lambda: counting.handle(packet, addr), n)
    full = _best_ns(lambda: daemon.handle(packet, addr), n)
    ratio = full / plain
    print(f"sink: counting {plain:6.0f} ns/datagram   daemon's PlogInputs {full:6.0f} ns/datagram   ({ratio:4.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny counts: only checks that it runs")
    args = parser.parse_args()
    scale = 1 if args.quick else 100
    bench_parse(200 * scale)
    bench_murmur(1000 * scale)
    bench_defrag(20 * scale)
    bench_udp(3000 * scale, 1 if args.quick else 3)
    bench_tcp(20_000 * scale)
    bench_sink(1000 * scale)


if __name__ == "__main__":
    main()
