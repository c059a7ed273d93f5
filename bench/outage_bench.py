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

    .venv/bin/python bench/outage_bench.py                          # 20,000 msgs/s, outages of 10 and 30 s, 64 MiB
    .venv/bin/python bench/outage_bench.py --outages 20,25,30 --budget-kib 65536
    .venv/bin/python bench/outage_bench.py --quick                  # 5,000 msgs/s, a 2 s outage: checks that it runs
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from proxy_bench import PARTITIONS, VALUE_SIZE, consume_count, status_kib

from bruce.proxy.embedded import free_port, tansu_binary
from bruce.wire.datagram import build_any_partition

BEFORE_S = 3.0  # steady sending before the outage
AFTER_S = 3.0  # and after the broker is back
TIMEOUT_S = 300.0
MiB = 1024 * 1024


# ----------------------------------------------------------------------------------------------- the broker's gate


class Gate:
    """A TCP forwarder from ``port`` to ``target`` on 127.0.0.1 that can go away and come back on the same port."""

    def __init__(self, port: int, target: int) -> None:
        self.port = port
        self.target = target
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="gate", daemon=True)
        self._thread.start()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    def open(self) -> None:
        async def start() -> None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port, reuse_address=True)

        asyncio.run_coroutine_threadsafe(start(), self.loop).result(10)

    def close(self) -> None:
        """Refuse connects and reset every connection (a dead broker)."""

        async def stop() -> None:
            if self._server is not None:
                self._server.close()
                self._server = None
            for w in list(self._writers):
                w.transport.abort()
            self._writers.clear()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)

    def shutdown(self) -> None:
        self.close()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer), return_exceptions=True)
        for w in (writer, up_writer):
            self._writers.discard(w)
            w.transport.abort()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()
    writer.transport.abort()


def start_tansu(port: int, advertised: int, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [
                str(tansu_binary()),
                "broker",
                *("--listener-url", f"tcp://127.0.0.1:{port}"),
                *("--advertised-listener-url", f"tcp://127.0.0.1:{advertised}"),
                *("--storage-engine", "memory://tansu/"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("tansu did not start")


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


def counters(url: str) -> dict[str, int]:
    """The daemon's counters, summed over labels, plus ``Discard:<reason>`` per reason."""
    with urllib.request.urlopen(url + "/counters/json", timeout=10) as r:
        out: dict[str, int] = {}
        for c in json.load(r)["counters"]:
            out[c["name"]] = out.get(c["name"], 0) + c["value"]
            reason = dict(c.get("labels") or {}).get("reason")
            if c["name"] == "Discard" and reason:
                out[f"Discard:{reason}"] = out.get(f"Discard:{reason}", 0) + c["value"]
        return out


def budget_used(url: str) -> float:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("bruce_msg_buffer_used_bytes "):
                return float(line.split()[1])
    raise KeyError("bruce_msg_buffer_used_bytes")


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


def run_one(outage: float, rate: int, budget_kib: int, gate: Gate, tansu_port: int, workdir: Path, n: int) -> Result:
    topic = f"outage-{os.getpid()}-{n}"
    subprocess.run(
        [
            str(tansu_binary()),
            "topic",
            "create",
            topic,
            "--partitions",
            str(PARTITIONS),
            "--broker",
            f"tcp://127.0.0.1:{tansu_port}",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    sock = str(workdir / f"bruce-{n}.sock")
    log_path = workdir / f"bruce-{n}.log"
    args = [
        str(Path(sys.executable).parent / "bruce"),
        *("--initial_brokers", f"127.0.0.1:{gate.port}", "--receive_socket_name", sock, "--status_port", "0"),
        *("--msg_buffer_max", str(budget_kib), "--log_level", "LOG_NOTICE"),
    ]
    with open(log_path, "wb") as log:
        daemon = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = _wait_serving(daemon, log_path)
        _wait(lambda: counters(url).get("MetadataChanged", 0) >= 1, "the daemon's first metadata")
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
                peak_held, peak_budget = held, budget_used(url)
                peak_rss = status_kib(daemon.pid, "VmRSS") * 1024 - rss0
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
        _wait(lambda: _settled(url) >= sent, "every message to have its fate")
        c = counters(url)
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(60)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait(10)
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
    )


def _settled(url: str) -> int:
    c = counters(url)
    return c.get("MsgDelivered", 0) + c.get("MsgDiscarded", 0)


def _wait(predicate, what: str, timeout: float = TIMEOUT_S) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _wait_serving(daemon: subprocess.Popen[bytes], log_path: Path) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            raise RuntimeError(f"bruce exited with {daemon.returncode}:\n{log_path.read_text()}")
        for line in log_path.read_text().splitlines():
            if "serving: socket" in line:
                return line.rsplit("status ", 1)[1].rstrip("/")
        time.sleep(0.05)
    raise RuntimeError(f"bruce did not start:\n{log_path.read_text()}")


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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rate", type=int, default=20_000, help="datagrams per second")
    p.add_argument("--outages", default="10,30", help="comma-separated outage lengths in seconds")
    p.add_argument("--budget-kib", type=int, default=65536, help="--msg_buffer_max of the daemon (KiB)")
    p.add_argument("--quick", action="store_true", help="5,000 msgs/s, one 2 s outage")
    a = p.parse_args(argv)
    if a.quick:
        a.rate, a.outages = 5000, "2"
    outages = [float(x) for x in a.outages.split(",") if x]
    print(
        f"outage bench: {a.rate:,} x {VALUE_SIZE}-byte AnyPartition datagrams/s, {BEFORE_S:g} s before and"
        f" {AFTER_S:g} s after each outage, --msg_buffer_max {a.budget_kib:,} KiB, {PARTITIONS} partitions"
    )
    failed = False
    with tempfile.TemporaryDirectory(prefix="outage-bench-") as tmp:
        tansu_port, gate_port = free_port(), free_port()
        tansu = start_tansu(tansu_port, gate_port, Path(tmp) / "tansu.log")
        gate = Gate(gate_port, tansu_port)
        gate.open()
        try:
            for n, outage in enumerate(outages):
                r = run_one(outage, a.rate, a.budget_kib, gate, tansu_port, Path(tmp), n)
                _print(r, a.budget_kib)
                failed |= r.read_back != r.delivered or r.delivered + r.discarded != r.sent
        finally:
            gate.shutdown()
            tansu.send_signal(signal.SIGTERM)
            try:
                tansu.wait(10)
            except subprocess.TimeoutExpired:
                tansu.kill()
                tansu.wait(10)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
