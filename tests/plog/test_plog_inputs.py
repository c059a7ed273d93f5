"""PlogInputs, the daemon's side of the plog listeners, with the daemon's real budget, outcomes and discard tracker
(the router replaced by a list): messages and their charges, NO_MEM, rejections into the discard report, the
accounting invariant, TCP backpressure waits (resume level and re-check timer), refusing after a crash, start errors,
counters and gauges."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from bruce.producer.counters import Counters
from bruce.producer.reasons import DiscardReason
from bruce.proxy.accounting.discards import DiscardTracker
from bruce.proxy.accounting.outcomes import Outcomes
from bruce.proxy.config.listeners import ListenerConfig
from bruce.proxy.daemon import plog_inputs as inputs_module
from bruce.proxy.daemon.plog_inputs import PlogInputs, PlogStartError
from bruce.proxy.daemon.spooling import DiskBacklog
from bruce.proxy.messages.budget import MessageBudget
from bruce.proxy.messages.message import MESSAGE_OVERHEAD, HeldMessage
from bruce.proxy.spool import FullPolicy, Spool, SpoolConfig, SpoolSlot
from bruce.wire.plog import build_fragments, plog_partition_key


class Daemon:
    """The parts of the daemon PlogInputs works with; it is the router too: routed messages are kept in ``routed``."""

    def __init__(self, capacity: int = 100_000, listeners: tuple[ListenerConfig, ...] = ()) -> None:
        self.counters = Counters()
        self.budget = MessageBudget(capacity, counters=self.counters)
        self.tracker = DiscardTracker(counters=self.counters, log_discards=False)
        self.slot = SpoolSlot()
        self.outcomes = Outcomes(self.budget, self.tracker, spool=self.slot)
        self.routed: list[HeldMessage] = []
        self.kills: list[str] = []
        self.inputs = PlogInputs(
            listeners,
            sink=self,
            spool=self.slot,
            budget=self.budget,
            outcomes=self.outcomes,
            counters=self.counters,
            on_kill=lambda: self.kills.append("kill"),
        )
        self.outcomes.add_input(lambda: self.inputs.received)

    def deliver_all(self) -> None:
        """What the producer's ACKs do: release every routed message."""
        if self.routed:
            self.outcomes.delivered("t", 0, 0, self.routed)
            self.routed = []

    def route(self, msg: HeldMessage) -> None:
        self.routed.append(msg)

    def route_many(self, messages: list[HeldMessage]) -> None:
        self.routed.extend(messages)

    def balanced(self) -> bool:
        return self.outcomes.snapshot().balanced


def udp(**kw) -> ListenerConfig:
    return ListenerConfig(**{"protocol": "udp", "port": 0, "topic": "events", "name": "u", **kw})


def tcp(**kw) -> ListenerConfig:
    return ListenerConfig(**{"protocol": "tcp", "port": 0, "topic": "lines", "name": "t", **kw})


def test_a_submitted_message_is_the_daemons_message_with_its_charge() -> None:
    d = Daemon(listeners=(udp(),))
    assert d.inputs.submit("events", b"user-7", b"value", partition_key=plog_partition_key(b"user-7"), listener="u")
    assert d.inputs.submit("events", None, b"no key", partition_key=None, listener="u")
    keyed, keyless = d.routed
    assert (keyed.topic, keyed.key, keyed.value, keyed.partition_key) == (
        "events",
        b"user-7",
        b"value",
        plog_partition_key(b"user-7"),
    )
    assert (keyed.charge, keyed.size) == (6 + 5 + MESSAGE_OVERHEAD, 11)
    assert (keyless.key, keyless.partition_key, keyless.size, keyless.charge) == (None, None, 6, 6 + MESSAGE_OVERHEAD)
    assert keyless.timestamp > 1_600_000_000_000  # epoch ms, the receive time
    assert d.budget.held == 2 and d.counters.get("MsgCreate") == 2
    a = d.outcomes.snapshot()
    assert (a.received, a.delivered, a.discarded, a.in_flight) == (2, 0, 0, 2)
    d.deliver_all()
    a = d.outcomes.snapshot()
    assert (a.received, a.delivered, a.discarded, a.in_flight) == (2, 2, 0, 0)


def test_a_full_budget_discards_as_no_mem() -> None:
    d = Daemon(capacity=1000, listeners=(udp(),))
    assert d.inputs.submit("events", None, b"x" * 500, partition_key=None, listener="u")
    assert not d.inputs.submit("events", None, b"y" * 500, partition_key=None, listener="u")
    assert d.counters.get("Discard", (("reason", "NO_MEM"),)) == 1
    assert d.tracker.report().unfinished.discard_topic[0].topic == "events"
    a = d.outcomes.snapshot()
    assert (a.received, a.delivered, a.discarded, a.in_flight) == (2, 0, 1, 1) and a.balanced


