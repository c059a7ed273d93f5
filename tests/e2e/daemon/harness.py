"""Running the daemon for the end-to-end tests: in-process (its own event loop in a thread) or as the real ``bruce``
command, plus reading the status pages, consuming whole topics with confluent-kafka, and the fixtures the daemon's and
the plog inputs' end-to-end tests share (their conftests import them).

Rules: every wait is bounded; a daemon started here is stopped (and its thread or process reaped) by the fixture or
context that made it, whatever the test did; the accounting invariant is checked on every in-process stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from dashboard_check import metric_counters
from prometheus_client.parser import text_string_to_metric_families
from readback import read_back

from bruce.client import BruceClient
from bruce.producer.aio import new_event_loop
from bruce.proxy.accounting.outcomes import Accounting
from bruce.proxy.config import (
    BatchingConfig,
    BatchLimits,
    Broker,
    CombinedTopics,
    CompressionCodec,
    CompressionConfig,
    CompressionType,
    Config,
    Options,
    RateLimitingConfig,
    TopicAction,
    TopicBatching,
)
from bruce.proxy.daemon.daemon import Daemon
from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.wire.datagram import build_any_partition

T = TypeVar("T")
TIMEOUT = 30.0


# ------------------------------------------------------------------------------------------------ configurations


def make_config(
    brokers: tuple[Broker, ...],
    *,
    time_ms: int | None = 20,
    messages: int | None = None,
    nbytes: int | None = 64 * 1024,
    message_max_bytes: int = 1_000_000,
    compression: CompressionConfig | None = None,
    rate_limiting: RateLimitingConfig | None = None,
    produce_request_data_limit: int = 1024 * 1024,
    batching: bool = True,
) -> Config:
    """Per-topic batching with short limits (20 ms by default; ``batching=False``: none) and no compression unless
    given."""
    return Config(
        batching=BatchingConfig(
            named_configs={"fast": BatchLimits(time_ms=time_ms, messages=messages, bytes=nbytes)},
            produce_request_data_limit=produce_request_data_limit,
            message_max_bytes=message_max_bytes,
            combined_topics=CombinedTopics(enabled=False),
            default_topic=TopicBatching(TopicAction.PER_TOPIC, "fast")
            if batching
            else TopicBatching(TopicAction.DISABLE),
        ),
        compression=compression
        or CompressionConfig(default_topic="none", named_configs={"none": CompressionCodec(CompressionType.NONE)}),
        initial_brokers=brokers,
        topic_rate_limiting=rate_limiting or RateLimitingConfig.unlimited(),
    )


def make_options(workdir: Path, brokers: tuple[Broker, ...] = (), **overrides: Any) -> Options:
    """Options for a test daemon: its socket and debug directory in ``workdir``, the status server on a free port."""
    values: dict[str, Any] = {
        "receive_socket_name": str(workdir / "bruce.sock"),
        "status_port": 0,
        "debug_dir": str(workdir / "debug"),
        "initial_brokers": brokers,
        "shutdown_max_delay": 10_000,
        "min_pause_delay": 50,
        "pause_rate_limit_initial": 50,
        "dispatcher_restart_max_delay": 300,
    }
    values.update(overrides)
    return Options(**values)


# ------------------------------------------------------------------------------------------ the in-process daemon


class DaemonThread:
    """A :class:`Daemon` running in its own event loop (uvloop) on a thread; the test thread sends and checks."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.loop = new_event_loop()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="bruce-daemon-under-test", daemon=True)

    def start(self) -> DaemonThread:
        self._thread.start()
        wait_for(lambda: self.daemon.ready.is_set() or self.error is not None, what="the daemon to serve")
        if self.error is not None:
            raise AssertionError("the daemon failed to start") from self.error
        return self

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.daemon.run())
        except BaseException as e:
            self.error = e
        finally:
            self.loop.close()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def call(self, fn: Callable[[], T], timeout: float = TIMEOUT) -> T:
        """Run ``fn()`` on the daemon's loop (between its callbacks) and return its result; directly once stopped."""
        if not self._thread.is_alive():
            return fn()
        done: Future[T] = Future()

        def run() -> None:
            try:
                done.set_result(fn())
            except BaseException as e:
                done.set_exception(e)

        self.loop.call_soon_threadsafe(run)
        return done.result(timeout)

    def accounting(self) -> Accounting:
        return self.call(self.daemon.accounting)

    def counter(self, name: str) -> int:
        """A daemon or producer counter, summed over its labels."""
        d = self.daemon
        return self.call(lambda: d.counters.get(name) + d.producer.counters.get(name))

    def discards(self, reason: str) -> int:
        return self.call(lambda: self.daemon.counters.get("Discard", (("reason", reason),)))

    def settle(self, received: int, timeout: float = TIMEOUT) -> Accounting:
        """Wait until ``received`` datagrams were read and none is in flight; checks the invariant on the way."""
        deadline = time.monotonic() + timeout
        while True:
            a = self.accounting()
            assert a.balanced, a
            if a.received >= received and a.in_flight == 0:
                return a
            if time.monotonic() > deadline:
                raise AssertionError(f"not settled after {timeout} s: {a}, expected {received} received")
            time.sleep(0.02)

    def stop(self, *, force: bool = False, timeout: float = TIMEOUT) -> Accounting:
        """Request the shutdown (twice with ``force``), wait for the thread, re-raise a crash; the final accounting."""
        if self._thread.is_alive():
            if not self.daemon.stopping:
                self.loop.call_soon_threadsafe(self.daemon.request_shutdown)
            if force:
                self.loop.call_soon_threadsafe(self.daemon.request_shutdown)
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the daemon did not stop in time"
        if self.error is not None:
            raise AssertionError("the daemon crashed") from self.error
        a = self.daemon.accounting()
        assert a.balanced, a
        return a

    def client(self, **kwargs: Any) -> BruceClient:
        return BruceClient(self.daemon.socket_path, **kwargs)

    def get(self, path: str) -> tuple[int, str, str]:
        return http_get(self.daemon.status_url + path)

    def metrics(self) -> dict[str, float]:
        """``/metrics`` parsed by prometheus_client: each sample's value, summed over its labels."""
        status, ctype, body = self.get("/metrics")
        assert status == 200 and ctype.startswith("text/plain; version=0.0.4"), (status, ctype)
        out: dict[str, float] = {}
        for family in text_string_to_metric_families(body):
            for sample in family.samples:
                out[sample.name] = out.get(sample.name, 0) + sample.value
        return out


