"""Fixtures for the status interface tests: a fake daemon (real counters, discard tracker and message debug log), and
a status server running on 127.0.0.1 in its own event-loop thread, queried over real HTTP with urllib."""

from __future__ import annotations

import asyncio
import threading
import urllib.error
import urllib.request
from collections.abc import Coroutine, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
import uvloop

from bruce.producer.counters import Counters
from bruce.producer.reasons import DiscardReason
from bruce.proxy.accounting.discards import DiscardReport, DiscardTracker
from bruce.proxy.accounting.msg_debug import MessageDebugLog
from bruce.proxy.status import (
    BrokerState,
    CounterSet,
    Gauge,
    MetadataTimes,
    QueueStats,
    RateHistory,
    RateSample,
    ServerInfo,
    StatusServer,
    TopicQueue,
)

START = 1_700_000_000.0  # the fake daemon's start time
NOW = START + 3600.5  # the fake wall clock
TIMEOUT = 10.0
T = TypeVar("T")


class FakeSource:
    """A StatusSource over real parts: two counter sets, a DiscardTracker, a MessageDebugLog; fixed queue stats,
    metadata times and gauges. Records metadata update requests. ``fail`` makes one method raise."""

    def __init__(self, debug_dir: Path) -> None:
        self.info = ServerInfo(pid=4321, version="9.8.7-test", start_time=START)
        self.daemon_counters = Counters()
        self.producer_counters = Counters()
        self.daemon_counters.inc("MsgCreate", 10)
        self.producer_counters.inc("AckOk", 7)
        self.accounting = Counters()
        self.accounting.inc("MsgReceived", 11_000)
        self.accounting.inc("MsgDelivered", 10_890)
        self.accounting.inc("MsgDiscarded", 33)
        self.accounting.inc("TopicMsgDelivered", 6_600, labels=(("topic", "alpha"),))
        self.accounting.inc("TopicMsgDelivered", 4_290, labels=(("topic", "beta.events"),))
        self.producer_counters.inc("AckError", 2, labels=(("code", "6"),))
        self.tracker = DiscardTracker(counters=self.daemon_counters, clock=lambda: NOW, log_discards=False)
        self.tracker.record(DiscardReason.RATE_LIMIT, "rated", b"k", b"v", 1_700_000_001_000)
        self.tracker.record_unparsed(DiscardReason.MALFORMED, b"\x00\x01junk")
        self.debug = MessageDebugLog(str(debug_dir), counters=self.daemon_counters)
        self.queues = QueueStats(
            topics=(TopicQueue("alpha", 1, 2, 3), TopicQueue("beta.events", 10, 20, 30)),
            new=5,
        )
        self.times = MetadataTimes(last_updated_ms=1_700_000_100_123, last_modified_ms=1_700_000_050_456)
        self.gauge_list = [
            Gauge("MsgBufferUsedBytes", "Bytes of held messages.", 1536),
            Gauge("MsgBufferCapacityBytes", "The message budget.", 262144 * 1024),
            Gauge("MsgBufferHighWaterBytes", "The most bytes ever held.", 1_048_576),
            Gauge("MsgInFlight", "Messages in flight.", 77),
            Gauge("ConnectedBrokers", "Brokers with an open connection.", 3),
            Gauge("InFlightRequests", "Produce requests awaiting an ACK.", 2, (("broker", "1"),)),
        ]
        self.brokers = [
            BrokerState(1, "127.0.0.1", 9092, "connected", START + 5),
            BrokerState(2, "kafka-2.example", 9093, "connect failed", NOW - 30, "cannot connect: refused", NOW - 3),
        ]
        history = RateHistory()
        for i in range(12):  # one sample every 5 s over the last minute
            t = NOW - 55 + 5 * i
            history.sample(t, 1000 * i, 990 * i, 3 * i, {"alpha": 600 * i, "beta.events": 390 * i})
        self.history = history
        self.metadata_update_requests = 0
        self.fail: str | None = None

    def _check(self, name: str) -> None:
        if self.fail == name:
            raise RuntimeError(f"{name} is broken")

    def server_info(self) -> ServerInfo:
        self._check("server_info")
        return self.info

    def counter_sets(self) -> Iterable[tuple[str, CounterSet]]:
        self._check("counter_sets")
        return [
            ("bruce.proxy", self.daemon_counters),
            ("bruce.proxy.accounting", self.accounting),
            ("bruce.producer", self.producer_counters),
        ]

    def discard_report(self) -> DiscardReport:
        self._check("discard_report")
        return self.tracker.report()

    def queue_stats(self) -> QueueStats:
        self._check("queue_stats")
        return self.queues

    def metadata_times(self) -> MetadataTimes:
        self._check("metadata_times")
        return self.times

    def request_metadata_update(self) -> None:
        self._check("request_metadata_update")
        self.metadata_update_requests += 1

    def msg_debug_command(self, command: str) -> str | None:
        self._check("msg_debug_command")
        return self.debug.handle_command(command)

    def gauges(self) -> Iterable[Gauge]:
        self._check("gauges")
        return list(self.gauge_list)

    def broker_states(self) -> list[BrokerState]:
        self._check("broker_states")
        return list(self.brokers)

    def rate_samples(self) -> tuple[RateSample, ...]:
        self._check("rate_samples")
        return self.history.samples()


