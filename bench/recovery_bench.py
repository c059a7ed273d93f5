"""Resume time after a broker outage: how long after the broker accepts connections again the first message is
delivered, for the library producer and for the daemon.

Each trial: tansu behind a fixed loopback address (tests/outage.py), messages flowing (one every 2 ms), tansu killed
by its PID, messages still sent for ``--down`` seconds (varied a little per trial, so the restart falls at a
different point of the probing cycle), tansu started again at the same address. The zero is the moment the address
accepts connections again (tansu already serves behind it, with the topic created); the end is the first delivery:
the library producer's sink hearing an ACK, or the daemon's ``ConnectorGotSuccessfulAck`` counter (its ``AckOk``)
moving on ``/counters/json`` (polled every 5 ms, so the daemon's figure includes up to that much polling delay and
one batch time of its built-in config).

    python bench/recovery_bench.py [--trials 5] [--down 3]

Prints each trial, then the median and the maximum for each, and the messages each one delivered after the restart
(every message sent is delivered: the outage is shorter than any timeout).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from outage import OutageBroker
from proxy_bench import wait_serving

from bruce.client import BruceClient
from bruce.producer import Message, Producer, ProducerConfig

TOPIC = "recovery"
SEND_EVERY = 0.002


class FirstDelivery:
    """An OutcomeSink noting when each delivery was heard."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.discarded = 0

    def delivered(self, topic: str, partition: int, base_offset: int, messages: Sequence[Message]) -> None:
        self.times.append(time.monotonic())

    def discarded(self, topic: str, messages: Sequence[Message], reason: object) -> None:  # type: ignore[override]
        self.discarded += len(messages)

    def possible_duplicates(self, topic: str, messages: Sequence[Message]) -> None:
        pass


def library_trial(broker: OutageBroker, down: float) -> float:
    broker.start({TOPIC: 1})
    sink = FirstDelivery()

    async def main() -> float:
        config = ProducerConfig(bootstrap_servers=(broker.address,), linger_ms=1)
        async with Producer(config, sink=sink) as p:
            await p.ready(10)
            stop = asyncio.Event()

            async def send() -> None:
                i = 0
                while not stop.is_set():
                    p.send(TOPIC, b"m%d" % i)
                    i += 1
                    await asyncio.sleep(SEND_EVERY)

            sender = asyncio.create_task(send())
            await asyncio.sleep(0.5)
            await asyncio.to_thread(broker.kill)
            await asyncio.sleep(down)
            back = await asyncio.to_thread(broker.start, {TOPIC: 1})
            while not sink.times or sink.times[-1] < back:
                await asyncio.sleep(0.005)
            stop.set()
            await sender
            assert await p.flush(30) == 0 and sink.discarded == 0
            return min(t for t in sink.times if t >= back) - back

    try:
        return asyncio.run(main())
    finally:
        broker.kill()


def daemon_trial(broker: OutageBroker, down: float, workdir: Path) -> float:
    broker.start({TOPIC: 1})
    sock = str(workdir / "bruce.sock")
    log_path = workdir / "bruce.log"
    bruce = Path(sys.executable).parent / "bruce"
    args = [str(bruce), "--initial_brokers", broker.address, "--receive_socket_name", sock, "--status_port", "0"]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        status = wait_serving(process, log_path)
        stop = threading.Event()

        def send() -> None:
            with BruceClient(sock) as client:
                i = 0
                while not stop.is_set():
                    client.send_any_partition(TOPIC, b"m%d" % i)
                    i += 1
                    time.sleep(SEND_EVERY)

        sender = threading.Thread(target=send)
        sender.start()
        try:
            deadline = time.monotonic() + 30
            while _acks(status) == 0:
                assert time.monotonic() < deadline, "the daemon delivered nothing"
                time.sleep(0.05)
            broker.kill()
            time.sleep(0.5)
            before = _acks(status)
            time.sleep(down - 0.5)
            back = broker.start({TOPIC: 1})
            deadline = back + 60
            while _acks(status) == before:
                assert time.monotonic() < deadline, "the daemon did not resume"
                time.sleep(0.005)
            return time.monotonic() - back
        finally:
            stop.set()
            sender.join()
    finally:
        process.terminate()
        process.wait(60)
        broker.kill()


def _acks(status: str) -> int:
    with urllib.request.urlopen(status + "/counters/json", timeout=10) as response:
        counters = json.loads(response.read())["counters"]
    return sum(c["value"] for c in counters if c["name"] == "ConnectorGotSuccessfulAck")  # Bruce's name for AckOk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--down", type=float, default=3.0, help="seconds the broker stays down (±0.5 per trial)")
    args = parser.parse_args()
    rng = random.Random(1)
    results: dict[str, list[float]] = {"library": [], "daemon": []}
    with tempfile.TemporaryDirectory(prefix="bruce-recovery-") as tmp, OutageBroker(Path(tmp) / "tansu.log") as b:
        for trial in range(args.trials):
            down = args.down + rng.uniform(-0.5, 0.5)
            lib = library_trial(b, down)
            dmn = daemon_trial(b, down, Path(tmp))
            results["library"].append(lib)
            results["daemon"].append(dmn)
            print(
                f"trial {trial + 1}: down {down:.2f} s; resumed after {lib * 1000:.0f} ms (library), "
                f"{dmn * 1000:.0f} ms (daemon)",
                flush=True,
            )
    for name, times in results.items():
        print(
            f"{name:8s} resume time: median {statistics.median(times) * 1000:.0f} ms, "
            f"max {max(times) * 1000:.0f} ms over {len(times)} trials"
        )


if __name__ == "__main__":
    main()
