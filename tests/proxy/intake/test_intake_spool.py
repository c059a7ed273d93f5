"""The intake with the durable spool: each burst is appended before routing and its messages carry their sequences;
a full spool with the discard policy discards the burst as SPOOL_FULL (in order with the other outcomes), with the
memory policy holds it in memory only; a spooled message without room in the budget is held on disk only (and every
later one until the cursor caught up); and the daemon's outcomes mark every fate done except SERVER_SHUTDOWN."""

from __future__ import annotations

from pathlib import Path

from bruce.producer.counters import Counters
from bruce.producer.reasons import DiscardReason
from bruce.proxy.accounting.discards import DiscardTracker
from bruce.proxy.accounting.outcomes import Outcomes
from bruce.proxy.intake.intake import DatagramIntake
from bruce.proxy.messages.budget import MessageBudget
from bruce.proxy.messages.message import HeldMessage, message_charge
from bruce.proxy.spool import FullPolicy, Spool, SpoolConfig, SpoolMessage, SpoolSlot
from bruce.wire.datagram import build_any_partition, build_partition_key

from .conftest import RecordingSink

TS = 1_700_000_000_000


def intake_with(spool: Spool, capacity: int = 10**9) -> tuple[DatagramIntake, RecordingSink, MessageBudget]:
    sink = RecordingSink()
    budget = MessageBudget(capacity)
    intake = DatagramIntake(
        "/nonexistent/bruce.socket",
        sink=sink,
        discards=sink,
        budget=budget,
        counters=Counters(),
        spool=SpoolSlot(spool),
        reader="loop",
    )
    return intake, sink, budget


def burst(n: int, start: int = 0) -> list[bytes]:
    return [build_any_partition("t", b"v%03d" % i, timestamp=TS + i) for i in range(start, start + n)]


def replayed(directory: Path) -> list[tuple[int, bytes, int | None, bytes | None, bytes]]:
    with Spool.open(SpoolConfig(directory)) as spool:
        return [(r.sequence, r.topic, r.partition_key, r.key, r.value) for b in spool.replay() for r in b]


def test_a_burst_is_spooled_and_its_messages_carry_consecutive_sequences(tmp_path: Path) -> None:
    with Spool.open(SpoolConfig(tmp_path / "s")) as spool:
        intake, sink, _ = intake_with(spool)
        intake.feed(burst(3), 1.0)
        intake.feed([build_partition_key("p", b"x", key=b"k", partition_key=-7, timestamp=TS), b"bad"], 1.0)
        assert [m.spool_seq for m in sink.messages] == [0, 1, 2, 3]
        assert [u[0] for u in sink.unparsed] == [DiscardReason.MALFORMED]  # never spooled
    assert replayed(tmp_path / "s") == [
        (0, b"t", None, b"", b"v000"),
        (1, b"t", None, b"", b"v001"),
        (2, b"t", None, b"", b"v002"),
        (3, b"p", -7, b"k", b"x"),
    ]


def test_a_full_spool_discards_the_burst_as_spool_full_in_order(tmp_path: Path) -> None:
    config = SpoolConfig(tmp_path / "s", max_bytes=400, full_policy=FullPolicy.DISCARD)
    with Spool.open(config) as spool:
        intake, sink, budget = intake_with(spool)
        intake.feed(burst(1), 1.0)  # fits
        intake.feed([*burst(10, 1)[:2], b"bad", *burst(10, 3)], 1.0)  # does not
        assert [m.spool_seq for m in sink.messages] == [0]
        assert (
            sink.log[1:]
            == [(DiscardReason.SPOOL_FULL, None)] * 2
            + [(DiscardReason.MALFORMED, None)]
            + [(DiscardReason.SPOOL_FULL, None)] * 10
        )
        assert budget.held == 1  # nothing refused holds a reservation
        assert spool.full == 12


def test_a_full_spool_with_the_memory_policy_routes_without_a_sequence(tmp_path: Path) -> None:
    with Spool.open(SpoolConfig(tmp_path / "s", max_bytes=400)) as spool:
        intake, sink, _ = intake_with(spool)
        intake.feed(burst(1), 1.0)
        intake.feed(burst(10, 1), 1.0)
        assert [m.spool_seq for m in sink.messages] == [0] + [-1] * 10
        assert spool.not_spooled == 10


def test_a_spooled_message_without_room_is_held_on_disk_only_and_later_ones_follow_it(tmp_path: Path) -> None:
    """No NO_MEM with the spool: the message that does not fit stays on disk only, and so does every later spooled
    one (even one that would fit) until the cursor caught up; a memory-only one (spool full) still uses the budget."""
    charge = message_charge(None, b"v000")
    with Spool.open(SpoolConfig(tmp_path / "s")) as spool:
        intake, sink, budget = intake_with(spool, capacity=2 * charge)
        intake.feed(burst(3), 1.0)
        assert [m.spool_seq for m in sink.messages] == [0, 1]
        assert sink.discards == []
        assert (spool.cursor.start, spool.cursor.held) == (2, 1)
        budget.release(charge)  # room for one again: later input still goes to disk, behind the held one
        intake.feed(burst(2, 3), 1.0)
        assert [m.spool_seq for m in sink.messages] == [0, 1]
        assert spool.cursor.held == 3
        assert intake.counters.get("InputAgentGotOkMsg") == 5 and intake.counters.get("MsgCreate") == 2
        assert spool.stats()["SpoolHeldOnDisk"] == 3
        values = []
        while (record := spool.cursor.peek()) is not None:
            values.append(record.value)
            spool.cursor.take()
        assert values == [b"v002", b"v003", b"v004"]
        assert spool.cursor.held == 0 and spool.cursor.start is None
        assert spool.pending == 5  # nothing held on disk is done until it has a fate


def test_every_fate_but_server_shutdown_is_done(tmp_path: Path) -> None:
    budget = MessageBudget(10**9)
    with Spool.open(SpoolConfig(tmp_path / "s")) as spool:
        outcomes = Outcomes(budget, DiscardTracker(interval_s=600, log_discards=False), spool=SpoolSlot(spool))
        first = spool.append([SpoolMessage(b"t", None, None, b"v", TS)] * 6)
        messages = []
        for i in range(6):
            m = HeldMessage("t", None, b"v", TS, None, 1.0)
            m.spool_seq = first + i
            assert budget.try_reserve(m.charge)
            messages.append(m)
        outcomes.delivered("t", 0, 0, messages[:2])
        outcomes.discarded("t", messages[2:3], DiscardReason.KAFKA_ERROR_ACK)
        outcomes.discard_routed(messages[3], DiscardReason.RATE_LIMIT)
        outcomes.discarded("t", messages[4:5], DiscardReason.SERVER_SHUTDOWN)
        outcomes.discard_routed(messages[5], DiscardReason.SERVER_SHUTDOWN)
        assert spool.pending == 2
        assert (outcomes.kept_total, outcomes.discarded_total) == (2, 2)  # SERVER_SHUTDOWN: kept, not discarded
        assert budget.held == 0
    assert [r[0] for r in replayed(tmp_path / "s")] == [4, 5]
