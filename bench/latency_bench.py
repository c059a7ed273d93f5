"""Latency at fixed rates: send → delivery for bruce.producer and confluent-kafka, and the daemon's datagram → ACK.

Every message carries its send time in its value (8 bytes, ``time.perf_counter()``: CLOCK_MONOTONIC on Linux, one
clock for every process of the machine). Each run sends at a fixed rate (paced every half millisecond from the
clock, so the rate holds on average and bursts stay under a millisecond's worth) for ``--seconds``; the first
half-second is warm-up and not counted. Against one tansu started here (proxy/daemon/embedded.py), a fresh one-partition
topic (four for the daemon) per run.

- bruce.producer: ``send`` per message; delivery = when the producer hands the acknowledged batch to its outcome
  sink (in its event loop, the moment a ``Message`` handle resolves).
- confluent-kafka: ``produce`` per message with ``poll(0)`` on every pacing step; delivery = librdkafka's own
  ``Message.latency()`` (``produce()`` → the broker's acknowledgement, measured in librdkafka's thread, so the pacing
  loop's poll cadence does not add to it).
- Both with acks=1 and equal batching: linger 5 ms, at most 10,000 messages and 1 MB per batch (our defaults, set
  explicitly for confluent-kafka).
- The daemon: ``bruce`` in this process (its event loop on a thread, its intake reader process as usual), one sender
  process writing AnyPartition datagrams to its socket (blocking sends: time waiting for room counts), per-topic
  batching of 5 ms (equal to the producers' linger), no compression; delivery = when the daemon settles the
  acknowledged batch (a hook on its ``Outcomes.delivered``).

Prints p50 / p99 / p99.9 in milliseconds and the rate reached; ``--json FILE`` also writes each run's CDF for
bench/report.py.

    .venv/bin/python bench/latency_bench.py                     # 1k, 10k, 100k msgs/s, 3 s each: about 2 minutes
    .venv/bin/python bench/latency_bench.py --rates 1000,10000 --seconds 2 --json /tmp/latency.json
    .venv/bin/python bench/latency_bench.py --quick             # 1k msgs/s for 1 s: checks that it runs
    .venv/bin/python bench/latency_bench.py --no-daemon --gc-off  # the collector's share of our tail
    .venv/bin/python bench/latency_bench.py --no-daemon --freeze-gc  # ours with the program's state frozen at start
    .venv/bin/python bench/latency_bench.py --no-daemon --peer-one-in-flight  # confluent-kafka pipelining as we do
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import multiprocessing as mp
import socket
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import machine

from bruce.producer import Producer, ProducerConfig, new_event_loop
from bruce.proxy.config import configure
from bruce.proxy.daemon.daemon import Daemon
from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.wire.datagram import build_any_partition

SIZE = 100  # value bytes
WARMUP_S = 0.5
STEP_S = 0.0005  # pacing step
LINGER_MS = 5
BATCH_MESSAGES = 10_000
BATCH_BYTES = 1_000_000
CDF_POINTS = 400
_STAMP = struct.Struct("d")
DAEMON_CONFIG = f"""
[batching]
produce_request_data_limit = 1048576
message_max_bytes = 1000000
combined_topics = {{ enable = false }}
default_topic = {{ action = "per_topic", config = "bench" }}
[batching.named_configs.bench]
time = {LINGER_MS}
messages = "disable"
bytes = {BATCH_BYTES}
[compression]
default_topic = "none"
[compression.named_configs.none]
type = "none"
[[initial_brokers]]  # replaced by --initial_brokers
host = "127.0.0.1"
"""


@dataclass
class Run:
    """One client at one rate: latencies in seconds of the messages sent after the warm-up."""

    client: str
    rate: int
    seconds: float
    sent: int = 0
    achieved: float = 0.0  # msgs/s actually offered
    latencies: list[float] = field(default_factory=list)

    def quantile(self, q: float) -> float:
        s = sorted(self.latencies)
        return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")

    def summary(self) -> dict[str, Any]:
        s = sorted(self.latencies)
        cdf = [[s[min(len(s) - 1, int(i / CDF_POINTS * len(s)))] * 1000, i / CDF_POINTS] for i in range(CDF_POINTS)]
        cdf += [[s[min(len(s) - 1, int(q * len(s)))] * 1000, q] for q in (0.999, 0.9999)] + [[s[-1] * 1000, 1.0]]
        return {
            "client": self.client,
            "rate": self.rate,
            "achieved": round(self.achieved),
            "sent": self.sent,
            "counted": len(s),
            **{
                k: round(self.quantile(q) * 1000, 3) for k, q in (("p50_ms", 0.5), ("p99_ms", 0.99), ("p999_ms", 0.999))
            },
            "max_ms": round(s[-1] * 1000, 3),
            "cdf_ms": sorted(cdf),
        }


def _value(now: float) -> bytes:
    return _STAMP.pack(now) + b"v" * (SIZE - _STAMP.size)


def _stamp(value: bytes | memoryview) -> float:
    return _STAMP.unpack_from(value)[0]


# ---------------------------------------------------------------------------------------------- the producers


def run_bruce(address: str, topic: str, rate: int, seconds: float, freeze: bool = False) -> Run:
    """``freeze``: ``Producer(freeze_gc=True)`` (what the program holds at start is frozen; undone after the run)."""
    run = Run("bruce.producer, gc frozen" if freeze else "bruce.producer", rate, seconds)
    counted_from = 0.0
    failed: list[object] = []

    class Sink:
        def delivered(self, topic: str, partition: int, base_offset: int, messages: Sequence[Any]) -> None:
            now = time.perf_counter()
            add = run.latencies.append
            for m in messages:
                sent = _stamp(m.value)
                if sent >= counted_from:
                    add(now - sent)

        def discarded(self, topic: str, messages: Sequence[Any], reason: object) -> None:
            failed.append(reason)

        def possible_duplicates(self, topic: str, messages: Sequence[Any]) -> None:
            pass

    async def main() -> None:
        nonlocal counted_from
        config = ProducerConfig(
            bootstrap_servers=(address,),
            acks=1,
            linger_ms=LINGER_MS,
            batch_num_messages=BATCH_MESSAGES,
            batch_size=BATCH_BYTES,
            queue_buffering_max_messages=int(rate * seconds) + 1,
        )
        async with Producer(config, sink=Sink(), freeze_gc=freeze) as producer:
            await producer.ready(10)
            send = producer.send
            total = int(rate * seconds)
            start = time.perf_counter()
            counted_from = start + WARMUP_S
            sent = 0
            while sent < total:
                due = min(total, int((time.perf_counter() - start) * rate) + 1)
                while sent < due:
                    send(topic, _value(time.perf_counter()))
                    sent += 1
                await asyncio.sleep(STEP_S)
            run.sent, run.achieved = sent, sent / (time.perf_counter() - start)
            left = await producer.flush(60)
            if left or failed:
                raise RuntimeError(f"bruce.producer: {left} left, {len(failed)} batches failed")

    try:
        with asyncio.Runner(loop_factory=new_event_loop) as runner:
            runner.run(main())
    finally:
        gc.unfreeze()
    return run


def run_bruce_no_gc(address: str, topic: str, rate: int, seconds: float) -> Run:
    """:func:`run_bruce` with Python's garbage collector off: how much of the tail is the collector's."""
    gc.collect()
    gc.disable()
    try:
        run = run_bruce(address, topic, rate, seconds)
    finally:
        gc.enable()
    run.client = "bruce.producer, no gc"
    return run


def run_confluent(address: str, topic: str, rate: int, seconds: float, in_flight: int | None = None) -> Run:
    """confluent-kafka at ``rate``; ``in_flight`` sets ``max.in.flight.requests.per.connection`` (librdkafka's default
    pipelines many requests; ours sends one at a time per partition)."""
    from confluent_kafka import Producer as CKProducer

    run = Run("confluent-kafka" if in_flight is None else f"confluent-kafka, {in_flight} in flight", rate, seconds)
    total = int(rate * seconds)
    producer = CKProducer(
        {
            "bootstrap.servers": address,
            "acks": 1,
            "linger.ms": LINGER_MS,
            "batch.num.messages": BATCH_MESSAGES,
            "batch.size": BATCH_BYTES,
            "queue.buffering.max.messages": total + 1,
            "log_level": 3,
            **({} if in_flight is None else {"max.in.flight.requests.per.connection": in_flight}),
        }
    )
    producer.list_topics(topic, timeout=10)
    failed: list[object] = []
    start = time.perf_counter()
    counted_from = start + WARMUP_S
    add = run.latencies.append

    def on_delivery(err: object, msg: Any) -> None:
        if err is not None:
            failed.append(err)
        elif _stamp(msg.value()) >= counted_from:
            add(msg.latency())

    produce, poll = producer.produce, producer.poll
    sent = 0
    while sent < total:
        due = min(total, int((time.perf_counter() - start) * rate) + 1)
        while sent < due:
            produce(topic, _value(time.perf_counter()), on_delivery=on_delivery)
            sent += 1
        poll(0)
        time.sleep(STEP_S)
    run.sent, run.achieved = sent, sent / (time.perf_counter() - start)
    left = producer.flush(60)
    if left or failed:
        raise RuntimeError(f"confluent-kafka: {left} left, {len(failed)} failed")
    return run


# ------------------------------------------------------------------------------------------------- the daemon


def _sender(path: str, topic: str, rate: int, seconds: float, done: Any) -> None:
    """Paced AnyPartition datagrams with the send time in the value (a separate process)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.connect(path)
    send, total, sent = sock.send, int(rate * seconds), 0
    start = time.perf_counter()
    while sent < total:
        due = min(total, int((time.perf_counter() - start) * rate) + 1)
        while sent < due:
            send(build_any_partition(topic, _value(time.perf_counter()), timestamp=1_700_000_000_000))
            sent += 1
        time.sleep(STEP_S)
    done.put((start, sent / (time.perf_counter() - start)))
    sock.close()


