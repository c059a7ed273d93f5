"""Proxy benchmark: sender processes → the ``bruce`` daemon (a real subprocess) → tansu, end to end.

Sender processes offer 100-byte AnyPartition datagrams as fast as they can (non-blocking sends; on EAGAIN a sender
waits with ``select`` until the socket is writable again and retries, so nothing is dropped and the wait is measured).
The daemon runs as the ``bruce`` command against a tansu broker started here (tansu is not the daemon's child, so its
CPU is not counted). The script prints, per configuration:

- end-to-end msgs/s: messages sent / (time the daemon reported the last one acknowledged - time sending started),
  after checking with a consumer (confluent-kafka) that the broker holds exactly the messages sent: the count is
  verified by reading back, never taken from ACKs;
- the daemon's CPU µs per message, from /proc/<pid>/stat: in all, and split between its event loop's process and
  its intake reader process;
- what the clients felt: EAGAIN count and total time blocked waiting for room;
- the daemon's memory high-water mark (VmHWM) and its RSS at start, beside the message budget and the budget's
  own high-water mark (``/metrics``).

Configurations: ``plain`` (combined-topics batching as in Bruce's shipped config but 100 ms, no compression) and
``default`` (the built-in configuration: combined batching of 1 s / 256 KiB, snappy above 128 bytes), ``snappy``
(``plain`` with every batch snappy-compressed).

``--broker`` picks the protocol path: ``tansu`` (the modern one, record batches, read back with confluent-kafka) and/or
``fake08`` (bench/fake08.py: the project's fake broker playing Kafka 0.8 in its own process, so the daemon builds
magic-0 message sets; the count is what it stored, every CRC checked).

    .venv/bin/python bench/proxy_bench.py                 # 2,000,000 messages, 2 senders, both configurations
    .venv/bin/python bench/proxy_bench.py --messages 500000 --configs plain
    .venv/bin/python bench/proxy_bench.py --qlen 512      # in a network namespace with max_dgram_qlen=512 (root)
    .venv/bin/python bench/proxy_bench.py --quick         # 20,000 messages: checks that it runs
    .venv/bin/python bench/proxy_bench.py --messages 300000 --configs plain,snappy --broker fake08,tansu --no-peer
    .venv/bin/python bench/proxy_bench.py --messages 500000 --configs plain --json /tmp/proxy.json  # for report.py
    .venv/bin/python bench/proxy_bench.py --messages 500000 --configs plain --profile /tmp/prof  # where the CPU goes

``--profile DIR`` samples both daemon processes on CPU time (bench/profile_hook, under 1 % of overhead) and prints
the CPU per message by stage (bench/daemon_profile.py); the JSON gets the stages too.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import resource
import select
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from _common import child_pids, machine, max_dgram_qlen, proc_cpu_s, proc_sys_s
from confluent_kafka import Consumer, Producer, TopicPartition
from daemon_profile import print_table, stage_table
from fake08 import FakeBroker08

from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.wire.datagram import build_any_partition

CONFIGS = {
    "plain": """