@dataclass
class Reply:
    status: int
    content_type: str
    text: str
    headers: dict[str, str] = field(default_factory=dict)


class LoopThread:
    """An event loop in a background thread (the server lives there; the test thread is the client)."""

    def __init__(self, kind: str) -> None:
        self.loop = uvloop.new_event_loop() if kind == "uvloop" else asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(TIMEOUT)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(TIMEOUT)
        self.loop.close()


@dataclass
class RunningStatus:
    server: StatusServer
    source: FakeSource

    def request(self, path: str, method: str = "GET", data: bytes | None = None) -> Reply:
        req = urllib.request.Request(self.server.url + path, method=method, data=data)
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
                return Reply(r.status, r.headers["Content-Type"], r.read().decode(), dict(r.headers))
        except urllib.error.HTTPError as e:
            with e:
                return Reply(e.code, e.headers["Content-Type"], e.read().decode(), dict(e.headers))

    def get(self, path: str) -> Reply:
        return self.request(path)


@pytest.fixture(params=["uvloop", "asyncio"])
def loop_thread(request: pytest.FixtureRequest) -> Iterator[LoopThread]:
    """The daemon's default loop (uvloop) and the standard one."""
    lt = LoopThread(request.param)
    yield lt
    lt.close()


@pytest.fixture
def source(tmp_path: Path) -> FakeSource:
    return FakeSource(tmp_path / "debug")


@pytest.fixture
def status(loop_thread: LoopThread, source: FakeSource) -> Iterator[RunningStatus]:
    """A status server on 127.0.0.1 (a free port) with the fake source and a fixed wall clock."""
    server = StatusServer(source, clock=lambda: NOW)
    loop_thread.run(server.start("127.0.0.1", 0))
    yield RunningStatus(server, source)
    loop_thread.run(server.stop())


def bruce_counter_parse(text: str) -> dict[str, int]:
    """Bruce's own parser of /counters/plain (scripts/bruce_counters.py): four header lines, a blank line, then
    per line the name is what lies between the last '.' and the first '=' after it; the value must be an int."""
    lines = text.splitlines()
    assert [line.split("=")[0] for line in lines[:4]] == ["now", "since", "pid", "version"]
    assert lines[4] == ""
    counters = {}
    for line in lines[5:]:
        rest = line[line.rindex(".") + 1 :]
        key, value = rest[: rest.index("=")], rest[rest.index("=") + 1 :]
        counters[key] = int(value)
    return counters