class DaemonUnderTest:
    """``bruce`` on its own event-loop thread in this process, its ``Outcomes.delivered`` timed per message."""

    def __init__(self, broker: EmbeddedBroker, workdir: Path) -> None:
        config_path = workdir / "latency.toml"
        config_path.write_text(DAEMON_CONFIG)
        self.socket = str(workdir / "bruce.sock")
        got = configure(
            [
                *("--initial_brokers", broker.address, "--config_path", str(config_path)),
                *("--receive_socket_name", self.socket, "--status_port", "0", "--debug_dir", str(workdir)),
                *("--log_level", "LOG_WARNING"),
            ]
        )
        if isinstance(got, int):
            raise RuntimeError(f"bruce's configuration failed ({got})")
        self.daemon = Daemon(*got)
        self.daemon.preflight()
        self.latencies: list[float] = []
        self.counted_from = float("inf")
        delivered = self.daemon.outcomes.delivered

        def timed(topic: str, partition: int, base_offset: int, messages: Sequence[Any]) -> None:
            now, add, since = time.perf_counter(), self.latencies.append, self.counted_from
            for m in messages:
                sent = _stamp(m.value)
                if sent >= since:
                    add(now - sent)
            delivered(topic, partition, base_offset, messages)

        self.daemon.outcomes.delivered = timed  # type: ignore[method-assign]
        self.loop = new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self.daemon.run(),), daemon=True)

    def __enter__(self) -> DaemonUnderTest:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.daemon.ready.is_set():
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the daemon did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.daemon.request_shutdown)
        self.thread.join(30)

    def settled(self) -> int:
        a = self._call(self.daemon.accounting)
        if a.discarded:
            raise RuntimeError(f"the daemon discarded {a.discarded} messages (see its log above)")
        return a.delivered

    def _call(self, fn: Callable[[], Any]) -> Any:
        done: Any = asyncio.run_coroutine_threadsafe(_call_async(fn), self.loop)
        return done.result(10)

    def send_and_wait(self, topic: str, rate: int, seconds: float) -> tuple[float, float]:
        """Send at ``rate`` for ``seconds`` from a sender process; wait until the daemon settled every message."""
        before = self.settled()
        ctx = mp.get_context("fork")
        done = ctx.Queue()
        sender = ctx.Process(target=_sender, args=(self.socket, topic, rate, seconds, done))
        sender.start()
        start, achieved = done.get(timeout=seconds + 60)
        sender.join(10)
        deadline = time.monotonic() + 60
        while self.settled() < before + int(rate * seconds):
            if time.monotonic() > deadline:
                raise RuntimeError("the daemon did not settle every message in time")
            time.sleep(0.05)
        return start, achieved