[batching]
produce_request_data_limit = 1048576
message_max_bytes = 1000000
combined_topics = { enable = true, config = "bench" }
default_topic = { action = "combined_topics" }
[batching.named_configs.bench]
time = 100
messages = "disable"
bytes = 262144
[compression]
default_topic = "none"
[compression.named_configs.none]
type = "none"
[[initial_brokers]]  # replaced by --initial_brokers
host = "127.0.0.1"
""",
    "default": None,  # the built-in configuration
}
# plain with every batch snappy-compressed
CONFIGS["snappy"] = CONFIGS["plain"].replace('type = "none"', 'type = "snappy"\nmin_size = 1')
PARTITIONS = 4
VALUE_SIZE = 100
TIMEOUT_S = 300.0


# -------------------------------------------------------------------------------------------------------- senders


def _sender(path: str, topic: str, count: int, blocking: bool, start: mp.Event, results: mp.Queue) -> None:
    """Send ``count`` 100-byte AnyPartition datagrams as fast as the socket takes them."""
    value = b"v" * (VALUE_SIZE - 8)
    datagrams = [build_any_partition(topic, b"%08d" % i + value, timestamp=1_700_000_000_000) for i in range(256)]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.connect(path)
    sock.setblocking(blocking)
    send = sock.send
    eagain = 0
    blocked = 0.0
    start.wait()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    if blocking:
        for i in range(count):
            send(datagrams[i & 255])
    else:
        i = 0
        while i < count:
            try:
                send(datagrams[i & 255])
                i += 1
            except BlockingIOError:
                eagain += 1
                w0 = time.perf_counter()
                select.select([], [sock], [], 1.0)
                blocked += time.perf_counter() - w0
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
    if blocking:  # off-CPU time while sending: waiting for room in the socket queue
        blocked = max(0.0, wall - cpu)
        eagain = r1.ru_nvcsw - r0.ru_nvcsw  # times it blocked
    results.put({"wall": wall, "eagain": eagain, "blocked": blocked, "cpu": cpu})
    sock.close()


# ---------------------------------------------------------------------------------------------------- measuring


def daemon_cpu_s(pid: int) -> tuple[float, float]:
    """CPU seconds so far of the daemon's own process (its event loop) and of its children (the intake reader)."""
    return proc_cpu_s(pid), sum(proc_cpu_s(c) for c in child_pids(pid))


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def counters(url: str) -> dict[str, int]:
    """The daemon's counters from ``/metrics`` (each family's help text names its counter: ``Counter <Name> (...)``),
    summed over labels, plus ``Discard:<reason>`` per reason."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    names: dict[str, str] = {}
    out: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            m = re.match(r"# HELP (\w+) Counter (\w+) \(", line)
            if m:
                names[m[1]] = m[2]
            continue
        metric = re.split(r"[{ ]", line, maxsplit=1)[0]
        name = names.get(metric)
        if name is None or line.startswith("#"):
            continue
        value = int(float(line.rsplit(" ", 1)[1]))
        out[name] = out.get(name, 0) + value
        reason = re.search(r'reason="([^"]*)"', line)
        if name == "Discard" and reason:
            out[f"Discard:{reason[1]}"] = out.get(f"Discard:{reason[1]}", 0) + value
    return out


def gauge(url: str, name: str) -> float:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise KeyError(name)


def read_topic(
    address: str,
    topic: str,
    enough: Callable[[list], bool],
    timeout: float = TIMEOUT_S,
    *,
    partitions: int = PARTITIONS,
    props: Mapping[str, Any] | None = None,
) -> None:
    """Read ``topic`` back from the start of every partition (CRC checks on), handing each batch of messages to
    ``enough`` until it returns True; then one more second (anything beyond would be a duplicate), or ``timeout``.
    ``props``: more consumer settings."""
    consumer = Consumer(
        {
            "bootstrap.servers": address,
            "group.id": f"bench-{topic}",
            "check.crcs": True,
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
            "log_level": 3,
            **(props or {}),
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + timeout
        quiet_until = None
        while time.monotonic() < deadline:
            batch = consumer.consume(100_000, 0.2)
            for m in batch:
                if m.error():
                    raise RuntimeError(f"consumer error: {m.error()}")
            if enough(batch):
                quiet_until = quiet_until or time.monotonic() + 1.0
                if time.monotonic() > quiet_until:
                    break
    finally:
        consumer.close()


def consume_count(address: str, topic: str, expected: int, timeout: float = TIMEOUT_S) -> int:
    """How many messages the broker holds for ``topic`` (read back with CRC checks), waiting up to ``timeout``."""
    seen = 0

    def enough(batch: list) -> bool:
        nonlocal seen
        seen += len(batch)
        return seen >= expected

    read_topic(address, topic, enough, timeout)
    return seen


# ---------------------------------------------------------------------------------------------------- one run


@dataclass
class Result:
    config: str
    sent: int
    delivered: int
    discarded: int
    read_back: int
    seconds: float
    read_seconds: float  # until the daemon had read every datagram
    loop_cpu_us: float  # per message, the daemon's own process (its event loop)
    reader_cpu_us: float  # per message, its intake reader process
    loop_sys_us: float  # per message, the kernel's part of loop_cpu_us (system calls: sockets, spool writes)
    eagain: int
    blocked_s: float
    sender_wall_s: float
    sender_cpu_us: float
    hwm_kib: int
    start_rss_kib: int
    budget_kib: int
    budget_hwm_kib: float
    stages: list[dict] | None = None  # with --profile: CPU per message by stage (bench/daemon_profile.py)

    @property
    def rate(self) -> float:
        return self.sent / self.seconds

    @property
    def cpu_us(self) -> float:
        """The daemon's CPU per message, both processes."""
        return self.loop_cpu_us + self.reader_cpu_us


