"""format("bruce") on a real Spark standalone cluster (a master and two workers, separate JVMs on loopback), jobs
submitted with pyspark's own spark-submit as a user submits them (examples/cluster/job.py); the executors import
bruce from their own Python (the package is installed there). Checked by an independent consumer (confluent-kafka):
a batch write, a batch read and a streaming copy lose and duplicate nothing, and keyed rows land where Java's producer
would put them; then a worker (and its executor) is killed mid-write: the job still finishes and nothing is lost
(at-least-once: the duplicates are counted). The kill test runs last: it leaves the cluster with one worker."""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from kafka.partitioner.default import murmur2 as java_murmur2

from bruce.spark import KafkaReader
from bruce.spark.options import ClientConfig
from bruce.spark.standalone import StandaloneCluster

from .kafka_io import consume_all

pytestmark = pytest.mark.spark

JOB = Path(__file__).resolve().parents[2] / "examples" / "cluster" / "job.py"


def _submit(cluster: StandaloneCluster, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        cluster.submit_command(JOB, *args),
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cluster.root,
    )


def _result(cluster: StandaloneCluster, job: subprocess.Popen[str], timeout: float = 300) -> dict:
    try:
        out, err = job.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        job.kill()
        out, err = job.communicate()
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert job.returncode == 0 and lines, (
        f"spark-submit exited with {job.returncode}; its stderr ends with:\n{err[-4000:]}\n"
        f"cluster logs: {', '.join(map(str, cluster.log_paths()))} (executor logs under {cluster.root}/worker-*)"
    )
    return json.loads(lines[-1][len("RESULT ") :])


def test_batch_and_stream_through_the_cluster(spark_cluster, tansu, new_topic) -> None:
    topic, copy = new_topic(partitions=3), new_topic(partitions=2)
    rows = 20_000
    job = _submit(
        spark_cluster,
        *("--bootstrap", tansu.address, "--topic", topic, "--copy", copy, "--rows", str(rows)),
        *("--checkpoint", str(spark_cluster.root / f"checkpoint-{copy}"), "roundtrip"),
    )
    result = _result(spark_cluster, job)
    assert result["executors"] == 2  # the work ran in the two workers' executors, not in the driver
    assert (result["read_rows"], result["read_distinct"]) == (rows, rows)
    written = consume_all(tansu.address, topic, 3, rows)
    assert Counter(m.value for m in written) == Counter(b"row-%d" % i for i in range(rows))  # each exactly once
    assert all(m.partition == (java_murmur2(m.key) & 0x7FFFFFFF) % 3 for m in written)  # Java's placement
    copied = consume_all(tansu.address, copy, 2, rows)
    assert Counter(m.value for m in copied) == Counter(b"row-%d" % i for i in range(rows))


def test_a_worker_killed_mid_write_loses_nothing(spark_cluster, tansu, new_topic) -> None:
    topic = new_topic(partitions=2)
    rows = 24_000  # 8 tasks of 3000 rows, each pausing 300 ms per 1000 rows: both executors busy for a while
    job = _submit(
        spark_cluster,
        *("--bootstrap", tansu.address, "--topic", topic, "--rows", str(rows), "--partitions", "8"),
        *("--pace-ms", "300", "write"),
    )
    try:
        with KafkaReader(ClientConfig((tansu.address,))) as kafka:
            deadline = time.monotonic() + 180
            while sum(kafka.latest_offsets(topic, [0, 1]).values()) == 0:  # the write is under way
                assert job.poll() is None, "the job ended before any row arrived"
                assert time.monotonic() < deadline, "no row arrived within 180 s"
                time.sleep(0.2)
        killed = spark_cluster.kill_worker("worker-1")
    except BaseException:
        job.kill()
        raise
    assert len(killed) >= 2  # the worker and at least its executor
    result = _result(spark_cluster, job)
    assert result["executors"] == 1  # the job finished on the executor that was left
    got = consume_all(tansu.address, topic, 2, rows)
    counts = Counter(m.value for m in got)
    assert set(counts) == {b"row-%d" % i for i in range(rows)}  # nothing lost
    duplicates = len(got) - rows  # rows of the killed tasks written again by their retries (at-least-once)
    print(f"worker killed mid-write: {rows} rows, {len(got)} records, {duplicates} duplicates")
    assert duplicates == sum(n - 1 for n in counts.values()) >= 0