def test_with_the_spool_each_message_is_spooled_before_routing(tmp_path: Path) -> None:
    """A message gets its spool sequence; one the budget has no room for is held on disk only (no NO_MEM), and so is
    the next one while it waits; a full spool with the discard policy discards as SPOOL_FULL; the disk backlog routes
    the held ones in order once deliveries make room, and delivery marks everything done: nothing is left to replay."""
    d = Daemon(capacity=1000, listeners=(udp(),))
    config = SpoolConfig(tmp_path / "s", max_bytes=800, full_policy=FullPolicy.DISCARD)
    with Spool.open(config) as spool:
        d.slot.spool = spool
        backlog = DiskBacklog(
            spool, behind=asyncio.Event(), sink=d, budget=d.budget, outcomes=d.outcomes, counters=d.counters
        )
        assert d.inputs.submit("events", b"k", b"x" * 10, partition_key=5, listener="u")
        assert d.inputs.submit("events", None, b"y" * 500, partition_key=None, listener="u")  # no room: on disk
        assert d.inputs.submit("events", None, b"w" * 10, partition_key=None, listener="u")  # behind it: on disk
        assert [m.spool_seq for m in d.routed] == [0]
        assert spool.cursor.held == 2 and spool.pending == 3 and d.balanced()
        assert not d.inputs.submit("events", None, b"z" * 200, partition_key=None, listener="u")  # spool full
        assert d.counters.get("Discard", (("reason", "SPOOL_FULL"),)) == 1
        assert d.counters.get("Discard", (("reason", "NO_MEM"),)) == 0
        d.deliver_all()
        while spool.cursor.held:
            backlog.route_some(10)
            d.deliver_all()
        assert spool.pending == 0 and d.balanced()
        assert d.outcomes.snapshot().delivered == 3
    with Spool.open(SpoolConfig(tmp_path / "s")) as spool:
        assert [r for b in spool.replay() for r in b] == []


def test_rejections_reach_the_discard_report() -> None:
    d = Daemon(listeners=(udp(),))
    d.inputs.reject(DiscardReason.MALFORMED, b"\x05 bad", topic=None, listener="u")
    d.inputs.reject(DiscardReason.LONG_MSG, b"L" * 5000, topic=None, listener="u")
    d.inputs.reject(DiscardReason.BAD_TOPIC, b"untagged", topic="null", listener="u")
    report = d.tracker.report().unfinished
    # input over its size limit is malformed in the report, as Bruce counts an oversized datagram (a bounded prefix)
    assert (report.malformed_msg_count, report.recent_malformed) == (2, (b"L" * 256, b"\x05 bad"))
    assert report.recent_too_long_msg == ()
    assert (report.bad_topic_msg_count, report.recent_bad_topic) == (1, ("null",))
    a = d.outcomes.snapshot()
    assert (a.received, a.discarded, a.in_flight) == (3, 3, 0) and a.balanced
    counters = {(name, labels): v for name, labels, v in d.inputs.counter_set().items()}
    assert counters[("PlogRejected", (("listener", "u"),))] == 3
    assert counters[("PlogReceived", (("listener", "u"),))] == 3


def test_budget_availability_by_size() -> None:
    d = Daemon(capacity=2000)
    assert d.inputs.budget_available(1000)
    d.budget.try_reserve(1500)
    assert d.inputs.budget_available(100)  # 100 + overhead = the 500 left
    assert not d.inputs.budget_available(101)
    assert d.inputs.budget_available(50)  # 450 fits
    assert d.inputs.budget_available(5000)  # could never fit: take it (and discard it) rather than wait forever


def run(coro) -> None:
    asyncio.run(asyncio.wait_for(coro, 10))


def reserve(d: Daemon, messages: int) -> None:
    """Hold ``messages`` messages of 100 bytes of charge each."""
    for _ in range(messages):
        assert d.budget.try_reserve(100)


def test_a_waiter_wakes_at_the_resume_level_never_synchronously() -> None:
    async def main() -> None:
        d = Daemon(capacity=8000)
        reserve(d, 79)  # 7900 used
        woken: list[str] = []
        d.inputs.notify_when_free(lambda: woken.append("a"), 100)
        d.budget.release(100)  # 7800 used: above the resume level (7000)
        await asyncio.sleep(0.05)
        assert woken == []
        d.budget.release(900, 9)  # 6900 used: the budget's hook fires; the callback runs from the loop
        assert woken == []
        await asyncio.sleep(0)
        assert woken == ["a"]

    run(main())


def test_a_big_waiter_below_the_resume_level_is_rechecked_by_timer(monkeypatch) -> None:
    monkeypatch.setattr(inputs_module, "RECHECK_S", 0.005)

    async def main() -> None:
        d = Daemon(capacity=8000)
        reserve(d, 60)  # 6000 used: below the resume level, but 3000 + overhead does not fit
        woken: list[str] = []
        d.inputs.notify_when_free(lambda: woken.append("big"), 3000)
        await asyncio.sleep(0.05)
        assert woken == []
        d.budget.release(2000, 20)  # 4000 used: now it fits; the timer sees it
        await asyncio.sleep(0.05)
        assert woken == ["big"]

    run(main())