D = TypeVar("D", bound=DaemonThread)


@contextlib.contextmanager
def daemon_starter(
    workdir: Path,
    brokers: tuple[Broker, ...],
    thread_class: type[D] = DaemonThread,  # type: ignore[assignment]
) -> Iterator[Callable[..., D]]:
    """``start(config=None, *, reader="process", **options) -> D``: a serving daemon with :func:`make_options` and
    (without ``config``) :func:`make_config`, after Bruce's preflight checks. Every one still running at the end is
    stopped without waiting for ACKs (a crash still fails the test)."""
    running: list[D] = []

    def start(config: Config | None = None, *, reader: str = "process", **overrides: Any) -> D:
        options = make_options(workdir, brokers, **overrides)
        daemon = Daemon(options, config or make_config(options.initial_brokers), reader=reader)
        daemon.preflight()
        thread = thread_class(daemon)
        running.append(thread)
        thread.start()
        return thread

    try:
        yield start
    finally:
        for thread in running:
            if thread.running:
                thread.stop(force=True)


# --------------------------------------------------------------------------------------- the real bruce command


def bruce_command() -> list[str]:
    """The installed ``bruce`` script next to this Python (how run.sh starts it)."""
    script = Path(sys.executable).parent / "bruce"
    assert script.exists(), f"{script} is missing: the package is not installed in this environment"
    return [str(script)]


