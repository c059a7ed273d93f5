"""Producer throughput: bruce.producer (per-message ``send``, and ``send_many``) vs confluent-kafka, aiokafka (``await
send`` per message) and kafka-python, producing the same messages to the same tansu broker in one run. Prints msgs/s
per client and our ratios.

Usage: python bench/producer_bench.py [--messages 200000] [--size 100] [--repeat 1] [--bootstrap HOST:PORT] [--quick]
       python bench/producer_bench.py --sizes 10,100,1000,10000 --clients bruce,confluent,aiokafka --json FILE
       python bench/producer_bench.py --security [--messages 200000] [--repeat 1] [--quick]
       python bench/producer_bench.py --latency 20 [--messages 200000] [--repeat 1] [--quick]
       python bench/producer_bench.py --idempotent --sizes 1000 --clients bruce,confluent --repeat 3
       python bench/producer_bench.py --peer-in-order --sizes 1000 --clients bruce,confluent --repeat 3

Each client gets a fresh one-partition topic, acks=1 (with ``--idempotent``: acks=-1 and idempotence on, so both
pipeline up to 5 requests per partition and keep order; with ``--peer-in-order`` confluent-kafka keeps one request
in flight, its setting for order without idempotence, as ours does at acks=1), and its usual batching (linger 5 ms);
time runs from the first send until every message is acknowledged. Without --bootstrap the bench starts its own
tansu (proxy/daemon/embedded.py).
The best of --repeat runs counts; the clients take turns (one run each, then again), so that the broker's state (its
in-memory log grows with every run) weighs on every client alike. Targets: per-message ``send`` at least
0.8x confluent-kafka's ``produce`` and 4x aiokafka's; ``send_many`` (all values in one call, awaited once) at least
1.5x confluent-kafka.
Every row prints the CPU per message of its best run, the client's (this process, its threads included) and the
broker's (the tansu the bench started); each of ours the garbage collector's share of its time too (``gc.callbacks``
timing the collections, target <= 10 %). Then bruce.producer runs again with the collector off (the share as lost
throughput), and both of ours with ``Producer(freeze_gc=True)`` (the program's state frozen at start: see
docs/producer.md).

``--sizes`` repeats the whole comparison per value size (at most 100 MB of values per client and size: 10,000
messages of 10 KB), ``--clients`` picks clients by name prefix, ``--json FILE`` writes every rate for
bench/report.py (throughput against message size).
``--security``: bruce.producer and confluent-kafka over PLAINTEXT, SSL and SASL_SSL (SCRAM-SHA-512) in one run,
against tansu behind the test peers of tests/security (stunnel for TLS, the SASL front for SASL). Targets: our ratio
to confluent-kafka over SASL_SSL as in plaintext (>= 0.5x), and TLS costing us at most 25 % of our plaintext rate
(an upper bound: the TLS figure also pays stunnel's extra hop).
``--latency MS``: the idempotent producer's pipelining. tansu behind the delaying proxy of tests/netproxy.py (MS
added each way, so every client connection, metadata's included, pays it), acks=-1 and idempotence on for every
client: bruce.producer with 5 requests in flight per partition and with 1 (its sending loop yields to the event loop
every 1,000 sends, so requests leave while it sends, as confluent-kafka's own thread sends them), the same two with
one ``send_many`` of every value (the round trips, not the producer's CPU, are then the bound), and confluent-kafka
with ``enable.idempotence=true``, in one run. Every run's topic is read back (confluent-kafka, CRC checks on): each
message once. Targets: 5 in flight >= 3x 1 in flight, and >= 0.6x confluent-kafka.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import itertools
import json
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from _common import machine, own_cpu_s, proc_cpu_s

from bruce.producer import Producer, ProducerConfig, new_event_loop
from bruce.proxy.daemon.embedded import EmbeddedBroker

_topics = itertools.count(1)


class GcClock:
    """Time spent in the garbage collector (``gc.callbacks``) since :meth:`start`, for our clients' rows."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.share = 0.0  # of the last run: collector time / elapsed
        self.best_share = 0.0  # of the best run of the last best_rate()
        self._began = 0.0
        gc.callbacks.append(self._callback)

    def start(self) -> None:
        self.seconds = 0.0

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        elif self._began:
            self.seconds += time.perf_counter() - self._began


GC = GcClock()