def test_a_cancelled_waiter_is_not_called() -> None:
    async def main() -> None:
        d = Daemon(capacity=8000)
        reserve(d, 79)
        woken: list[str] = []

        def callback() -> None:
            woken.append("x")

        d.inputs.notify_when_free(callback, 100)
        d.inputs.cancel_notify(callback)
        d.budget.release(7900, 79)
        await asyncio.sleep(0.02)
        assert woken == []

    run(main())


def test_refusing_discards_new_messages_and_wakes_waiters() -> None:
    async def main() -> None:
        d = Daemon(capacity=8000, listeners=(udp(),))
        reserve(d, 79)
        woken: list[str] = []
        d.inputs.notify_when_free(lambda: woken.append("w"), 100)
        d.inputs.refuse()
        assert not d.inputs.submit("events", None, b"late", partition_key=None, listener="u")
        assert d.counters.get("Discard", (("reason", "SERVER_SHUTDOWN"),)) == 1
        assert d.routed == [] and d.inputs.budget_available(10_000)
        await asyncio.sleep(0)
        assert woken == ["w"]

    run(main())


def test_start_stop_and_a_busy_port(sink_free_port: Callable[[], socket.socket]) -> None:
    async def main() -> None:
        taken = sink_free_port()
        port = taken.getsockname()[1]
        d = Daemon(listeners=(udp(), tcp(), udp(name="busy", port=port)))
        with pytest.raises(PlogStartError, match=f"plog listener busy: cannot listen on udp 127.0.0.1:{port}: "):
            await d.inputs.start()
        first = d.inputs.listeners[0]
        assert first._sock is None  # the listener that had started was stopped again
        taken.close()

        ok = Daemon(listeners=(udp(), tcp()))
        await ok.inputs.start()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"queued at stop", ok.inputs.listeners[0].address)
            s.sendto(build_fragments(b"x" * 30, message_id=1, fragment_size=10)[0], ok.inputs.listeners[0].address)
        await ok.inputs.stop()  # reads what is queued, drops the incomplete message, then refuses
        assert [m.value for m in ok.routed] == [b"queued at stop"]
        assert ok.tracker.report().unfinished.malformed_msg_count == 1
        assert ok.balanced() and ok.inputs.received == 2
        assert not ok.inputs.submit("events", None, b"after", partition_key=None, listener="u")

    run(main())


def test_serve_raises_a_listeners_failure_and_returns_after_stop() -> None:
    """A listener's unexpected error reaches the daemon's task group through serve(); without one, serve() ends
    when the listeners are stopped."""

    async def main() -> None:
        d = Daemon(listeners=(udp(),))
        await d.inputs.start()
        serving = asyncio.ensure_future(d.inputs.serve())
        d.route = _router_bug
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"meets the bug", d.inputs.listeners[0].address)
        with pytest.raises(RuntimeError, match="router bug") as raised:
            await asyncio.wait_for(serving, 5)
        assert raised.value.__notes__ == ["in plog listener u"]
        await d.inputs.stop()

        ok = Daemon(listeners=(udp(),))
        await ok.inputs.start()
        serving = asyncio.ensure_future(ok.inputs.serve())
        await asyncio.sleep(0.01)
        assert not serving.done()
        await ok.inputs.stop()
        assert await asyncio.wait_for(serving, 5) is None

    run(main())


def _router_bug(msg: HeldMessage) -> None:
    raise RuntimeError("router bug")


def test_kill_reaches_the_daemons_callback() -> None:
    async def main() -> None:
        d = Daemon(listeners=(udp(enable_kill=True),))
        await d.inputs.start()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"\x00\x00KILL", d.inputs.listeners[0].address)
        for _ in range(200):
            if d.kills:
                break
            await asyncio.sleep(0.005)
        assert d.kills == ["kill"]
        await d.inputs.stop()

    run(main())


def test_counters_and_gauges_per_listener() -> None:
    d = Daemon(listeners=(udp(), tcp()))
    names = {(name, labels) for name, labels, _ in d.inputs.counter_set().items()}
    for listener in ("u", "t"):
        labels = (("listener", listener),)
        for name in ("PlogReceived", "PlogRejected", "PlogUdpSimpleMessages", "PlogTcpLines", "PlogV0Fragments"):
            assert (name, labels) in names
    gauges = {(g.name, g.labels): g.value for g in d.inputs.gauges()}
    assert gauges == {
        ("PlogPendingMessages", (("listener", "u"),)): 0,
        ("PlogPendingBytes", (("listener", "u"),)): 0,
        ("PlogOpenConnections", (("listener", "t"),)): 0,
    }


@pytest.fixture
def sink_free_port() -> Callable[[], socket.socket]:
    """A UDP socket bound to a free loopback port (closed by the test)."""

    def bind() -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        return s

    return bind
