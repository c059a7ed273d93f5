"""The cost of ``exactlyOnce`` streaming writes: the same streaming copy (a topic to a topic, several micro-batches)
written at-least-once and exactly once, alternating (the order swapped at each repeat), in one local Spark session on
one tansu broker; and, with ``--kills``, the kill runs (driver kill -9, JVM kill -9, ``query.stop()``) in both modes
with what each lost and duplicated, each run's killed job and its restart being their own driver processes on
local[2]; ``--cluster-kills``: the same runs, and kill -9 of the executors' JVMs, with the drivers connected to a
Spark standalone cluster on loopback (a master and two one-core workers, :mod:`bruce.spark.standalone`). Exits 1 if
an exactlyOnce run lost or duplicated a record (or an at-least-once run lost one).

Usage: python bench/spark_eos_bench.py [--rows 200000] [--per-trigger 50000] [--repeat 2] [--quick]
       [--kills] [--cluster-kills] [--exactly-once-only] [--no-throughput]
(also ``python bench/spark_bench.py --exactly-once ...``)

A copy is ``readStream`` of the source (``startingOffsets=earliest``, ``maxOffsetsPerTrigger``) into the sink with
``trigger(availableNow=True)``, timed from ``start()`` to its end, each into a fresh sink topic; the sink's committed
record count is checked (the library's read_committed reader). The best of ``--repeat`` runs counts; a small warm-up
copy per mode first keeps Python worker start-up out. Per micro-batch and task, exactlyOnce adds InitProducerId, a
marker lookup (Metadata, ListOffsets, a Fetch), AddPartitionsToTxn and EndTxn: a fixed cost per share, so its
relative cost falls as the micro-batches grow."""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from spark.eos_runs import CLUSTER_KINDS, KINDS, committed_values, fill, kill_run

from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.spark import local_session
from bruce.spark.standalone import StandaloneCluster

_topics = itertools.count(1)


def copy(spark, address: str, source: str, sink: str, workdir: Path, per_trigger: int, exactly_once: bool) -> float:
    """Seconds for one streaming copy of ``source`` into ``sink``."""
    writer = (
        spark.readStream.format("bruce")
        .option("bootstrap.servers", address)
        .option("topic", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(per_trigger))
        .load()
        .select("key", "value")
        .writeStream.format("bruce")
        .option("bootstrap.servers", address)
        .option("topic", sink)
        .option("exactlyOnce", str(exactly_once).lower())
        .option("checkpointLocation", str(workdir / sink))
        .trigger(availableNow=True)
    )
    started = time.perf_counter()
    query = writer.start()
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(f"the copy into {sink} failed: {query.exception()}")
    return time.perf_counter() - started


def throughput(broker: EmbeddedBroker, rows: int, per_trigger: int, repeat: int) -> None:
    address = broker.address
    source, warm = f"eos-source-{next(_topics)}", f"eos-warm-{next(_topics)}"
    broker.create_topic(source, 2)
    broker.create_topic(warm, 2)
    fill(address, source, rows)
    fill(address, warm, 1000)
    spark = local_session("bruce-spark-eos-bench")
    workdir = Path(tempfile.mkdtemp(prefix="eos-bench-"))
    best: dict[bool, float] = {}
    try:
        for exactly_once in (False, True):  # warm-up
            sink = f"eos-sink-{next(_topics)}"
            broker.create_topic(sink, 2)
            copy(spark, address, warm, sink, workdir, per_trigger, exactly_once)
        for n in range(repeat):
            for exactly_once in (False, True) if n % 2 == 0 else (True, False):  # order effects cancel out
                sink = f"eos-sink-{next(_topics)}"
                broker.create_topic(sink, 2)
                seconds = copy(spark, address, source, sink, workdir, per_trigger, exactly_once)
                stored = sum(committed_values(address, sink).values())
                if stored != rows:
                    raise RuntimeError(f"{sink}: {stored} committed records, {rows} were copied")
                best[exactly_once] = max(best.get(exactly_once, 0.0), rows / seconds)
    finally:
        spark.stop()
    batches = -(-rows // per_trigger)
    print(f"streaming copy of {rows:,} rows in {batches} micro-batches of {per_trigger:,} (2 partitions, local[2]):")
    print(f"  at-least-once  {best[False]:>10,.0f} rows/s")
    print(f"  exactlyOnce    {best[True]:>10,.0f} rows/s   ({best[True] / best[False]:.2f}x)")
    extra = rows / best[True] - rows / best[False]
    print(f"  exactlyOnce costs {extra:.2f} s more, {extra / batches * 1000:.0f} ms per micro-batch (2 tasks)")


def kills(broker: EmbeddedBroker, local: bool, cluster: bool, modes: tuple[bool, ...]) -> None:
    """The kill runs in each of ``modes`` (exactlyOnce or not), on local[2] and/or a standalone cluster; prints a line
    each and a summary of what exactlyOnce lost and duplicated."""
    rows, per_trigger = 4000, 1000
    workdir = Path(tempfile.mkdtemp(prefix="eos-kills-"))
    failures: list[str] = []

    def one(kind: str, exactly_once: bool, where: str, on: StandaloneCluster | None) -> None:
        source, sink = f"kill-source-{next(_topics)}", f"kill-sink-{next(_topics)}"
        broker.create_topic(source, 2)
        broker.create_topic(sink, 2)
        fill(broker.address, source, rows)
        run = kill_run(
            broker.address, source, sink, workdir, kind=kind, exactly_once=exactly_once, rows=rows,
            max_offsets=per_trigger, kill_at=per_trigger + per_trigger // 2, cluster=on, timeout=1200,
        )  # fmt: skip
        print(f"{where:8} {run.describe()}", flush=True)
        if run.lost or (exactly_once and run.duplicated):
            failures.append(f"{where} {run.describe()}")

    for kind in KINDS if local else ():
        for exactly_once in modes:
            one(kind, exactly_once, "local[2]", None)
    if cluster:
        root = workdir / "cluster"  # kept: the daemons' and executors' logs
        print(f"cluster: a master and 2 workers x 1 core; logs under {root}", flush=True)
        with StandaloneCluster(root, workers=2, cores=1, memory="512m") as on:
            for kind in CLUSTER_KINDS:
                for exactly_once in modes:
                    one(kind, exactly_once, "cluster", on)
    print(
        "kills: " + ("every exactlyOnce run 0 lost, 0 duplicated" if not failures else "FAILED: " + "; ".join(failures))
    )
    if failures:
        raise SystemExit(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--per-trigger", type=int, default=50_000, help="maxOffsetsPerTrigger")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="10,000 rows, one run (keeps the script from rotting)")
    parser.add_argument("--kills", action="store_true", help="also the kill runs on local[2]")
    parser.add_argument("--cluster-kills", action="store_true", help="also the kill runs on a standalone cluster")
    parser.add_argument("--exactly-once-only", action="store_true", help="kill runs with exactlyOnce only")
    parser.add_argument("--no-throughput", action="store_true", help="only the kill runs")
    args, _ = parser.parse_known_args(argv)
    rows, per_trigger, repeat = (10_000, 2_500, 1) if args.quick else (args.rows, args.per_trigger, args.repeat)
    with EmbeddedBroker() as broker:
        if not args.no_throughput:
            throughput(broker, rows, per_trigger, repeat)
        if args.kills or args.cluster_kills:
            modes = (True,) if args.exactly_once_only else (False, True)
            kills(broker, args.kills, args.cluster_kills, modes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