async def _call_async(fn: Callable[[], Any]) -> Any:
    return fn()


def run_daemon(d: DaemonUnderTest, topic: str, rate: int, seconds: float) -> Run:
    """One rate to ``topic`` (created before the daemon started: it knows only the topics of its metadata)."""
    d.counted_from = float("inf")
    d.send_and_wait(topic, 200, 0.5)  # the topic's metadata and first connection, not counted
    d.latencies = []
    d.counted_from = time.perf_counter() + WARMUP_S  # the sender starts within a few ms of this
    _, achieved = d.send_and_wait(topic, rate, seconds)
    return Run("bruce daemon", rate, seconds, int(rate * seconds), achieved, d.latencies)


# ---------------------------------------------------------------------------------------------------------- main


def dump(body: dict[str, Any]) -> str:
    """The JSON output: indented, one line per run (a run's CDF is 400 points)."""
    runs = ",\n  ".join(json.dumps(r) for r in body["runs"])
    return json.dumps({**body, "runs": []}, indent=1).replace('"runs": []', f'"runs": [\n  {runs}\n ]') + "\n"


def _print(r: Run) -> None:
    s = r.summary()
    print(
        f"  {r.client:16} {r.rate:>8,}/s (reached {s['achieved']:>8,}/s): p50 {s['p50_ms']:7.2f} ms  "
        f"p99 {s['p99_ms']:7.2f} ms  p99.9 {s['p999_ms']:7.2f} ms  max {s['max_ms']:7.2f} ms "
        f"({s['counted']:,} counted)",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rates", default="1000,10000,100000", help="comma-separated msgs/s")
    p.add_argument("--seconds", type=float, default=3.0, help="per client and rate (the first 0.5 s is warm-up)")
    p.add_argument("--no-daemon", action="store_true", help="only the producer libraries")
    p.add_argument("--gc-off", action="store_true", help="also bruce.producer with the garbage collector off")
    p.add_argument("--freeze-gc", action="store_true", help="also bruce.producer with Producer(freeze_gc=True)")
    p.add_argument(
        "--peer-one-in-flight", action="store_true", help="also confluent-kafka with one request in flight, as ours"
    )
    p.add_argument("--json", type=Path, help="also write the figures and CDFs here (for bench/report.py)")
    p.add_argument("--quick", action="store_true", help="1,000 msgs/s for 1 s: checks that it runs")
    a = p.parse_args(argv)
    rates = [1000] if a.quick else [int(r) for r in a.rates.split(",") if r]
    seconds = 1.0 if a.quick else a.seconds
    info = machine()
    print(f"latency bench: {SIZE}-byte values, acks=1, linger {LINGER_MS} ms; {info['cpu']} x{info['cpus']}")
    runs: list[Run] = []
    n = 0
    with EmbeddedBroker() as broker, tempfile.TemporaryDirectory(prefix="latency-bench-") as tmp:
        for rate in rates:
            print(f"{rate:,} msgs/s for {seconds:g} s:")
            clients = [("bruce", run_bruce), ("confluent", run_confluent)]
            if a.gc_off:
                clients.append(("bruce-nogc", run_bruce_no_gc))
            if a.freeze_gc:
                clients.append(("bruce-frozen", functools.partial(run_bruce, freeze=True)))
            if a.peer_one_in_flight:
                clients.append(("confluent-1", functools.partial(run_confluent, in_flight=1)))
            for client, bench in clients:
                n += 1
                topic = f"latency-{client}-{n}"
                broker.create_topic(topic, 1)
                runs.append(bench(broker.address, topic, rate, seconds))
                _print(runs[-1])
        if not a.no_daemon:
            print("daemon, datagram -> ACK:")
            topics = [f"latency-daemon-{rate}" for rate in rates]
            for topic in topics:
                broker.create_topic(topic, 4)
            with DaemonUnderTest(broker, Path(tmp)) as d:
                for rate, topic in zip(rates, topics, strict=True):
                    runs.append(run_daemon(d, topic, rate, seconds))
                    _print(runs[-1])
    for rate in rates:
        ours = next(r for r in runs if r.client == "bruce.producer" and r.rate == rate)
        peer = next(r for r in runs if r.client == "confluent-kafka" and r.rate == rate)
        print(
            f"ratio bruce.producer / confluent-kafka at {rate:,}/s: "
            f"p50 {ours.quantile(0.5) / peer.quantile(0.5):.2f}x, "
            f"p99 {ours.quantile(0.99) / peer.quantile(0.99):.2f}x (goal <= 1)"
        )
    if a.json:
        body = {
            "bench": "latency",
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": info,
            "settings": {"value_bytes": SIZE, "acks": 1, "linger_ms": LINGER_MS, "seconds": seconds},
            "runs": [r.summary() for r in runs],
        }
        a.json.write_text(dump(body))
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
