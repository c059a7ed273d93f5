"""An outage bounded by disk, not memory (docs/spool.md, "Held on disk only"): with the spool, what does not fit the
budget is held on disk only and routed later, in arrival order, as deliveries make room; no NO_MEM; ``received =
delivered + discarded + in flight`` at every step; a damaged held record is one SPOOL_CORRUPT discard; at a stop the
rest is SERVER_SHUTDOWN and stays in the spool for the next start."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bruce.producer.counters import Counters
from bruce.producer.reasons import DiscardReason
from bruce.proxy.accounting.discards import DiscardTracker
from bruce.proxy.accounting.outcomes import Accounting, Outcomes
from bruce.proxy.daemon.spooling import DiskBacklog
from bruce.proxy.intake.intake import DatagramIntake
from bruce.proxy.messages.budget import MessageBudget
from bruce.proxy.messages.message import HeldMessage, message_charge
from bruce.proxy.spool import Spool, SpoolConfig, SpoolSlot
from bruce.wire.datagram import build_any_partition

from .conftest import ListRouter

TS = 1_700_000_000_000
CHARGE = message_charge(None, b"v000")


class Daemon:
    """The intake, the outcomes, the spool and the disk backlog wired as the daemon wires them; the router is a
    list."""

    def __init__(self, directory: Path, room: int) -> None:
        self.counters = Counters()
        self.budget = MessageBudget(room * CHARGE, counters=self.counters)
        self.behind = asyncio.Event()  # the cursor fell behind: the backlog wakes (as the daemon opens its spool)
        self.spool = Spool.open(SpoolConfig(directory, segment_bytes=400), on_behind=self.behind.set)
        self.slot = SpoolSlot(self.spool)
        self.outcomes = Outcomes(
            self.budget, DiscardTracker(interval_s=600, log_discards=False, counters=self.counters), spool=self.slot
        )
        self.routed: list[HeldMessage] = []
        self.router = ListRouter(self.routed)
        self.intake = DatagramIntake(
            "/nonexistent/b.sock",
            sink=self.router,
            discards=self.outcomes,
            budget=self.budget,
            counters=self.counters,
            spool=self.slot,
            reader="loop",
        )
        self.outcomes.add_input(lambda: self.intake.datagrams)
        self.backlog = self.backlog_of(self.spool)
        self.sent = 0
        self.acked = 0  # routed messages acknowledged

    def backlog_of(self, spool: Spool) -> DiskBacklog:
        return DiskBacklog(
            spool,
            behind=self.behind,
            sink=self.router,
            budget=self.budget,
            outcomes=self.outcomes,
            counters=self.counters,
        )

    def send(self, n: int) -> None:
        self.intake.feed(
            [build_any_partition("t", b"v%03d" % i, timestamp=TS) for i in range(self.sent, self.sent + n)], 1.0
        )
        self.sent += n
        self.check()

    def deliver_all(self) -> None:
        """The broker acknowledges everything routed so far."""
        pending = self.routed[self.acked :]
        self.acked = len(self.routed)
        if pending:
            self.outcomes.delivered("t", 0, 0, pending)
        self.check()

    def check(self) -> None:
        a = self.outcomes.snapshot()
        assert a.balanced, a

    def values(self) -> list[bytes]:
        return [m.value for m in self.routed]


def test_what_does_not_fit_waits_on_disk_and_comes_back_in_order(tmp_path: Path) -> None:
    d = Daemon(tmp_path, room=3)
    d.send(10)
    assert d.values() == [b"v000", b"v001", b"v002"]
    assert d.outcomes.snapshot().in_flight == 10 and d.spool.cursor.held == 7
    assert d.outcomes.discarded_total == 0
    assert not d.backlog.route_some(100)  # no room: nothing moves
    d.deliver_all()
    assert not d.backlog.route_some(100)  # room for three
    d.check()
    assert d.values()[3:] == [b"v003", b"v004", b"v005"]
    d.send(2)  # behind: later input goes to disk too, although it would fit after a delivery
    d.deliver_all()
    while d.spool.cursor.held:
        d.backlog.route_some(100)
        d.deliver_all()
    assert d.values() == [b"v%03d" % i for i in range(12)]
    assert d.outcomes.snapshot() == Accounting(12, 12, 0, 0)
    assert d.counters.get("MsgCreate") == 12 and d.counters.get("MsgDestroy") == 12
    assert d.spool.pending == 0 and d.spool.stats()["SpoolDiskOnly"] == 9
    d.send(2)  # caught up: straight to memory again
    assert d.values()[12:] == [b"v012", b"v013"]
    d.spool.close()


def test_a_damaged_held_record_is_one_spool_corrupt_discard(tmp_path: Path) -> None:
    d = Daemon(tmp_path, room=1)
    d.send(3)
    segment = sorted(tmp_path.glob("*.seg"))[-1]
    data = bytearray(segment.read_bytes())
    data[-2] ^= 1  # the last record's value
    segment.write_bytes(bytes(data))
    d.deliver_all()
    while d.spool.cursor.held:
        d.backlog.route_some(100)
        d.deliver_all()
    assert d.values() == [b"v000", b"v001"]
    assert d.outcomes.snapshot() == Accounting(3, 2, 1, 0)
    assert d.counters.get("Discard", (("reason", DiscardReason.SPOOL_CORRUPT.value),)) == 1
    d.spool.close()


def test_at_a_stop_what_is_held_on_disk_is_kept_and_replayed_at_the_next_start(tmp_path: Path) -> None:
    """Kept in the spool, not discarded: no SERVER_SHUTDOWN discard, the accounting's ``kept``."""
    d = Daemon(tmp_path, room=2)
    d.send(5)
    d.deliver_all()
    assert d.backlog.settle() == 3
    assert d.counters.get("Discard", (("reason", DiscardReason.SERVER_SHUTDOWN.value),)) == 0
    assert d.outcomes.snapshot() == Accounting(5, 2, 0, 0, kept=3)
    assert d.spool.cursor.held == 0
    d.spool.close()
    with Spool.open(SpoolConfig(tmp_path)) as spool:
        assert [r.value for burst in spool.replay() for r in burst] == [b"v002", b"v003", b"v004"]


