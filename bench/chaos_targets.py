"""What bench/chaos.py puts under load and kills: the daemon (the ``bruce`` command on a spool) fed by a sender
thread, or the library (``bruce.producer.Producer`` in a worker process of its own).

Rules:
- Every message carries its number: the value starts with nine digits. Odd numbers are keyed (a partition key
  ``n % KEYS``, Kafka key ``k<NN>``), even ones are not.
- Daemon: a number counts as *sent* when the socket took the datagram; a send the socket refused (daemon down,
  queue full for a second) is *refused*, which the sender saw. A kill pauses the sender and waits until the daemon
  spooled every datagram the socket took (``SpoolAppended`` + ``SpoolFull`` + ``SpoolNotSpooled`` of this run; its
  ``MsgReceived`` counts replays too): what a kill finds in the kernel's socket queue is lost by any daemon, and the
  burst being parsed when it dies is the spool's documented window; neither is what this run measures. Discards are
  read from the daemon's discard log (reason per number). Its lines are written by a thread a moment later, so a kill
  also waits (bounded) until the log wrote every line it queued (``DiscardLogLinesQueued`` = ``…Written`` +
  ``…Lost``); lines still queued when the wait gives up are counted (``unlogged_at_kills``), not hidden.
- Library: the worker notes its numbers when it hands them to ``send`` (*sent*) and when they are acknowledged
  (*acked*), in a file flushed per line. Every worker runs with the same ``state_path`` (docs/producer.md, "Exactly
  once across restarts"): the next worker settles the batches a killed one sent and did not see acknowledged. A
  ``kill -9`` can leave numbers sent and not acknowledged (queued, never sent: the caller's), counted apart from
  losses: a loss is an acknowledged number not read back.
- Every wait is bounded; processes are stopped by their PID. A daemon just restarted does not read its socket while it
  settles the batches the killed one left (at most ``SETTLE_S``), so the kill's spool wait allows for that
  (:data:`SPOOL_WAIT`). A wait that still expires raises :class:`HarnessTimeout` before the kill: the run notes it
  and goes on with the next fault (the daemon is not killed with datagrams unread, which would count as losses).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from proxy_bench import counters, gauge, wait_for, wait_serving

from bruce.client import BruceClient
from bruce.proxy.daemon.exactly_once import SETTLE_S
from bruce.wire.errors import BruceError

VALUE_BYTES = 100
KEYS = 16
TIMEOUT = 60.0
SPOOL_WAIT = SETTLE_S + 30.0  # a restarted daemon reads its socket again once it settled (within SETTLE_S)


class HarnessTimeout(Exception):
    """A wait of the harness expired before a fault: the fault was not made; the run notes it and goes on."""


def value(n: int) -> bytes:
    head = b"%09d " % n
    return head + b"x" * (VALUE_BYTES - len(head))


def number(value: bytes) -> int:
    return int(value[:9])


class Load(threading.Thread):
    """Steady load through the daemon's socket: ``rate`` messages/s until :meth:`stop`; :attr:`lock` pauses it."""

    def __init__(self, sock: Path, topic: str, rate: int) -> None:
        super().__init__(name="chaos-load", daemon=True)
        self.sock, self.topic, self.rate = sock, topic, rate
        self.lock = threading.Lock()  # held by a send and by anything that must see no send under way
        self.next = 0
        self.sent: list[int] = []
        self.refused: list[int] = []
        self.taken_since_start = 0  # datagrams taken by the socket since the current daemon started
        self._halt = threading.Event()
        self._client = BruceClient(sock, timeout=1.0)

    def send(self, count: int) -> int:
        """Send up to ``count`` messages now (the caller holds :attr:`lock`); the first refusal ends it (a full
        socket has already waited a second). Returns how many the socket took."""
        for i in range(count):
            n, self.next = self.next, self.next + 1
            try:
                if n % 2:
                    self._client.send_partition_key(self.topic, n % KEYS, value(n), key=b"k%02d" % (n % KEYS))
                else:
                    self._client.send_any_partition(self.topic, value(n))
            except BruceError:
                self.refused.append(n)
                return i
            self.sent.append(n)
            self.taken_since_start += 1
        return count

    def run(self) -> None:
        tick = 0.01
        per_tick = max(1, round(self.rate * tick))
        due = time.monotonic()
        while not self._halt.is_set():
            with self.lock:
                self.send(per_tick)
            due += tick
            time.sleep(max(0.0, due - time.monotonic()))

    def stop(self) -> None:
        self._halt.set()
        self.join(TIMEOUT)
        self._client.close()


