"""plog input benchmark: what parsing, checksums, reassembly and the listeners cost.

Prints, each compared in the same run:
  parse     ns per packet, fast parser vs the construct schema (ratio = how much the fast path saves)
  murmur3   MB/s of MurmurHash3 (C, the mmh3 package) and ns for a 100-byte message
  defrag    messages/s reassembled from 10 fragments, including checksums
  udp       unboxed 100-byte datagrams/s through the UDP listener to a counting sink, per event loop, as a ratio to a
            plain non-blocking recvfrom() loop on the same kind of socket (what the kernel allows here)
  tcp       100-byte lines/s through the TCP listener to a counting sink, per event loop

    .venv/bin/python bench/plog_bench.py            # full run (~20 s)
    .venv/bin/python bench/plog_bench.py --quick    # tiny counts: checks that it runs
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import threading
import time
from collections.abc import Callable

import uvloop

from bruce.proxy.plog.config import ListenerConfig
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
    def __init__(self) -> None:
        self.count = 0

    def submit(self, topic, key, value, *, partition_key, listener) -> bool:
        self.count += 1
        return True

    def budget_available(self) -> bool:
        return True

    def notify_when_free(self, callback) -> None:
        callback()

    def cancel_notify(self, callback) -> None:
        pass


def _send_datagrams(address: tuple[str, int], n: int, stop: threading.Event) -> None:
    payload = b"m" * 100
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for i in range(n):
            if stop.is_set():
                return
            s.sendto(payload, address)
            if i % 64 == 63:
                time.sleep(0)  # let the receiver run on a 2-core machine


def _baseline_udp(n: int) -> float:
    """Datagrams/s a bare non-blocking recvfrom loop reaches with the same sender."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as r:
        r.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        r.bind(("127.0.0.1", 0))
        r.settimeout(0.5)
        stop = threading.Event()
        sender = threading.Thread(target=_send_datagrams, args=(r.getsockname(), n, stop))
        got = 0
        start = time.perf_counter()
        sender.start()
        try:
            while got < n:
                r.recvfrom(65536)
                got += 1
        except TimeoutError:
            pass
        elapsed = time.perf_counter() - start
        stop.set()
        sender.join()
    return got / elapsed


def bench_udp(n: int) -> None:
    baseline = _baseline_udp(n)
    print(f"udp: bare recvfrom loop {baseline:8.0f} datagrams/s")
    for name, factory in LOOPS.items():

        async def run() -> tuple[float, int]:
            sink = CountingSink()
            listener = UdpListener(ListenerConfig(protocol="udp", port=0, topic="bench"), sink)
            await listener.start()
            stop = threading.Event()
            sender = threading.Thread(target=_send_datagrams, args=(listener.address, n, stop))
            start = time.perf_counter()
            sender.start()
            last, idle_since = -1, time.perf_counter()
            while sink.count < n and time.perf_counter() - idle_since < 0.5:
                await asyncio.sleep(0.01)
                if sink.count != last:
                    last, idle_since = sink.count, time.perf_counter()
            elapsed = idle_since - start
            stop.set()
            await asyncio.to_thread(sender.join)
            await listener.stop()
            return sink.count / elapsed, sink.count

        with asyncio.Runner(loop_factory=factory) as runner:
            rate, got = runner.run(run())
        print(
            f"  {name:8s} listener {rate:8.0f} datagrams/s ({got}/{n} received)   vs bare loop {rate / baseline:5.2f}x"
        )


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny counts: only checks that it runs")
    args = parser.parse_args()
    scale = 1 if args.quick else 100
    bench_parse(200 * scale)
    bench_murmur(1000 * scale)
    bench_defrag(20 * scale)
    bench_udp(2000 * scale)
    bench_tcp(20_000 * scale)


if __name__ == "__main__":
    main()
