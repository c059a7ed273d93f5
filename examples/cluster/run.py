"""Run the cluster example on this machine: an embedded broker (tansu), a Spark standalone cluster (a master and two
workers, separate JVMs on loopback, from pyspark's own spark-class), and job.py submitted to it with spark-submit.
Then every record is read back: each row once in both topics, each keyed row on the partition Java's producer would
choose. Everything it starts is stopped at the end (by PID).

    examples/cluster/run.sh [--rows 100000]          # sets up .venv first
    .venv/bin/python examples/cluster/run.py
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.spark import KafkaReader
from bruce.spark.options import ClientConfig
from bruce.spark.standalone import StandaloneCluster
from bruce.wire.plog import murmur2

JOB = Path(__file__).resolve().parent / "job.py"


def records(broker: str, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    """(partition, key, value) of every record of ``topic``."""
    out = []
    with KafkaReader(ClientConfig((broker,))) as kafka:
        partitions = kafka.partitions(topic)
        ends = kafka.latest_offsets(topic, partitions)
        for p in partitions:
            for batch in kafka.read(topic, p, 0, ends[p]):
                out += [(p, r.key, r.value) for r in batch]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bruce-cluster-"))
    with EmbeddedBroker(log_path=root / "tansu.log") as broker:
        broker.create_topic("events", 3)
        broker.create_topic("events-copy", 2)
        print(f"broker   tansu on {broker.address} (topics events, events-copy)", flush=True)
        with StandaloneCluster(root, workers=2, cores=1, memory="512m") as cluster:
            print(
                f"cluster  {cluster.master_url}: master + {cluster.workers} workers (logs in {root}/logs)", flush=True
            )
            command = cluster.submit_command(
                JOB,
                *("--bootstrap", broker.address, "--topic", "events", "--copy", "events-copy"),
                *("--rows", str(args.rows), "--checkpoint", str(root / "checkpoint"), "roundtrip"),
            )
            job = subprocess.run(command, env=cluster.env, capture_output=True, text=True, check=False)
        summary = [line for line in job.stdout.splitlines() if line.startswith("RESULT ")]
        if job.returncode or not summary:
            print(job.stderr[-4000:], file=sys.stderr)
            print(f"the job failed ({job.returncode}); logs in {root}", file=sys.stderr)
            return 1
        result = json.loads(summary[-1][len("RESULT ") :])
        print(f"job      {result}")
        expected = Counter(b"row-%d" % i for i in range(args.rows))
        written, copied = records(broker.address, "events"), records(broker.address, "events-copy")
        misplaced = sum(p != (murmur2(key or b"") & 0x7FFFFFFF) % 3 for p, key, _ in written)
        ok = Counter(v for *_, v in written) == expected == Counter(v for *_, v in copied) and not misplaced
        print(f"check    {len(written)} rows written, {len(copied)} copied, {misplaced} off Java's partition")
        print(f"cluster example {'OK' if ok else 'FAILED'} ({root})")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
