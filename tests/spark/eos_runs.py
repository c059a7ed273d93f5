"""Kill runs of a streaming copy (tests/spark/eos_job.py): the driver's Python process or its JVM killed with
SIGKILL, or ``query.stop()``, or (on a standalone cluster) the executors' JVMs killed, in the middle of a
micro-batch; then the job restarted from its checkpoint until the source is copied, and the sink read back with the
library's read_committed reader (tansu lists no aborted transactions, so confluent-kafka's read_committed would count
the aborted writes of the killed run).

Shared by the tests and bench/spark_eos_bench.py (``--kills``, ``--cluster``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Producer
from pyspark.sql import SparkSession

from bruce.spark import KafkaReader
from bruce.spark.options import ClientConfig
from bruce.spark.standalone import StandaloneCluster

from . import eos_job

JOB = Path(__file__).with_name("eos_job.py")
KINDS = ("driver", "jvm", "stop")  # kill -9 of the driver's Python process, of its JVM, query.stop()
CLUSTER_KINDS = (*KINDS, "executor")  # on a standalone cluster also: kill -9 of the executors' JVMs


@dataclass(frozen=True)
class KillRun:
    kind: str
    exactly_once: bool
    rows: int
    written_at_kill: int  # the sink's high watermark when the first run was killed or stopped
    values: Counter  # the sink's committed values, read back with read_committed

    @property
    def lost(self) -> int:
        return sum(1 for i in range(self.rows) if self.values[b"%d" % i] == 0)

    @property
    def duplicated(self) -> int:
        return sum(n - 1 for n in self.values.values() if n > 1)

    def describe(self) -> str:
        mode = "exactlyOnce" if self.exactly_once else "at-least-once"
        return (
            f"{self.kind:6} {mode:13}: {self.rows} rows, stopped with {self.written_at_kill} records written; "
            f"read_committed: {sum(self.values.values())} records, {self.lost} lost, {self.duplicated} duplicated"
        )


def fill(address: str, topic: str, rows: int) -> None:
    """Values ``b"0"`` .. ``rows - 1``, keyed so that both partitions get some."""
    producer = Producer({"bootstrap.servers": address, "linger.ms": 20, "log_level": 3})
    for i in range(rows):
        producer.produce(topic, key=b"k%d" % (i % 7), value=b"%d" % i)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0


def written(address: str, topic: str) -> int:
    """The sink's high watermarks summed (every record, committed or not, control records included)."""
    with KafkaReader(ClientConfig((address,))) as kafka:
        return sum(kafka.latest_offsets(topic, kafka.partitions(topic)).values())


def committed_values(address: str, topic: str) -> Counter:
    """Every committed value of ``topic``, read with the library's read_committed reader."""
    out: Counter = Counter()
    with KafkaReader(ClientConfig((address,), isolation="read_committed")) as kafka:
        partitions = kafka.partitions(topic)
        ends = kafka.latest_offsets(topic, partitions)
        for p in partitions:
            for records in kafka.read(topic, p, 0, ends[p]):
                out.update(r.value for r in records)
    return out


def _job(args: dict, log: Path, env: dict[str, str] | None) -> tuple[subprocess.Popen, int]:
    """Start the job as its own driver process; returns it and its JVM's pid once the session is up."""
    command = [sys.executable, str(JOB), json.dumps(args)]
    with log.open("a") as out:  # the job keeps its own descriptor
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=out, text=True, env=env or os.environ)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("JVM "), f"the job did not start (log: {log}): {line!r}"
    return proc, int(line.split()[1])


