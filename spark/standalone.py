"""A Spark standalone cluster on loopback: one master and N workers, each its own JVM, started from pyspark's own
``bin/spark-class`` (``org.apache.spark.deploy.master.Master`` / ``...worker.Worker``). For the cluster tests,
``bench/spark_bench.py --cluster`` and ``examples/cluster`` — a real cluster of executors on one machine.

Rules:
- Small by design (a shared machine): each worker offers ``cores`` cores and ``memory`` to executors; the master and
  worker daemons get ``daemon_memory`` of heap. Everything binds to 127.0.0.1 on free ports; the work and log
  directories are under ``root``.
- Executors run their Python workers with ``python`` (default: this interpreter), so the data source is shipped
  "installed in the workers' Python": bruce-kafka[spark] must be importable there (docs/spark.md).
- Startup waits are bounded (``timeout`` per daemon): a daemon that exits or does not come up in time raises
  :class:`ClusterError` naming its log file and quoting its end.
- :meth:`StandaloneCluster.stop` stops every JVM it started by PID (SIGTERM, then SIGKILL after a grace period),
  executors first; it runs on any failure of :meth:`start` too. :meth:`StandaloneCluster.kill_worker` kills one worker
  and the executor it runs (SIGKILL, by PID): the loss of a machine; :meth:`StandaloneCluster.kill_executors` kills
  the executors' JVMs only (their workers start new ones).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bruce.proxy import free_port
from bruce.wire import BruceError

_MASTER = "org.apache.spark.deploy.master.Master"
_WORKER = "org.apache.spark.deploy.worker.Worker"
_EXECUTOR = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


class ClusterError(BruceError):
    reason = "SPARK_CLUSTER"


def spark_home() -> Path:
    """pyspark's own installation: its ``bin/spark-class`` and ``jars``."""
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass
class SparkDaemon:
    """One JVM this cluster started: the master or a worker."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path


class StandaloneCluster:
    """``with StandaloneCluster(tmp, workers=2) as cluster: ... cluster.master_url ...``."""

    def __init__(
        self,
        root: Path,
        *,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
        daemon_memory: str = "256m",
        python: str = sys.executable,
        timeout: float = 90.0,
    ) -> None:
        self.root = Path(root)
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.daemon_memory = daemon_memory
        self.python = python
        self.timeout = timeout
        self.port = free_port()
        self.ui_port = free_port()
        self.daemons: list[SparkDaemon] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        """The environment for the daemons and for ``spark-submit`` against this cluster."""
        home = spark_home()
        return {
            **os.environ,
            "SPARK_HOME": str(home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": self.daemon_memory,
            "SPARK_LOG_DIR": str(self.root / "logs"),
            "SPARK_CONF_DIR": str(self.root / "conf"),
            "PYSPARK_PYTHON": self.python,
            "PYSPARK_DRIVER_PYTHON": self.python,
        }

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> StandaloneCluster:
        """Start the master, then the workers; return when every worker has registered with the master."""
        (self.root / "logs").mkdir(parents=True, exist_ok=True)
        (self.root / "conf").mkdir(parents=True, exist_ok=True)
        try:
            self._launch("master", _MASTER, "--host", "127.0.0.1", "--port", str(self.port), "--webui-port",
                         str(self.ui_port))  # fmt: skip
            self._wait(lambda: self._status() is not None, "the master", self.daemons[0])
            for i in range(self.workers):
                self.add_worker(f"worker-{i + 1}")
        except BaseException:
            self.stop()
            raise
        return self

    def add_worker(self, name: str) -> SparkDaemon:
        """Start one more worker and wait until the master counts it alive."""
        alive = self.alive_workers()
        work = self.root / name
        work.mkdir(parents=True, exist_ok=True)
        daemon = self._launch(
            name, _WORKER, "--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port()),
            "--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(work), self.master_url,
        )  # fmt: skip
        self._wait(lambda: self.alive_workers() > alive, name, daemon)
        return daemon

    def session_conf(self, executor_memory: str = "512m") -> dict[str, str]:
        """A driver's settings for this cluster: one executor per worker (``cores`` cores, ``executor_memory``), the
        driver on loopback, every Python process running ``python``."""
        return {
            "spark.executor.memory": executor_memory,
            "spark.executor.cores": str(self.cores),
            "spark.cores.max": str(self.cores * self.workers),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": str(self.workers),
            "spark.pyspark.python": self.python,
            "spark.pyspark.driver.python": self.python,
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",  # start once every executor is there
            "spark.scheduler.maxRegisteredResourcesWaitingTime": f"{int(self.timeout)}s",
        }

    def submit_command(self, script: str | Path, *args: str, executor_memory: str = "512m") -> list[str]:
        """``spark-submit`` of a Python ``script`` to this cluster, as a user runs it (:meth:`session_conf`)."""
        command = [str(spark_home() / "bin" / "spark-submit"), "--master", self.master_url, "--driver-memory", "512m"]
        for key, value in self.session_conf(executor_memory).items():
            command += ["--conf", f"{key}={value}"]
        return [*command, str(script), *args]

    def alive_workers(self) -> int:
        status = self._status()
        return int(status.get("aliveworkers", 0)) if status else 0

    def kill_worker(self, name: str) -> list[int]:
        """SIGKILL worker ``name`` and every process under it (its executor and the executor's Python workers);
        returns the PIDs killed."""
        daemon = next(d for d in self.daemons if d.name == name)
        pids = [*_descendants(daemon.process.pid), daemon.process.pid]
        for pid in pids:
            _signal(pid, signal.SIGKILL)
        daemon.process.wait(10)
        return pids

    def kill_executors(self) -> list[int]:
        """SIGKILL every executor JVM the workers run (by PID; the workers start new ones): returns the PIDs."""
        pids = [
            pid
            for daemon in self.daemons
            for pid in _descendants(daemon.process.pid)
            if _EXECUTOR.encode() in _cmdline(pid)
        ]
        for pid in pids:
            _signal(pid, signal.SIGKILL)
        return pids

    def stop(self, grace: float = 10.0) -> None:
        """Stop every JVM started here, by PID: workers (their executors first), then the master."""
        for daemon in reversed(self.daemons):
            if daemon.process.poll() is not None:
                continue
            for pid in _descendants(daemon.process.pid):
                _signal(pid, signal.SIGTERM)
            daemon.process.terminate()
            try:
                daemon.process.wait(grace)
            except subprocess.TimeoutExpired:
                for pid in _descendants(daemon.process.pid):
                    _signal(pid, signal.SIGKILL)
                daemon.process.kill()
                daemon.process.wait(5)
        self.daemons.clear()

    def log_paths(self) -> list[Path]:
        return [d.log for d in self.daemons]

    # ---------------------------------------------------------------- pieces

    def _launch(self, name: str, main_class: str, *args: str) -> SparkDaemon:
        command = [str(spark_home() / "bin" / "spark-class"), main_class, *args]
        log = self.root / "logs" / f"{name}.log"
        if shutil.which("setpriv"):  # the JVM dies with this process even on kill -9 (as the embedded broker)
            command = [shutil.which("setpriv") or "setpriv", "--pdeathsig", "TERM", "--", *command]
        with open(log, "wb") as out:
            process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=self.env, cwd=self.root
            )
        daemon = SparkDaemon(name, process, log)
        self.daemons.append(daemon)
        return daemon

    def _wait(self, ready: Callable[[], bool], what: str, daemon: SparkDaemon) -> None:
        deadline = time.monotonic() + self.timeout
        while not ready():
            if daemon.process.poll() is not None:
                raise ClusterError(f"{what} exited with status {daemon.process.returncode}; {_tail(daemon.log)}")
            if time.monotonic() > deadline:
                raise ClusterError(f"{what} was not up within {self.timeout:.0f} s; {_tail(daemon.log)}")
            time.sleep(0.5)

    def _status(self) -> dict[str, Any] | None:
        """The master's JSON status page, or None while it is not answering."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as answer:
                status: dict[str, Any] = json.load(answer)
                return status
        except (OSError, ValueError):
            return None


def _tail(log: Path, size: int = 2000) -> str:
    text = log.read_text(errors="replace")[-size:] if log.exists() else "(no output)"
    return f"its log {log} ends with:\n{text}"


def _descendants(pid: int) -> list[int]:
    """Every process under ``pid``, deepest first (from /proc: Linux)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    out: list[int] = []
    stack = list(children.get(pid, ()))
    while stack:
        child = stack.pop()
        out.append(child)
        stack.extend(children.get(child, ()))
    return out[::-1]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
