"""One write task of the Spark data source, run outside Spark (no JVM), for ``bench/spark_bench.py``:
``produce_batches`` of the bench's rows as 10,000-row Arrow batches, plain (the ``topic`` option, a ``value`` column)
and shaped as read back (``topic``, ``partition``, ``key``, ``timestamp`` columns besides the value), to the bench's
broker; rows/s and the CPU per row of the task (this process) and of the broker in the best round.
"""

from __future__ import annotations

import itertools
import time

import pyarrow as pa
from _common import proc_cpu_s

from bruce.producer import run as run_async
from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.spark.direct import produce_batches
from bruce.spark.options import write_options

_topics = itertools.count(1)


def run_task(broker: EmbeddedBroker, rows: int, size: int, partitions: int, repeat: int) -> dict[str, float]:
    """One write task outside Spark, plain rows vs rows with a topic column (see the module docstring)."""
    values = [str(i).rjust(size, "x").encode() for i in range(rows)]
    plain = [pa.RecordBatch.from_pydict({"value": values[i : i + 10_000]}) for i in range(0, rows, 10_000)]

    def read_back(batch: pa.RecordBatch, topic: str, first: int) -> pa.RecordBatch:  # a read batch's routing columns
        n = batch.num_rows
        micros = pa.array(range(1_700_000_000_000_000, 1_700_000_000_000_000 + n), pa.timestamp("us", tz="UTC"))
        return pa.RecordBatch.from_pydict(
            {
                "key": [b"key-%d" % (first + i) for i in range(n)],
                "value": batch.column(0),
                "topic": [topic] * n,
                "partition": pa.repeat(pa.scalar(first // 10_000 % partitions, pa.int32()), n),
                "timestamp": micros,
            }
        )

    best: dict[str, float] = {}
    cpu: dict[str, tuple[float, float]] = {}  # the best round's CPU ns per row: the task's, the broker's
    for _ in range(repeat):
        for name, with_topic in (("plain rows", False), ("read-back rows", True)):
            topic = f"spark-bench-task-{next(_topics)}"
            broker.create_topic(topic, partitions)
            batches = [read_back(b, topic, i * 10_000) for i, b in enumerate(plain)] if with_topic else plain
            given = {"bootstrap.servers": broker.address} | ({} if with_topic else {"topic": topic})
            options = write_options(given)
            assert broker.process is not None
            started, own, stored = time.perf_counter(), time.process_time(), proc_cpu_s(broker.process.pid)
            summary = run_async(produce_batches(iter(batches), options))
            rate = rows / (time.perf_counter() - started)
            if summary.delivered != rows:
                raise RuntimeError(f"task {name}: {summary.describe()}")
            if rate > best.get(name, 0.0):
                best[name] = rate
                own, stored = time.process_time() - own, proc_cpu_s(broker.process.pid) - stored
                cpu[name] = (own / rows * 1e9, stored / rows * 1e9)
    for name, rate in best.items():
        own, stored = cpu[name]
        print(f"task   {name:28} {rate:12,.0f} rows/s  (CPU per row: task {own:.0f} ns, broker {stored:.0f} ns)")
    return best
