"""A broker that can be killed and restarted at the same address, empty: for bench/recovery_bench.py and (its
:class:`Forwarder`) bench/outage_bench.py. Tests of a restart use tests/durable_cluster.py, whose log survives.

Rules:
- tansu keeps its data in memory: a restarted tansu is empty, and a producer probing it could see a topic missing (and
  rightly discard its messages as BAD_TOPIC) before the test recreates the topic. So clients use a fixed loopback
  port served by a forwarder, and each tansu listens on a port of its own while advertising the fixed one.
- :meth:`OutageBroker.kill` kills tansu by its PID (SIGKILL) and closes the forwarder: every connection is reset and
  the fixed port refuses connections. :meth:`OutageBroker.start` starts a new tansu, creates the topics, then opens
  the fixed port and returns the moment it accepts connections (``time.monotonic()``): the zero of a resume time.
- tansu dies with the thread that started it (``--pdeathsig``), so every tansu is started by one thread the broker
  owns, whatever thread calls :meth:`OutageBroker.start` (an event loop's ``to_thread`` worker may end any time).
- Every wait is bounded; the forwarder's thread, tansu and the starting thread are stopped by
  :meth:`OutageBroker.close`.
"""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from netproxy import proxy_in_thread

from bruce.proxy.config.ports import free_port
from bruce.proxy.daemon.embedded import EmbeddedBroker


class Forwarder:
    """127.0.0.1:``port`` → 127.0.0.1:``target`` (a :class:`~netproxy.NetProxy` with no delay, in a thread of its
    own) until :meth:`close`, which resets every connection and closes the port."""

    def __init__(self, port: int, target: int) -> None:
        self._stack = contextlib.ExitStack()
        self._stack.enter_context(proxy_in_thread("127.0.0.1", target, port=port))

    def close(self) -> None:
        self._stack.close()


class OutageBroker:
    """tansu behind a fixed address that can go down and come back (see the module rules)."""

    def __init__(self, log_path: Path | None = None) -> None:
        self.port = free_port()
        self.log_path = log_path
        self.tansu: EmbeddedBroker | None = None
        self._forwarder: Forwarder | None = None
        self._starter = ThreadPoolExecutor(1, thread_name_prefix="outage-tansu")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, topics: dict[str, int]) -> float:
        """Start tansu, create ``topics`` (name → partitions), open the address; returns when it began accepting."""
        return self._starter.submit(self._start, topics).result(60)

    def _start(self, topics: dict[str, int]) -> float:
        self.tansu = EmbeddedBroker(log_path=self.log_path, advertised_port=self.port).start()
        for name, partitions in topics.items():
            self.tansu.create_topic(name, partitions)
        self._forwarder = Forwarder(self.port, self.tansu.port)
        return time.monotonic()

    def kill(self) -> None:
        """Kill tansu (SIGKILL, by its PID) and close the address."""
        tansu, self.tansu = self.tansu, None
        if tansu is not None and tansu.process is not None:
            tansu.process.kill()
            tansu.process.wait(10)
            tansu.process = None
        forwarder, self._forwarder = self._forwarder, None
        if forwarder is not None:
            forwarder.close()

    def close(self) -> None:
        self.kill()
        self._starter.shutdown()

    def __enter__(self) -> OutageBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