class Mode:
    """How the main comparison runs: ``warm_up``: each client delivers one message before its clock starts
    (``--idempotent``: confluent-kafka gets its producer id in the background at start, ~0.5 s on tansu, which would
    otherwise count as sending time); ``peer``: settings added to confluent-kafka's (``--peer-in-order``)."""

    warm_up = False
    peer: dict = {}


MODE = Mode()


def bench_bruce(
    address: str, topic: str, n: int, value: bytes, props: dict | None = None, *, yield_every: int = 0
) -> float:
    """``yield_every``: give the event loop a turn after that many sends (an application that streams, so requests
    leave while it sends; 0: queue everything first)."""
    return _run_bruce(address, topic, n, value, props, bulk=False, freeze=False, yield_every=yield_every)


def bench_bruce_many(address: str, topic: str, n: int, value: bytes, props: dict | None = None) -> float:
    return _run_bruce(address, topic, n, value, props, bulk=True, freeze=False)


def _run_bruce(
    address: str,
    topic: str,
    n: int,
    value: bytes,
    props: dict | None,
    *,
    bulk: bool,
    freeze: bool,
    yield_every: int = 0,
) -> float:
    async def main() -> float:
        config = ProducerConfig.from_mapping(
            {"bootstrap.servers": address, "acks": 1, "queue.buffering.max.messages": n + 1, **(props or {})}
        )
        async with Producer(config, freeze_gc=freeze) as producer:
            await producer.ready(10)
            if MODE.warm_up:
                await producer.send(topic, value)
                n_more = 1
            else:
                n_more = 0
            values = [value] * n if bulk else None
            send = producer.send
            GC.start()
            started = time.perf_counter()
            if values is not None:
                bulk_sent = producer.send_many(topic, values)
                await bulk_sent
                failed = len(bulk_sent.failures())
            else:
                for i in range(n):
                    send(topic, value)
                    if yield_every and i % yield_every == 0:
                        await asyncio.sleep(0)
                failed = 0
            left = await producer.flush(120)
            elapsed = time.perf_counter() - started
            GC.share = GC.seconds / elapsed
            if left or failed or producer.delivered != n + n_more:
                raise RuntimeError(f"bruce: {left} left, {failed} failed, {producer.delivered} delivered of {n}")
            return elapsed

    try:
        with asyncio.Runner(loop_factory=new_event_loop) as runner:
            return runner.run(main())
    finally:
        gc.unfreeze()  # each run starts from the same collector state


def bench_confluent(address: str, topic: str, n: int, value: bytes, props: dict | None = None) -> float:
    from confluent_kafka import Producer as CKProducer

    producer = CKProducer(
        {
            "bootstrap.servers": address,
            "acks": 1,
            "linger.ms": 5,
            "batch.num.messages": 10000,
            "queue.buffering.max.messages": n + 1,
            "log_level": 3,
            **(props or {}),
            **MODE.peer,
        }
    )
    producer.list_topics(topic, timeout=10)
    failed = []
    if MODE.warm_up:
        producer.produce(topic, value)
        if producer.flush(30):
            raise RuntimeError("confluent-kafka: the warm-up message was not delivered")

    def on_delivery(err: object, msg: object) -> None:
        if err is not None:
            failed.append(err)

    started = time.perf_counter()
    for i in range(n):
        producer.produce(topic, value, on_delivery=on_delivery)
        if i % 10000 == 0:
            producer.poll(0)
    left = producer.flush(120)
    elapsed = time.perf_counter() - started
    if left or failed:
        raise RuntimeError(f"confluent-kafka: {left} left, {len(failed)} failed")
    return elapsed


def bench_aiokafka(address: str, topic: str, n: int, value: bytes) -> float:
    from aiokafka import AIOKafkaProducer

    async def main() -> float:
        producer = AIOKafkaProducer(bootstrap_servers=address, acks=1, linger_ms=5, max_batch_size=1_000_000)
        await producer.start()
        try:
            await producer.partitions_for(topic)
            futures = []
            started = time.perf_counter()
            for _ in range(n):
                futures.append(await producer.send(topic, value))
            await producer.flush()
            elapsed = time.perf_counter() - started
            for f in futures:
                f.result()
            return elapsed
        finally:
            await producer.stop()

    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(main())