class DaemonTarget:
    """The ``bruce`` command on ``spool`` with the chaos run's options, killed and restarted on demand."""

    def __init__(self, workdir: Path, topic: str, rate: int, extra: Sequence[str]) -> None:
        self.workdir = workdir
        self.sock = workdir / "bruce.sock"
        self.discard_log = workdir / "discards.log"
        self.extra = list(extra)
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.starts = 0
        self.load = Load(self.sock, topic, rate)
        self.totals: Counter[str] = Counter()  # the counters of every daemon run so far, each read at its end
        self.killed_after: list[int] = []  # the last number sent before each kill
        self.unlogged_at_kills = 0  # discard log lines queued and not yet written when a kill came

    def start(self, brokers: str) -> None:
        """Start the daemon (the sender is paused by the caller, or not yet running)."""
        self.starts += 1
        log = self.workdir / f"bruce-{self.starts}.log"
        args = [
            str(Path(sys.executable).parent / "bruce"),
            *("--initial_brokers", brokers, "--receive_socket_name", str(self.sock), "--status_port", "0"),
            *("--spool_dir", str(self.workdir / "spool"), "--discard_log_path", str(self.discard_log)),
            *("--discard_log_max_file_size", str(1 << 20), "--discard_log_bad_msg_prefix_size", "16"),
            *("--log_level", "LOG_NOTICE", *self.extra),
        ]
        with open(log, "wb") as out:
            self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        self.url = wait_serving(self.process, log)
        self.load.taken_since_start = 0

    def kill(self, brokers: str) -> None:
        """``kill -9`` once the daemon read everything the socket took, then start it again on the same spool."""
        with self.load.lock:
            taken = self.load.taken_since_start
            try:
                wait_for(lambda: _spooled(self.url) >= taken, "the daemon to spool what it read", SPOOL_WAIT)
            except RuntimeError as e:
                raise HarnessTimeout(f"{e} ({SPOOL_WAIT:.0f} s; {_spooled(self.url)} of {taken}): not killed") from None
            with contextlib.suppress(RuntimeError):
                wait_for(lambda: _unlogged(counters(self.url)) == 0, "the discard log to write its queue", 10)
            assert self.process is not None
            before = counters(self.url)  # the moment before the kill
            self.totals.update(before)
            self.unlogged_at_kills += _unlogged(before)
            self.killed_after.append(self.load.next - 1)
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(TIMEOUT)
            self.start(brokers)

    def settle(self, timeout: float) -> bool:
        """Wait until the daemon read every datagram the socket took and holds nothing (its spool empty); False if
        it still did after ``timeout``."""
        taken = self.load.taken_since_start
        with contextlib.suppress(RuntimeError, OSError):  # OSError: the daemon does not answer
            wait_for(lambda: _settled(self.url, taken), "the daemon to deliver what it holds", timeout)
            return True
        return False

    def counters(self) -> dict[str, int]:
        """The acknowledgement and spool counters summed over every daemon run (call after :meth:`settle`); the
        current run's are left out if the daemon does not answer."""
        now: dict[str, int] = {}
        with contextlib.suppress(OSError):
            now = counters(self.url)
        totals = self.totals + Counter(now)
        keep = ("Ack", "Msg", "Spool", "PossibleDuplicate", "Discard:", "DiscardLogLines")
        return {k: v for k, v in sorted(totals.items()) if k.startswith(keep) and v}

    def stop(self) -> None:
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(TIMEOUT)

    def discarded(self) -> tuple[dict[int, str], int]:
        """Number → reason, from the discard log (``DISC`` lines; the value's prefix carries the number), and how
        many possible duplicates it reported (``DUP`` lines)."""
        out: dict[int, str] = {}
        dups = 0
        for path in sorted(self.workdir.glob("discards.log*")):
            for line in path.read_text(errors="replace").splitlines():
                fields = line.split()
                if "event:" not in fields:
                    continue
                if fields[fields.index("event:") + 1] != "DISC":
                    dups += fields[fields.index("event:") + 1] == "DUP"
                    continue
                reason = fields[fields.index("info:") + 1]
                if reason == "SERVER_SHUTDOWN":
                    continue  # kept in the spool for the next start: not a discard
                msg = fields[fields.index("msg:") + 1]
                raw = base64.b64decode(msg[msg.index("[") + 1 : -1])
                with contextlib.suppress(ValueError):
                    out[number(raw)] = reason
        return out, dups


def _spooled(url: str) -> int:
    """Datagrams this daemon run took into its spool or turned away as the spool was full (replays excluded)."""
    c = counters(url)
    return c.get("SpoolAppended", 0) + c.get("SpoolFull", 0) + c.get("SpoolNotSpooled", 0)


def _unlogged(c: dict[str, int]) -> int:
    """Discard log lines queued and neither written nor lost yet: what a kill now would keep out of the file."""
    return c.get("DiscardLogLinesQueued", 0) - c.get("DiscardLogLinesWritten", 0) - c.get("DiscardLogLinesLost", 0)