def kill_run(
    address: str,
    source: str,
    sink: str,
    workdir: Path,
    *,
    kind: str,
    exactly_once: bool,
    rows: int,
    max_offsets: int,
    kill_at: int,
    row_delay: float = 0.0005,
    timeout: float = 480.0,
    session: SparkSession | None = None,
    cluster: StandaloneCluster | None = None,
) -> KillRun:
    """One kill run (the source already holds ``rows`` rows): kill or stop once the sink has ``kill_at`` records,
    restart from the checkpoint, read back.

    ``session``: the restart (and, for ``stop``, the whole run) runs as a query in this session instead of a new
    driver process — one driver start-up instead of two. ``cluster``: the driver processes connect to this standalone
    cluster (local[2] otherwise); ``executor`` kills the executors' JVMs instead of a driver."""
    args = {
        "address": address,
        "source": source,
        "sink": sink,
        "checkpoint": str(workdir / f"checkpoint-{sink}"),
        "exactly_once": exactly_once,
        "max_offsets": max_offsets,
        "row_delay": row_delay,
        "stop_after": kill_at if kind == "stop" else 0,
    }
    env = None
    if cluster is not None:
        args |= {"master": cluster.master_url, "conf": cluster.session_conf()}
        env = cluster.env
    log = workdir / f"job-{sink}.log"
    deadline = time.monotonic() + timeout
    if kind == "stop" and session is not None:
        query = eos_job.start_copy(session, args)
        at = eos_job.stop_when_written(query, args)
        assert at is not None, "the query ended before it could be stopped"
        query.awaitTermination(max(1.0, deadline - time.monotonic()))
    else:
        at = _first_run(args, log, env, kind, kill_at, deadline, cluster)
    args |= {"stop_after": 0, "row_delay": 0}
    if session is not None:
        again = eos_job.start_copy(session, args)
        assert again.awaitTermination(max(1.0, deadline - time.monotonic())), "the restarted copy did not end in time"
        assert again.exception() is None, f"the restarted copy failed: {again.exception()}"
    else:
        proc, _ = _job(args, log, env)
        try:
            assert proc.wait(max(1.0, deadline - time.monotonic())) == 0, f"the restarted job failed (log: {log})"
        finally:
            _end(proc)
    return KillRun(kind, exactly_once, rows, at, committed_values(address, sink))


def _first_run(
    args: dict, log: Path, env: dict[str, str] | None, kind: str, kill_at: int, deadline: float,
    cluster: StandaloneCluster | None,
) -> int:  # fmt: skip
    """The run that is killed or stopped, as its own driver process; returns the sink's records at that moment."""
    proc, jvm = _job(args, log, env)
    address, sink = args["address"], args["sink"]
    try:
        if kind == "stop":
            assert proc.stdout is not None
            said = proc.stdout.readline()
            assert said.startswith("STOPPED"), f"the query ended before it could be stopped (log: {log}): {said!r}"
            at = int(said.split()[-1])
            proc.wait(max(1.0, deadline - time.monotonic()))
            return at
        while (at := written(address, sink)) < kill_at:
            assert proc.poll() is None, f"the job ended before the kill (log: {log})"
            assert time.monotonic() < deadline, "the sink never reached the kill point"
            time.sleep(0.05)
        if kind == "executor":
            assert cluster is not None, "an executor kill needs the standalone cluster"
            killed = cluster.kill_executors()
            assert killed, "no executor to kill"
            # the tasks fail, Spark retries them on the executors the workers start anew; the query goes on
            assert proc.wait(max(1.0, deadline - time.monotonic())) == 0, f"the job failed (log: {log})"
            return at
        os.kill(proc.pid if kind == "driver" else jvm, signal.SIGKILL)
        proc.wait(30)
        if kind == "driver":
            _wait_gone(jvm, 30)
        return at
    finally:
        _end(proc)


def _end(proc: subprocess.Popen) -> None:
    """Kill the job if it still runs; close its pipe."""
    if proc.poll() is None:
        proc.kill()
        proc.wait(30)
    if proc.stdout is not None:
        proc.stdout.close()


def _wait_gone(pid: int, timeout: float) -> None:
    """The driver's JVM ends when its Python parent dies (the gateway watches its stdin); kill it if it lingers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