def bench_kafka_python(address: str, topic: str, n: int, value: bytes) -> float:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=address, acks=1, linger_ms=5, batch_size=1_000_000)
    try:
        producer.partitions_for(topic)
        started = time.perf_counter()
        futures = [producer.send(topic, value) for _ in range(n)]
        producer.flush(120)
        elapsed = time.perf_counter() - started
        for f in futures:
            f.get(0)
        return elapsed
    finally:
        producer.close(5)


CLIENTS: dict[str, Callable[[str, str, int, bytes], float]] = {
    "bruce.producer": bench_bruce,
    "bruce.producer send_many": bench_bruce_many,
    "confluent-kafka": bench_confluent,
    "aiokafka (await send)": bench_aiokafka,
    "kafka-python": bench_kafka_python,
}


def best_rate(
    bench: Callable[[str, str, int, bytes], float],
    address: str,
    broker: EmbeddedBroker | None,
    n: int,
    value: bytes,
    repeat: int,
    *,
    collector: bool = True,
    props: dict | None = None,
) -> float:
    """The best msgs/s of ``repeat`` runs, each to a fresh topic (``collector=False``: garbage collector off)."""
    best = 0.0
    for _ in range(repeat):
        topic = f"bench-{next(_topics)}"
        if broker is not None:
            broker.create_topic(topic, 1)
        gc.collect()
        if not collector:
            gc.disable()
        try:
            GC.share = 0.0
            own0, broker0 = own_cpu_s(), _broker_cpu_s(broker)
            rate = n / (bench(address, topic, n, value, props) if props else bench(address, topic, n, value))
            if rate > best:
                best, GC.best_share = rate, GC.share
                CPU.client_us = (own_cpu_s() - own0) / n * 1e6
                CPU.broker_us = (_broker_cpu_s(broker) - broker0) / n * 1e6
        finally:
            gc.enable()
    return best


class CpuOfBest:
    """CPU µs per message of the best run of the last best_rate(): this process (the client, its threads included)
    and the broker (0 when it is not ours to measure)."""

    client_us = 0.0
    broker_us = 0.0


CPU = CpuOfBest()


def _broker_cpu_s(broker: EmbeddedBroker | None) -> float:
    process = broker.process if broker is not None else None
    return proc_cpu_s(process.pid) if process is not None else 0.0


MAX_BYTES_PER_RUN = 100_000_000


