"""Run the whole pipeline on this machine: datagrams → the bruce daemon → Kafka → Structured Streaming → Kafka.

It starts an embedded broker (tansu) and the ``bruce`` daemon on loopback, sends page-view events as datagrams
(sender.py), waits until the daemon has delivered them, runs the streaming job (job.py) over them once, reads the
counts back and checks them against what was sent. Everything it starts is stopped at the end, and its working
directory (the broker's and the daemon's logs, the job's checkpoint) is removed unless the run failed or --keep was
given (then the path is printed).

    examples/pipeline/run.sh [--events 2000] [--minutes 3] [--keep]      # sets up .venv first
    .venv/bin/python examples/pipeline/run.py
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from job import latest_counts, start
from sender import send_events

from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.spark import KafkaReader, local_session
from bruce.spark.options import ClientConfig

SOURCE, SINK = "page-views", "page-view-counts"


@contextmanager
def bruce_daemon(broker: str, socket_path: Path, log_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The ``bruce`` daemon delivering to ``broker``, reading datagrams at ``socket_path``; stopped by its PID."""
    command = shutil.which("bruce", path=str(Path(sys.executable).parent)) or shutil.which("bruce")
    if command is None:
        raise SystemExit("the `bruce` command is not installed: run `bash scripts/bootstrap.sh` first")
    argv = [command, "--initial_brokers", broker, "--receive_socket_name", str(socket_path), "--status_port", "0"]
    with open(log_path, "wb") as log:
        daemon = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not socket_path.exists():
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the bruce daemon did not start; its log:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.05)
        yield daemon
    finally:
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)  # graceful: the daemon flushes what it holds
            try:
                daemon.wait(60)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait(10)


def wait_until_delivered(broker: str, topic: str, expected: int, timeout: float = 60.0) -> int:
    """Poll the topic's offsets until it holds ``expected`` records (the daemon delivers asynchronously)."""
    deadline = time.monotonic() + timeout
    with KafkaReader(ClientConfig((broker,))) as kafka:
        while True:
            held = sum(kafka.latest_offsets(topic, kafka.partitions(topic)).values())
            if held >= expected or time.monotonic() > deadline:
                return held
            time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--minutes", type=int, default=3, help="spread the events' timestamps over this many minutes")
    parser.add_argument("--keep", action="store_true", help="keep the working directory (logs, checkpoint)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bruce-pipeline-"))
    ok = False
    try:
        ok = pipeline(args.events, args.minutes, work)
    finally:
        if ok and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"pipeline files (logs, checkpoint) kept in {work}")
    return 0 if ok else 1


def pipeline(events: int, minutes: int, work: Path) -> bool:
    """Run the pipeline with its files in ``work``; True when every event was counted once."""
    with EmbeddedBroker(log_path=work / "tansu.log") as broker:
        broker.create_topic(SOURCE, 4)
        broker.create_topic(SINK, 2)
        print(f"broker   tansu on {broker.address} (topics {SOURCE}, {SINK})")
        with bruce_daemon(broker.address, work / "bruce.sock", work / "bruce.log"):
            print(f"daemon   bruce reading {work / 'bruce.sock'}")
            sent = send_events(str(work / "bruce.sock"), SOURCE, events, minutes)
            total = sum(sent.values())
            delivered = wait_until_delivered(broker.address, SOURCE, total)
            print(f"sender   {total} datagrams sent; {delivered} records in {SOURCE}")
        spark = local_session("page-view-counts")
        query = start(spark, broker.address, SOURCE, SINK, str(work / "checkpoint"), available_now=True)
        query.awaitTermination(600)
        counts = latest_counts(spark, broker.address, SINK)
        spark.stop()
    print(f"job      {len(counts)} (page, minute) counts in {SINK}:")
    for page, minute in sorted(counts, key=lambda pm: (pm[1], pm[0])):
        n, want = counts[(page, minute)], sent.get((page, minute), 0)
        print(f"         {_minute(minute)}  {page:<10} {n:>6}" + ("" if n == want else f"   (sent {want})"))
    ok = counts == sent and delivered == total
    print("pipeline " + ("OK: every event counted once" if ok else "MISMATCH: see the counts above"))
    return ok


def _minute(epoch_ms: int) -> str:
    return dt.datetime.fromtimestamp(epoch_ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%MZ")


if __name__ == "__main__":
    sys.exit(main())
