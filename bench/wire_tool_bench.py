"""bruce-wire pcap --json against tshark -T json on the same capture: time and peak memory, side by side, as ratios.

The capture is made here: tcpdump on loopback while kafka-python produces ``--records`` records (values of about
90 bytes, lz4) to tansu and a consumer reads them all back, so the capture holds the records twice (Produce
requests and Fetch answers) as today's clients send them. Each decoder then reads the capture with its output to
/dev/null; peak RSS is the child's ``ru_maxrss``. tshark needs ``-d tcp.port==N,kafka`` (the broker's port is not
9092) and decodes only the versions its table knows (Debian's 4.0: Produce up to v8, Fetch up to v11): its figures
are for what it manages, ours for every record (the clients are held to versions tshark knows).

    python bench/wire_tool_bench.py [--records 200000] [--rounds 2] [--keep DIR]

Needs root (tcpdump on lo), tshark and tcpdump (scripts/bootstrap.sh test installs both).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "tool"))

from capturing import Capture  # noqa: E402  # the tests' tcpdump helper

from bruce.proxy.daemon.embedded import EmbeddedBroker  # noqa: E402

# Clients held to versions tshark 4.0 decodes (Produce v7, Fetch v10): kafka-python's table for a 2.1 broker.
TSHARK_VERSIONS = (2, 1, 0)

# Runs a command and prints its wall time and peak RSS: forked from this small process (python -S), not from the
# benchmark, whose own memory Linux would count in the child's high-water mark (it is carried across fork and exec).
_MEASURE = """
import os, sys, time
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - start, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


def make_capture(path: Path, records: int) -> int:
    """Produce and consume ``records`` records through tansu under tcpdump; the broker's port."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    with EmbeddedBroker(log_path=path.with_suffix(".tansu.log")) as broker:
        port = int(broker.address.rsplit(":", 1)[1])
        broker.create_topic("bench", 1)
        capture = Capture(path, [port])
        producer = KafkaProducer(
            bootstrap_servers=broker.address,
            compression_type="lz4",
            linger_ms=20,
            batch_size=256 * 1024,
            api_version=TSHARK_VERSIONS,
            enable_idempotence=False,  # tansu answers InitProducerId v1 with UNKNOWN_SERVER_ERROR
        )
        for i in range(records):
            value = hashlib.sha256(b"%d" % i).hexdigest().encode() + b" record %d" % i  # ~80-90 bytes, varied
            producer.send("bench", key=b"key-%d" % i, value=value)
        producer.flush(120)
        producer.close()
        consumer = KafkaConsumer(bootstrap_servers=broker.address, api_version=TSHARK_VERSIONS, check_crcs=True)
        partition = TopicPartition("bench", 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        seen, deadline = 0, time.monotonic() + 120
        while seen < records and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500, max_records=50_000).values():
                seen += len(batch)
        consumer.close()
        capture.stop()
        assert seen == records, f"consumed {seen} of {records}"
    return port


def measure(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one run of ``argv``, output to /dev/null."""
    out = subprocess.run([sys.executable, "-S", "-c", _MEASURE, *argv], capture_output=True, text=True, check=True)
    elapsed, rss_kib, status = out.stdout.split()
    if int(status) not in (0, 1):
        raise SystemExit(f"{argv[0]} failed with status {status}")
    return float(elapsed), int(rss_kib) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=2, help="runs of each decoder, alternated; the best is kept")
    parser.add_argument("--keep", type=Path, help="keep the capture in this directory")
    args = parser.parse_args()
    tshark = shutil.which("tshark")
    bruce_wire = shutil.which("bruce-wire", path=str(Path(sys.executable).parent))
    assert tshark and bruce_wire, "tshark and bruce-wire are needed"
    workdir = Path(args.keep or tempfile.mkdtemp(prefix="wire-tool-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    pcap = workdir / "bench.pcap"
    port = make_capture(pcap, args.records)
    size_mb = pcap.stat().st_size / 1e6
    commands = {
        "bruce-wire": [bruce_wire, "pcap", "--json", str(pcap)],
        "tshark": [tshark, "-r", str(pcap), "-d", f"tcp.port=={port},kafka", "-T", "json"],
    }
    best: dict[str, tuple[float, float]] = {}
    for _ in range(args.rounds):
        for name, argv in commands.items():
            t, rss = measure(argv)
            old = best.get(name)
            best[name] = (min(t, old[0]), min(rss, old[1])) if old else (t, rss)
    json_out = workdir / "bruce-wire.json"
    with json_out.open("wb") as f:
        subprocess.run(commands["bruce-wire"], stdout=f, stderr=subprocess.DEVNULL, check=False)
    with json_out.open("rb") as f:
        records_out = sum(line.count(b'"payload":') for line in f)
    load = os.getloadavg()
    print(f"capture: {size_mb:.1f} MB, {args.records} records produced and fetched (port {port}); load {load[0]:.2f}")
    print(f"bruce-wire decoded {records_out} records (Produce requests and Fetch answers)")
    print(f"{'decoder':<12} {'seconds':>9} {'peak RSS MiB':>13}")
    for name, (t, rss) in best.items():
        print(f"{name:<12} {t:>9.2f} {rss:>13.1f}")
    (bt, brss), (tt, trss) = best["bruce-wire"], best["tshark"]
    print(f"bruce-wire / tshark: time {bt / tt:.2f}x, memory {brss / trss:.2f}x")
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