def run(
    address: str,
    broker: EmbeddedBroker | None,
    n: int,
    size: int,
    repeat: int,
    clients: list[str] | None = None,
    props: dict | None = None,
) -> dict[str, float]:
    """Every client (or those named) at one value size, with ``props`` added to each one's settings; bruce.producer
    also with the collector off."""
    value = b"x" * size
    n = max(1, min(n, MAX_BYTES_PER_RUN // size))
    print(f"-- {n:,} x {size:,}-byte values", flush=True)
    rates: dict[str, float] = {}
    notes: dict[str, str] = {}
    chosen = {name: bench for name, bench in CLIENTS.items() if clients is None or name in clients}
    for _ in range(repeat):  # in turns: every client once per round
        for name, bench in chosen.items():
            rate = best_rate(bench, address, broker, n, value, 1, props=props)
            if rate > rates.get(name, 0.0):
                rates[name] = rate
                cpu = f"CPU/msg: client {CPU.client_us:.2f} µs, broker {CPU.broker_us:.2f} µs"
                notes[name] = f"{cpu}; the garbage collector's share: {GC.best_share:.0%}" if "bruce" in name else cpu
    for name in chosen:
        print(f"{name:36} {rates[name]:12,.0f} msgs/s ({notes[name]})", flush=True)
    ours = rates.get("bruce.producer")
    if ours is None:
        return rates
    without_gc = rates["bruce.producer, no gc"] = best_rate(
        bench_bruce, address, broker, n, value, repeat, collector=False, props=props
    )
    share = 1 - ours / without_gc
    print(f"{'bruce.producer, no gc':36} {without_gc:12,.0f} msgs/s (the garbage collector's share: {share:.0%})")
    for name, bulk in (("bruce.producer, gc frozen", False), ("bruce.producer send_many, gc frozen", True)):
        if bulk and "bruce.producer send_many" not in rates:
            continue
        frozen = partial(_run_bruce, props=props, bulk=bulk, freeze=True)
        rates[name] = best_rate(frozen, address, broker, n, value, repeat)
        print(f"{name:36} {rates[name]:12,.0f} msgs/s (the garbage collector's share: {GC.best_share:.0%})")
    for peer, target in (("aiokafka (await send)", " (target >= 4)"), ("confluent-kafka", " (target >= 0.8)")):
        if peer in rates:
            print(f"ratio vs {peer + ':':22} {ours / rates[peer]:.2f}x{target}")
    if "kafka-python" in rates:
        print(f"ratio vs {'kafka-python:':22} {ours / rates['kafka-python']:.2f}x")
    many = rates.get("bruce.producer send_many")
    if many is not None and "confluent-kafka" in rates:
        print(f"send_many vs confluent-kafka:   {many / rates['confluent-kafka']:.2f}x (target >= 1.5)")
    return rates


def _clients(spec: str | None) -> list[str] | None:
    if not spec:
        return None
    out = []
    for prefix in spec.split(","):
        found = [name for name in CLIENTS if name.startswith(prefix)]
        if not found:
            raise SystemExit(f"no client named {prefix!r}; the clients: {', '.join(CLIENTS)}")
        out += found
    return out


def run_security(n: int, size: int, repeat: int) -> dict[str, float]:
    """Ours and confluent-kafka over PLAINTEXT, SSL and SASL_SSL, in one run."""
    import tempfile
    from contextlib import ExitStack
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from security.peers import make_certificates, start_secured  # the tests' peers

    value = b"x" * size
    rates: dict[str, float] = {}
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        certs = make_certificates(work / "certs")
        plain = stack.enter_context(EmbeddedBroker())
        ssl_way = start_secured(stack, work, certs, "SSL")
        sasl_way = start_secured(stack, work, certs, "SASL_SSL")
        ways = [
            ("PLAINTEXT", plain.address, plain, None),
            ("SSL", ssl_way.bootstrap, ssl_way.broker, ssl_way.client()),
            ("SASL_SSL", sasl_way.bootstrap, sasl_way.broker, sasl_way.client("SCRAM-SHA-512")),
        ]
        for _ in range(repeat):  # rounds interleave every client and protocol: a busy machine hurts them alike
            for way, address, broker, props in ways:
                for name, bench in (("bruce.producer", bench_bruce), ("confluent-kafka", bench_confluent)):
                    rate = best_rate(bench, address, broker, n, value, 1, props=props or {"client.id": "bench"})
                    rates[f"{name} {way}"] = max(rate, rates.get(f"{name} {way}", 0.0))
        for way, *_ in ways:
            for name in ("bruce.producer", "confluent-kafka"):
                print(f"{name:16} {way:10} {rates[f'{name} {way}']:12,.0f} msgs/s (best of {repeat})", flush=True)
    for way, *_ in ways:
        ratio = rates[f"bruce.producer {way}"] / rates[f"confluent-kafka {way}"]
        print(f"ratio vs confluent-kafka, {way + ':':11} {ratio:.2f}x (target >= 0.5)")
    for way in ("SSL", "SASL_SSL"):
        cost = 1 - rates[f"bruce.producer {way}"] / rates["bruce.producer PLAINTEXT"]
        print(f"{way} cost to bruce.producer vs plaintext: {cost:.0%} (target <= 25%; includes the front's hop)")
    return rates


STREAM_YIELD = 1000  # --latency: bruce.producer's sending loop lets requests leave every 1,000 sends


def run_latency(n: int, size: int, repeat: int, latency: float) -> dict[str, float]:
    """bruce.producer (idempotent) with 5 and with 1 request in flight, and idempotent confluent-kafka, through the
    delaying proxy, in one run; each topic read back."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from netproxy import tansu_behind_proxy  # the tests' proxy
    from readback import read_back

    idempotent = {"acks": -1, "enable.idempotence": True}
    streaming = functools.partial(bench_bruce, yield_every=STREAM_YIELD)  # as confluent-kafka's thread sends
    ways = [
        ("bruce.producer, 5 in flight", streaming, {**idempotent, "max.in.flight.requests.per.connection": 5}),
        ("bruce.producer, 1 in flight", streaming, {**idempotent, "max.in.flight.requests.per.connection": 1}),
        ("send_many, 5 in flight", bench_bruce_many, {**idempotent, "max.in.flight.requests.per.connection": 5}),
        ("send_many, 1 in flight", bench_bruce_many, {**idempotent, "max.in.flight.requests.per.connection": 1}),
        ("confluent-kafka", bench_confluent, idempotent),
    ]
    value = b"x" * size
    rates: dict[str, float] = {}
    with tansu_behind_proxy(delay_ms=latency) as (broker, proxy):
        for _ in range(repeat):  # rounds interleave the clients: a busy machine hurts them alike
            for name, bench, props in ways:
                topic = f"bench-{next(_topics)}"
                broker.create_topic(topic, 1)
                gc.collect()
                elapsed = bench(proxy.address, topic, n, value, props)
                rates[name] = max(rates.get(name, 0.0), n / elapsed)
                got = read_back(proxy.address, topic, 1, n, timeout=120, extra=0.5)
                if len(got) != n or any(m.value() != value for m in got):
                    raise SystemExit(f"{name}: {len(got)} messages read back of {n}")
    for name, *_ in ways:
        print(f"{name:28} {rates[name]:12,.0f} msgs/s (best of {repeat}, {latency:g} ms each way)", flush=True)
    five, one = rates["bruce.producer, 5 in flight"], rates["bruce.producer, 1 in flight"]
    many5, many1 = rates["send_many, 5 in flight"], rates["send_many, 1 in flight"]
    print(f"5 in flight vs 1, send:      {five / one:.2f}x (target >= 3)")
    print(f"5 in flight vs 1, send_many: {many5 / many1:.2f}x (target >= 3; the producer's CPU is not the bound)")
    print(f"ratio vs confluent-kafka:    {five / rates['confluent-kafka']:.2f}x (target >= 0.6)")
    return rates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--bootstrap", help="an existing broker (topics are auto-created by the clients' metadata)")
    parser.add_argument("--quick", action="store_true", help="2,000 messages, one run (keeps the script from rotting)")
    parser.add_argument("--sizes", help="comma-separated value sizes: one comparison per size (overrides --size)")
    parser.add_argument("--clients", help="comma-separated client name prefixes (default: all)")
    parser.add_argument("--json", type=Path, help="also write the rates here (for bench/report.py)")
    parser.add_argument("--security", action="store_true", help="PLAINTEXT vs SSL vs SASL_SSL, ours and confluent's")
    parser.add_argument("--latency", type=float, help="ms added each way: idempotent pipelining, 5 vs 1 in flight")
    parser.add_argument(
        "--idempotent", action="store_true", help="acks=-1, idempotence on (5 in flight): ours and confluent only"
    )
    parser.add_argument(
        "--peer-in-order",
        action="store_true",
        help="confluent-kafka with one request in flight (its setting for order without idempotence, as ours)",
    )
    args = parser.parse_args(argv)
    n, repeat = (2_000, 1) if args.quick else (args.messages, args.repeat)
    if args.latency is not None:
        print(f"producing {n:,} x {args.size}-byte values per client, acks=-1, idempotence on")
        run_latency(n, args.size, repeat, args.latency)
        return 0
    if args.security:
        print(f"producing {n:,} x {args.size}-byte values per client and protocol, acks=1")
        run_security(n, args.size, repeat)
        return 0
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [args.size]
    clients = _clients(args.clients)
    props = {"acks": -1, "enable.idempotence": True} if args.idempotent else None
    MODE.warm_up = bool(props)
    if args.peer_in_order:
        MODE.peer = {"max.in.flight.requests.per.connection": 1}
    if props and (clients is None or any(not c.startswith(("bruce", "confluent")) for c in clients)):
        raise SystemExit("--idempotent: only with --clients bruce,confluent (the others take no settings here)")
    acks = "acks=-1, idempotence on" if props else "acks=1"
    if MODE.peer:
        acks += ", confluent-kafka with one request in flight"
    print(f"producing up to {n:,} values per client and size, {acks}, python {sys.version.split()[0]}")
    by_size: dict[int, dict[str, float]] = {}
    if args.bootstrap:
        for size in sizes:
            by_size[size] = run(args.bootstrap, None, n, size, repeat, clients, props)
    else:
        with EmbeddedBroker() as broker:
            for size in sizes:
                by_size[size] = run(broker.address, broker, n, size, repeat, clients, props)
    if args.json:
        body = {
            "bench": "producer",
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": machine(),
            "settings": {
                "messages": n,
                "max_bytes_per_run": MAX_BYTES_PER_RUN,
                "acks": -1 if props else 1,
                "idempotent": bool(props),
                "repeat": repeat,
            },
            "rates": [
                {"size": size, "client": c, "msgs_per_s": round(r)}
                for size, rs in by_size.items()
                for c, r in rs.items()
            ],
        }
        args.json.write_text(json.dumps(body, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
