"""The project's fake broker playing Kafka 0.8 (tests/fakebroker, ``legacy=True``: no ApiVersions, version 0 only, so
the daemon produces magic-0 message sets), run in a process of its own so its CPU is never the daemon's. Used by
``proxy_bench.py --broker fake08``; what it stores is counted after decoding every message set (CRCs checked)."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def _serve(conn) -> None:  # type: ignore[no-untyped-def]
    from fakebroker import FakeCluster

    async def main() -> None:
        cluster = FakeCluster(1, legacy=True)
        async with cluster:
            conn.send(cluster.bootstrap[0])
            loop = asyncio.get_running_loop()
            done = loop.create_future()

            def on_command() -> None:
                op, arg = conn.recv()
                if op == "topic":
                    cluster.add_topic(arg[0], [1] * arg[1])
                    conn.send(None)
                elif op == "count":
                    conn.send(len(cluster.records(arg)))
                else:
                    done.set_result(None)

            loop.add_reader(conn.fileno(), on_command)
            await done

    asyncio.run(main())


class FakeBroker08:
    """The EmbeddedBroker interface the bench uses (address, create_topic) plus :meth:`count`."""

    def __enter__(self) -> FakeBroker08:
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child,), daemon=True)
        self._proc.start()
        if not self._conn.poll(30):
            raise RuntimeError("the fake 0.8 broker did not start")
        self.address: str = self._conn.recv()
        return self

    def __exit__(self, *exc: object) -> None:
        self._conn.send(("stop", None))
        self._proc.join(10)
        if self._proc.is_alive():
            self._proc.kill()

    def _ask(self, op: str, arg: object, timeout: float = 300) -> object:
        self._conn.send((op, arg))
        if not self._conn.poll(timeout):
            raise RuntimeError(f"the fake 0.8 broker did not answer {op}")
        return self._conn.recv()

    def create_topic(self, name: str, partitions: int) -> None:
        self._ask("topic", (name, partitions))

    def count(self, topic: str) -> int:
        """Messages stored for ``topic`` (each decoded from the message sets produced, CRC checked)."""
        return int(self._ask("count", topic))  # type: ignore[arg-type]