def run_one(
    name: str,
    broker: EmbeddedBroker | FakeBroker08,
    messages: int,
    senders: int,
    budget_kib: int,
    workdir: Path,
    *,
    warmup: int,
    blocking: bool,
    extra_args: Sequence[str] = (),
    label: str | None = None,
    profile: Path | None = None,
) -> Result:
    """One configuration ``name``, with ``extra_args`` for the daemon; the result is labelled ``label`` (or
    ``name``)."""
    topic = f"bench-{label or name}-{os.getpid()}-{int(time.time())}"
    broker.create_topic(topic, PARTITIONS)
    sock = str(workdir / f"{label or name}.sock")
    args = [
        str(Path(sys.executable).parent / "bruce"),
        *("--initial_brokers", broker.address, "--receive_socket_name", sock, "--status_port", "0"),
        *("--msg_buffer_max", str(budget_kib), "--log_level", "LOG_NOTICE"),
        *extra_args,
    ]
    if CONFIGS[name] is not None:
        config = workdir / f"{name}.toml"
        config.write_text(CONFIGS[name])  # type: ignore[arg-type]
        args += ["--config_path", str(config)]
    log_path = workdir / f"{label or name}.log"
    env = None
    if profile is not None:  # both processes sampled (the reader inherits the environment)
        profile = profile / (label or name)
        profile.mkdir(parents=True, exist_ok=True)
        for old in profile.glob("*.json"):
            old.unlink()
        hook = str(Path(__file__).resolve().parent / "profile_hook")
        path = os.pathsep.join(p for p in (hook, os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "PYTHONPATH": path, "BRUCE_BENCH_PROFILE": str(profile)}
    with open(log_path, "wb") as log:
        daemon = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        url = wait_serving(daemon, log_path)
        wait_for(lambda: counters(url).get("MetadataChanged", 0) >= 1, "the daemon's first metadata")
        if warmup:  # one small burst first, so the first batch's lazy set-up is not measured
            _send(sock, topic, warmup, 1)
            wait_for(lambda: settled_count(url) >= warmup, "the warm-up")
        start_rss = status_kib(daemon.pid, "VmRSS")
        loop0, reader0 = daemon_cpu_s(daemon.pid)
        loop_sys0 = proc_sys_s(daemon.pid)
        t0 = time.monotonic()
        per_sender = _send(sock, topic, messages, senders, blocking)
        read_at: list[float] = []

        def settled() -> bool:
            c = counters(url)
            if not read_at and c.get("MsgReceived", 0) >= warmup + messages:
                read_at.append(time.monotonic())
            return c.get("MsgDelivered", 0) + c.get("MsgDiscarded", 0) >= warmup + messages

        wait_for(settled, "every message to be acknowledged or discarded")
        seconds = time.monotonic() - t0
        read_seconds = (read_at[0] if read_at else time.monotonic()) - t0
        loop1, reader1 = daemon_cpu_s(daemon.pid)
        loop_sys1 = proc_sys_s(daemon.pid)
        c = counters(url)
        hwm = status_kib(daemon.pid, "VmHWM")
        budget_hwm = gauge(url, "bruce_msg_buffer_high_water_bytes") / 1024
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(60)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait(10)
    if isinstance(broker, FakeBroker08):
        read_back = broker.count(topic)
    else:
        read_back = consume_count(broker.address, topic, warmup + messages)
    loop_us = (loop1 - loop0) / messages * 1e6
    reader_us = (reader1 - reader0) / messages * 1e6
    return Result(
        label or name,
        sent=messages,
        delivered=c.get("MsgDelivered", 0) - warmup,
        discarded=c.get("MsgDiscarded", 0),
        read_back=read_back - warmup,
        seconds=seconds,
        read_seconds=read_seconds,
        loop_cpu_us=loop_us,
        reader_cpu_us=reader_us,
        loop_sys_us=(loop_sys1 - loop_sys0) / messages * 1e6,
        eagain=sum(r["eagain"] for r in per_sender),
        blocked_s=sum(r["blocked"] for r in per_sender),
        sender_wall_s=max(r["wall"] for r in per_sender),
        sender_cpu_us=sum(r["cpu"] for r in per_sender) / messages * 1e6,
        hwm_kib=hwm,
        start_rss_kib=start_rss,
        budget_kib=budget_kib,
        budget_hwm_kib=budget_hwm,
        stages=None if profile is None else stage_table(profile, warmup + messages, loop_us, reader_us),
    )


def _send(sock: str, topic: str, messages: int, senders: int, blocking: bool = True) -> list[dict]:
    ctx = mp.get_context("fork")
    start = ctx.Event()
    results = ctx.Queue()
    shares = [messages // senders + (1 if i < messages % senders else 0) for i in range(senders)]
    procs = [ctx.Process(target=_sender, args=(sock, topic, n, blocking, start, results)) for n in shares]
    for p in procs:
        p.start()
    start.set()
    out = [results.get(timeout=TIMEOUT_S) for _ in procs]
    for p in procs:
        p.join(10)
    return out


def settled_count(url: str) -> int:
    c = counters(url)
    return c.get("MsgDelivered", 0) + c.get("MsgDiscarded", 0)


def wait_for(predicate, what: str, timeout: float = TIMEOUT_S) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.02)


def wait_serving(daemon: subprocess.Popen[bytes], log_path: Path) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            raise RuntimeError(f"bruce exited with {daemon.returncode}:\n{log_path.read_text()}")
        for line in log_path.read_text().splitlines():
            if "serving: socket" in line:
                return line.rsplit("status ", 1)[1].rstrip("/")
        time.sleep(0.05)
    raise RuntimeError(f"bruce did not start:\n{log_path.read_text()}")


# ---------------------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--messages", type=int, default=2_000_000)
    p.add_argument("--senders", type=int, default=2)
    p.add_argument("--budget-kib", type=int, default=262144, help="--msg_buffer_max of the daemon (KiB)")
    p.add_argument("--configs", default="plain,default", help="comma-separated: " + ", ".join(CONFIGS))
    p.add_argument(
        "--nonblocking", action="store_true", help="senders use non-blocking sends and wait in select on EAGAIN"
    )
    p.add_argument(
        "--qlen",
        type=int,
        help="run in a private network namespace whose net.unix.max_dgram_qlen is QLEN (root only; the host's "
        "setting is untouched)",
    )
    p.add_argument("--no-peer", action="store_true", help="skip the confluent-kafka peer run")
    p.add_argument(
        "--broker",
        default="tansu",
        help="comma-separated: tansu (the modern path, record batches) and/or fake08 (the project's fake broker "
        "playing Kafka 0.8: the 0.8 path, magic-0 message sets; counted from what it stored, CRCs checked)",
    )
    p.add_argument("--quick", action="store_true", help="20,000 messages, 2 senders: checks that it runs")
    p.add_argument("--json", type=Path, help="also write the figures here (for bench/report.py)")
    p.add_argument("--profile", type=Path, help="sample both daemon processes; per-process samples go to DIR/<config>")
    a = p.parse_args(argv)
    if a.qlen is not None:
        return _in_namespace(a)
    if a.quick:
        a.messages, a.senders = 20_000, 2
    names = [n for n in a.configs.split(",") if n]
    unknown = set(names) - set(CONFIGS)
    if unknown:
        p.error(f"unknown configuration(s): {', '.join(sorted(unknown))}")
    qlen = max_dgram_qlen()
    print(f"proxy bench: {a.messages:,} x {VALUE_SIZE}-byte AnyPartition datagrams from {a.senders} sender processes")
    print(f"machine: {os.cpu_count()} CPUs, net.unix.max_dgram_qlen={qlen}, budget {a.budget_kib:,} KiB")
    brokers = [b for b in a.broker.split(",") if b]
    if set(brokers) - {"tansu", "fake08"}:
        p.error(f"unknown broker(s): {a.broker}")
    results = []
    peer = None
    with tempfile.TemporaryDirectory(prefix="proxy-bench-") as tmp:
        for kind in brokers:
            with EmbeddedBroker() if kind == "tansu" else FakeBroker08() as broker:
                for name in names:
                    r = run_one(
                        name,
                        broker,
                        a.messages,
                        a.senders,
                        a.budget_kib,
                        Path(tmp),
                        warmup=1000,
                        blocking=not a.nonblocking,
                        label=name if kind == "tansu" else f"{name}-0.8",
                        profile=a.profile,
                    )
                    results.append(r)
                    _print(r, a.senders, a.nonblocking)
                if kind == "tansu" and not a.no_peer:
                    peer = confluent_peer(broker, a.messages)  # type: ignore[arg-type]
    if peer is not None:
        rate, cpu_us, read_back = peer
        print(f"\n[peer] confluent-kafka, the same messages produced directly: {rate:,.0f} msgs/s")
        print(f"  CPU {cpu_us:.2f} us/message (librdkafka's threads included); read back {read_back:,}")
        for r in results:
            print(f"ratio bruce[{r.config}]/confluent-kafka: rate {r.rate / rate:.2f}x, CPU {r.cpu_us / cpu_us:.2f}x")
    if a.json:
        body = {
            "bench": "proxy",
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": {**machine(), "max_dgram_qlen": qlen},
            "settings": {"messages": a.messages, "senders": a.senders, "value_bytes": VALUE_SIZE},
            "runs": [{**asdict(r), "rate": r.rate, "cpu_us": r.cpu_us} for r in results],
            "peer": None if peer is None else {"client": "confluent-kafka", "rate": peer[0], "cpu_us": peer[1]},
        }
        a.json.write_text(json.dumps(body, indent=1) + "\n")
        print(f"wrote {a.json}")
    lost = sum(r.sent - r.read_back - r.discarded for r in results)
    return 0 if lost == 0 else 1


def _in_namespace(a: argparse.Namespace) -> int:
    """Re-run this script with the same settings in a new network namespace (its own loopback and UNIX socket
    settings), with ``net.unix.max_dgram_qlen`` set there."""
    args = [
        *("--messages", str(a.messages), "--senders", str(a.senders)),
        *("--budget-kib", str(a.budget_kib), "--configs", a.configs),
        *(["--nonblocking"] if a.nonblocking else []),
        *(["--no-peer"] if a.no_peer else []),
        *("--broker", a.broker),
        *(["--quick"] if a.quick else []),
        *(["--json", str(a.json.resolve())] if a.json else []),
        *(["--profile", str(a.profile.resolve())] if a.profile else []),
    ]
    script = (
        f"ip link set lo up && sysctl -qw net.unix.max_dgram_qlen={a.qlen} && "
        f"exec {shlex.quote(sys.executable)} {shlex.quote(str(Path(__file__).resolve()))} {shlex.join(args)}"
    )
    try:
        return subprocess.run(["unshare", "--net", "sh", "-c", script], check=False).returncode
    except FileNotFoundError:
        print("--qlen needs unshare(1) and ip(8)", file=sys.stderr)
        return 2


def _print(r: Result, senders: int, nonblocking: bool) -> None:
    lost = r.sent - r.read_back - r.discarded  # neither in the broker nor counted as a discard
    print(
        f"\n[{r.config}] {r.rate:,.0f} msgs/s end to end ({r.sent:,} in {r.seconds:.2f} s, the last batch's wait "
        f"included); "
        f"read back {r.read_back:,} (delivered {r.delivered:,}), discarded {r.discarded:,} (counted), "
        + (f"LOST {lost:,}" if lost else "lost 0")
    )
    print(
        f"  intake: every datagram read after {r.read_seconds:.2f} s ({r.sent / r.read_seconds:,.0f} msgs/s); "
        f"daemon CPU {r.cpu_us:.2f} us/message: event loop process {r.loop_cpu_us:.2f}, intake reader process "
        f"{r.reader_cpu_us:.2f}"
    )
    print(
        f"  clients: {'EAGAIN' if nonblocking else 'blocked'} {r.eagain:,} times, "
        f"{r.blocked_s:.2f} s off-CPU waiting for room in all "
        f"({r.blocked_s / senders / r.sender_wall_s:.0%} of each sender's time); "
        f"senders done in {r.sender_wall_s:.2f} s, {r.sender_cpu_us:.2f} us CPU/message"
    )
    if r.stages:
        print("  where the CPU goes (sampled on CPU time; ns per message):")
        print_table(r.stages)
    grown = r.hwm_kib - r.start_rss_kib
    print(
        f"  memory: VmHWM {r.hwm_kib / 1024:,.1f} MiB, {grown / 1024:,.1f} MiB above the RSS at start; budget "
        f"{r.budget_kib / 1024:,.0f} MiB, of which at most {r.budget_hwm_kib / 1024:,.1f} MiB was held "
        f"(growth / budget held: {grown / max(r.budget_hwm_kib, 1):.2f}x)"
    )


def confluent_peer(broker: EmbeddedBroker, messages: int) -> tuple[float, float, int]:
    """confluent-kafka (librdkafka) producing the same 100-byte keyless messages to tansu from this process:
    (msgs/s until every delivery report, CPU µs per message, messages read back)."""
    topic = f"bench-peer-{os.getpid()}-{int(time.time())}"
    broker.create_topic(topic, PARTITIONS)
    producer = Producer(
        {"bootstrap.servers": broker.address, "linger.ms": 5, "batch.num.messages": 10_000, "log_level": 3}
    )
    value = b"v" * (VALUE_SIZE - 8)
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    for i in range(messages):
        while True:
            try:
                producer.produce(topic, b"%08d" % (i & 255) + value)
                break
            except BufferError:
                producer.poll(0.01)
        if not i & 1023:
            producer.poll(0)
    left = producer.flush(TIMEOUT_S)
    seconds = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    if left:
        raise RuntimeError(f"confluent-kafka left {left} messages undelivered")
    cpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
    return messages / seconds, cpu / messages * 1e6, consume_count(broker.address, topic, messages)


if __name__ == "__main__":
    sys.exit(main())