@dataclass
class BruceProcess:
    """A ``bruce`` subprocess; its stderr goes to ``log_path``."""

    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_serving(self, timeout: float = TIMEOUT) -> str:
        """Wait for the "serving" line; returns the status URL."""
        pattern = re.compile(r"serving: socket \S+, status (http://\S+?)/\s")
        found: list[str] = []

        def serving() -> bool:
            if self.process.poll() is not None:
                raise AssertionError(f"bruce exited with {self.process.returncode}:\n{self.log}")
            match = pattern.search(self.log)
            if match:
                found.append(match.group(1))
            return bool(found)

        wait_for(serving, timeout, "bruce to serve")
        return found[0]

    def signal(self, sig: signal.Signals) -> None:
        if self.process.poll() is None:
            self.process.send_signal(sig)

    def wait(self, timeout: float = TIMEOUT) -> int:
        return self.process.wait(timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def start_bruce(
    args: list[str],
    log_path: Path,
    *,
    env: dict[str, str] | None = None,
    preexec_fn: Callable[[], None] | None = None,
) -> BruceProcess:
    """The ``bruce`` command with ``args``, its output in ``log_path`` (``preexec_fn``: run in the child before it
    starts, e.g. to set a resource limit)."""
    log = open(log_path, "wb")  # noqa: SIM115 - handed to the child
    try:
        process = subprocess.Popen(
            [*bruce_command(), *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            preexec_fn=preexec_fn,
        )
    finally:
        log.close()
    return BruceProcess(process, log_path)


# ------------------------------------------------------------------------------------------------------ helpers


def wait_for(predicate: Callable[[], bool], timeout: float = TIMEOUT, what: str = "a condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def http_get(url: str, *, method: str = "GET") -> tuple[int, str, str]:
    """(status, content type, body) of one request."""
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read().decode()


def counters_json(base_url: str) -> dict[str, int]:
    """Counter totals by name: ``/counters/json`` (Bruce's catalogue), then every counter of ``/metrics`` summed over
    its labels (the daemon's own names; where a name is in both, the two agree by construction)."""
    status, _, body = http_get(base_url + "/counters/json")
    assert status == 200
    out: dict[str, int] = {c["name"]: c["value"] for c in json.loads(body)["counters"]}
    status, _, text = http_get(base_url + "/metrics")
    assert status == 200
    own: dict[str, int] = {}
    for row in metric_counters(text):
        own[row["name"]] = own.get(row["name"], 0) + row["value"]
    return out | own


def malformed(topic: str, value: bytes = b"bad") -> bytes:
    """A datagram whose Size field is one less than its length (to_bruce --bad): MALFORMED."""
    data = build_any_partition(topic, value, timestamp=1)
    return (len(data) - 1).to_bytes(4, "big") + data[4:]


@dataclass(frozen=True, slots=True)
class Read:
    """One consumed message."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def consume_topic(address: str, topic: str, partitions: int, expected: int, *, timeout: float = 60.0) -> list[Read]:
    """Every message of ``topic`` from offset 0 on every partition (confluent-kafka, CRC checks on), until
    ``expected`` arrived or ``timeout``; then a short extra poll shows any surplus (duplicates)."""
    messages = read_back(address, topic, partitions, expected, timeout=timeout, extra=0.5)
    return [Read(m.partition(), m.offset(), m.key(), m.value()) for m in messages]


# ------------------------------------------------------------------------------------- the fake cluster, threaded


class ClusterThread:
    """The project's fake Kafka cluster (tests/fakebroker) serving from its own event loop on a thread, so that an
    in-process daemon (another thread) talks to it over real TCP."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="fake-cluster", daemon=True)

    def __enter__(self) -> ClusterThread:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.cluster.__aenter__(), self.loop).result(TIMEOUT)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self.cluster.__aexit__(None, None, None), self.loop).result(TIMEOUT)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(TIMEOUT)
            self.loop.close()

    @property
    def brokers(self) -> tuple[Broker, ...]:
        """The fake brokers, as a daemon's initial brokers."""
        return tuple(Broker("127.0.0.1", int(a.rsplit(":", 1)[1])) for a in self.cluster.bootstrap)

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn()`` on the cluster's loop (to script faults or read its history safely)."""

        async def run() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(TIMEOUT)


# ------------------------------------------------------------------------------------------------ shared fixtures


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A short working directory (UNIX socket paths are limited to 107 bytes), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="bruce-e2e-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def brokers(tansu: EmbeddedBroker) -> tuple[Broker, ...]:
    """The session broker, as a daemon's initial brokers."""
    return (Broker("127.0.0.1", tansu.port),)


@pytest.fixture
def bruce_process(workdir: Path) -> Iterator[Callable[..., BruceProcess]]:
    """``bruce_process(args) -> BruceProcess`` (the real command; killed at teardown if still running)."""
    started: list[BruceProcess] = []

    def start(args: list[str], **kwargs: Any) -> BruceProcess:
        process = start_bruce(args, workdir / f"bruce-{len(started)}.log", **kwargs)
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()
