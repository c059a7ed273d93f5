"""A tansu cluster whose log survives its brokers: tansu on S3 storage served by a local moto server, for fault tests
(tests/e2e/test_durable_cluster.py, tests/e2e/test_producer_outage.py) and bench/chaos.py.

Rules:
- :class:`MotoS3` runs ``python -m moto.server`` on a free 127.0.0.1 port (its own process, stopped by its PID) and
  makes buckets with a plain HTTP PUT. moto keeps the objects in its memory: they outlive every broker, not moto.
- :class:`DurableCluster` runs one or several tansu brokers on one bucket (the same cluster id): each serves every
  topic and partition, and reports itself as the leader of all of them. They are not a coordinated cluster: each
  keeps its own view (watermarks, idempotent producers' sequences) in memory, so two of them taking writes for the
  same partition in turn is not a setup to rely on; for faults under load bench/chaos.py uses one broker and moves
  it. Clients reach broker ``i`` through a
  :class:`~netproxy.NetProxy` on a port of its own (:meth:`address`) which the broker advertises, so every
  connection can be cut, or its answers dropped, like a broken network.
- :meth:`DurableCluster.kill` kills a broker with SIGKILL (by its PID) and closes its address (connections reset,
  new ones refused); :meth:`restart` starts it again at the same address with the log as it was;
  :meth:`move` starts it again at a new address (the old one stays closed).
- Readers wait longer: tansu on S3 answers a fetch with nothing at all when reading its stored batches (one object
  each) takes longer than the fetch's wait, so a consumer with a short ``fetch.wait.max.ms`` (50 ms) never gets past
  a hundred small batches. :data:`READ_PROPS` sets a wait that does.
- tansu and moto die with the thread that started them (``--pdeathsig``), so the cluster starts them all from one
  thread it owns, whatever thread calls it. Every wait is bounded; :meth:`close` stops everything.

bench/ imports this module as the other benches import tests/netproxy.py and tests/outage.py (``sys.path``): it is
test infrastructure, not part of the package.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from netproxy import ThreadedProxy, proxy_in_thread

from bruce.proxy.config.ports import free_port
from bruce.proxy.daemon.embedded import EmbeddedBroker, die_with_parent

TIMEOUT = 30.0
READ_PROPS = {"fetch.wait.max.ms": 5000}  # consumer settings for reading a durable cluster back (see the rules)


class MotoS3:
    """An S3 endpoint on 127.0.0.1 (moto's server). ``with MotoS3(log) as s3: s3.bucket("b"); s3.env``."""

    def __init__(self, log_path: Path | None = None) -> None:
        self.port = free_port()
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        """What tansu needs to use this endpoint (the credentials are moto's dummies)."""
        return {
            "AWS_ENDPOINT": self.endpoint,
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        }

    def start(self) -> MotoS3:
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115 - handed to Popen
        try:
            self.process = subprocess.Popen(
                [
                    *die_with_parent("KILL"),
                    sys.executable,
                    "-m",
                    "moto.server",
                    "-H",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            if log is not subprocess.DEVNULL:
                log.close()
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"moto.server exited with {self.process.returncode} (is moto[server] installed?)")
            with contextlib.suppress(OSError):
                urllib.request.urlopen(self.endpoint + "/", timeout=2).close()
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"moto.server did not answer on {self.endpoint} within {TIMEOUT} s")

    def bucket(self, name: str) -> str:
        """Create bucket ``name`` (an HTTP PUT); returns tansu's storage URL for it."""
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            if answer.status != 200:
                raise RuntimeError(f"creating bucket {name!r} answered {answer.status}")
        return f"s3://{name}/"

    def stop(self) -> None:
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(TIMEOUT)

    def __enter__(self) -> MotoS3:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class DurableCluster:
    """``brokers`` tansu brokers on one bucket of ``s3``, each behind a proxy of its own (see the module rules)."""

    def __init__(self, s3: MotoS3, bucket: str, workdir: Path, brokers: int = 1) -> None:
        self.s3 = s3
        self.storage = s3.bucket(bucket)
        self.workdir = workdir
        self.ports = [free_port() for _ in range(brokers)]  # the client-facing ports
        self.tansu: list[EmbeddedBroker | None] = [None] * brokers
        self.proxies: list[ThreadedProxy | None] = [None] * brokers
        self._closers: list[contextlib.ExitStack | None] = [None] * brokers
        self._starter = ThreadPoolExecutor(1, thread_name_prefix="durable-tansu")
        for i in range(brokers):
            self.restart(i)

    def address(self, i: int = 0) -> str:
        return f"127.0.0.1:{self.ports[i]}"

    @property
    def bootstrap(self) -> str:
        """Every broker's address, comma-separated (``bootstrap.servers`` / ``--initial_brokers``)."""
        return ",".join(self.address(i) for i in range(len(self.ports)))

    def proxy(self, i: int = 0) -> ThreadedProxy:
        proxy = self.proxies[i]
        if proxy is None:
            raise RuntimeError(f"broker {i} is down")
        return proxy

    def create_topic(self, name: str, partitions: int) -> None:
        broker = next(t for t in self.tansu if t is not None)
        broker.create_topic(name, partitions)

    def kill(self, i: int = 0) -> None:
        """SIGKILL broker ``i`` and close its address."""
        self._starter.submit(self._kill, i).result(TIMEOUT)

    def restart(self, i: int = 0) -> float:
        """Start broker ``i`` again (it must be down or never started) at its address; returns when it accepts
        connections (``time.monotonic()``)."""
        return self._starter.submit(self._start, i).result(TIMEOUT * 2)

    def move(self, i: int = 0, port: int | None = None) -> str:
        """Kill broker ``i`` and start it at a new address (``port``, or a free one); returns that address."""
        self.kill(i)
        self.ports[i] = port or free_port()
        self.restart(i)
        return self.address(i)

    def cut(self, i: int = 0) -> int:
        """Reset every connection to broker ``i`` now; returns how many."""
        return self.proxy(i).cut()

    def drop_answers(self, i: int, drop: bool) -> None:
        """While ``drop``, broker ``i``'s answers are read and thrown away (requests still reach it)."""
        self.proxy(i).set_drop_answers(drop)

    def _start(self, i: int) -> float:
        if self.tansu[i] is not None:
            raise RuntimeError(f"broker {i} is running")
        stack = contextlib.ExitStack()
        tansu = EmbeddedBroker(
            advertised_port=self.ports[i],
            log_path=self.workdir / f"tansu-{i}.log",
            storage_engine=self.storage,
            env=self.s3.env,
        )
        stack.enter_context(tansu)
        try:
            self.proxies[i] = stack.enter_context(proxy_in_thread("127.0.0.1", tansu.port, port=self.ports[i]))
        except BaseException:
            stack.close()
            raise
        self.tansu[i], self._closers[i] = tansu, stack
        return time.monotonic()

    def _kill(self, i: int) -> None:
        tansu, stack = self.tansu[i], self._closers[i]
        self.tansu[i] = self.proxies[i] = self._closers[i] = None
        if tansu is not None and tansu.process is not None:
            tansu.process.kill()
            tansu.process.wait(TIMEOUT)
            tansu.process = None
        if stack is not None:
            stack.close()

    def close(self) -> None:
        for i in range(len(self.ports)):
            with contextlib.suppress(Exception):
                self.kill(i)
        self._starter.shutdown()

    def __enter__(self) -> DurableCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def durable_cluster(workdir: Path, brokers: int = 1, bucket: str = "tansu"):  # type: ignore[no-untyped-def]
    """A moto server and a :class:`DurableCluster` on it, both stopped on leaving (for scripts)."""
    with MotoS3(workdir / "moto.log") as s3, DurableCluster(s3, bucket, workdir, brokers) as cluster:
        yield cluster