def _settled(url: str, taken: int) -> bool:
    c = counters(url)
    received = c.get("MsgReceived", 0)
    done = c.get("MsgDelivered", 0) + c.get("MsgDiscarded", 0)
    return _spooled(url) >= taken and received <= done and gauge(url, "bruce_spool_pending") == 0


class LibraryTarget:
    """``bruce.producer.Producer`` in a worker process (``chaos_targets.py --worker``), killed and restarted."""

    def __init__(self, workdir: Path, topic: str, rate: int) -> None:
        self.workdir, self.topic, self.rate = workdir, topic, rate
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.next = 0

    def _journal(self, i: int) -> Path:
        return self.workdir / f"worker-{i}.txt"

    def start(self, brokers: str) -> None:
        self.starts += 1
        args = [sys.executable, __file__, "--worker", brokers, self.topic, str(self.rate), str(self.next)]
        args += [str(self._journal(self.starts)), str(self.workdir / "producer-state")]
        with open(self.workdir / f"worker-{self.starts}.log", "wb") as out:
            self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=out)

    def kill(self, brokers: str) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(TIMEOUT)
        sent, _, _ = self.journal()
        self.next = max(sent, default=self.next - 1) + 1
        self.start(brokers)

    def settle(self, timeout: float) -> bool:
        """Ask the worker to flush and stop (SIGTERM); False if it did not within ``timeout``."""
        assert self.process is not None
        wait_for(lambda: self._journal(self.starts).exists(), "the worker to start", TIMEOUT)
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout) == 0
        except subprocess.TimeoutExpired:
            return False

    def stop(self) -> None:
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(TIMEOUT)

    def journal(self) -> tuple[list[int], dict[int, tuple[int, int]], dict[int, str]]:
        """Every worker's sent numbers, acknowledged numbers (→ the partition and offset acknowledged) and discards
        (number → reason)."""
        sent: list[int] = []
        acked: dict[int, tuple[int, int]] = {}
        discarded: dict[int, str] = {}
        for i in range(1, self.starts + 1):
            with contextlib.suppress(FileNotFoundError):
                for line in self._journal(i).read_text().splitlines():
                    kind, _, rest = line.partition(" ")
                    if not line.endswith(";"):
                        continue  # torn by the kill
                    numbers = [int(x) for x in rest.rstrip(";").split()[{"d": 1, "a": 2}.get(kind, 0) :]]
                    if kind == "s":
                        sent.extend(range(numbers[0], numbers[1] + 1))
                    elif kind == "a":
                        partition, base = (int(x) for x in rest.split()[:2])
                        acked.update((n, (partition, base + i)) for i, n in enumerate(numbers))
                    elif kind == "d":
                        discarded.update(dict.fromkeys(numbers, rest.split()[0]))
        return sent, acked, discarded


async def _worker(brokers: str, topic: str, rate: int, first: int, journal: Path, state: Path) -> None:
    from bruce.producer import Producer, ProducerConfig

    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    out = open(journal, "a", buffering=1)  # noqa: SIM115 - a line per event, flushed; its existence: ready for TERM

    class Sink:
        def delivered(self, topic: str, partition: int, base_offset: int, messages: Sequence) -> None:
            out.write(f"a {partition} {base_offset} " + " ".join(str(number(m.value)) for m in messages) + ";\n")

        def discarded(self, topic: str, messages: Sequence, reason: object) -> None:
            out.write(f"d {getattr(reason, 'name', reason)} " + " ".join(str(number(m.value)) for m in messages))
            out.write(";\n")

        def possible_duplicates(self, topic: str, messages: Sequence) -> None:
            pass

    config = ProducerConfig(bootstrap_servers=tuple(brokers.split(",")), linger_ms=5, state_path=str(state))
    async with Producer(config, sink=Sink()) as producer:
        n, tick = first, 0.01
        per_tick = max(1, round(rate * tick))
        while not stop.is_set():
            out.write(f"s {n} {n + per_tick - 1};\n")
            for i in range(n, n + per_tick):
                try:
                    if i % 2:
                        producer.send(topic, value(i), key=b"k%02d" % (i % KEYS), partition_key=i % KEYS)
                    else:
                        producer.send(topic, value(i))
                except BruceError as e:  # refused at once: the application knows
                    out.write(f"d {e.reason} {i};\n")
            n += per_tick
            await asyncio.sleep(tick)
        await producer.flush(TIMEOUT)
    out.close()


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:
    _brokers, _topic, _rate, _first, _journal_path, _state = sys.argv[2:8]
    asyncio.run(_worker(_brokers, _topic, int(_rate), int(_first), Path(_journal_path), Path(_state)))