def test_the_backlog_task_routes_when_deliveries_make_room(tmp_path: Path) -> None:
    d = Daemon(tmp_path, room=4)

    async def scenario() -> None:
        task = asyncio.create_task(d.backlog.run())
        d.send(20)
        for _ in range(200):
            await asyncio.sleep(0.005)
            d.deliver_all()
            if len(d.routed) == 20 and not d.spool.cursor.held:
                break
        task.cancel()

    asyncio.run(scenario())
    d.deliver_all()
    assert d.values() == [b"v%03d" % i for i in range(20)]
    assert d.outcomes.snapshot() == Accounting(20, 20, 0, 0)
    d.spool.close()


def test_with_the_spool_full_too_the_full_policy_and_no_mem_apply_as_before(tmp_path: Path) -> None:
    d = Daemon(tmp_path, room=2)
    d.spool.close()
    small = SpoolConfig(tmp_path / "small", segment_bytes=400, max_bytes=700)  # ten records or so
    d.spool = Spool.open(small, on_behind=d.behind.set)
    d.slot.spool = d.spool
    d.backlog = d.backlog_of(d.spool)
    for _ in range(30):  # one datagram per burst (a burst is spooled whole or not at all)
        d.send(1)
    on_disk, full = d.spool.cursor.held, d.spool.full
    assert on_disk > 0 and full > 0 and 2 + on_disk + full == 30
    assert d.counters.get("Discard", (("reason", DiscardReason.NO_MEM.value),)) == full  # memory-only, no room
    assert d.outcomes.snapshot() == Accounting(30, 0, full, 2 + on_disk)
    d.deliver_all()
    while d.spool.cursor.held:
        d.backlog.route_some(100)
        d.deliver_all()
    assert d.values() == [b"v%03d" % i for i in range(2 + on_disk)]  # what was spooled, in order
    assert d.outcomes.snapshot() == Accounting(30, 2 + on_disk, full, 0)
    d.spool.close()


def test_a_held_message_larger_than_the_whole_budget_is_no_mem_when_its_turn_comes(tmp_path: Path) -> None:
    d = Daemon(tmp_path, room=2)
    d.send(3)
    d.intake.feed([build_any_partition("t", b"L" * 2 * CHARGE, timestamp=TS)], 1.0)  # never fits, even alone
    d.send(1)
    d.deliver_all()
    while d.spool.cursor.held:
        d.backlog.route_some(100)
        d.deliver_all()
    assert d.values() == [b"v000", b"v001", b"v002", b"v003"]
    assert d.counters.get("Discard", (("reason", DiscardReason.NO_MEM.value),)) == 1
    assert d.outcomes.snapshot() == Accounting(5, 4, 1, 0) and d.spool.pending == 0
    d.spool.close()
