"""A burst is handled exactly as datagram after datagram would be: the budget reserved for a whole burst at once
admits exactly the messages a reservation per message would, every outcome keeps its place in the order, a failing
sink still leaves every datagram a fate, and bursts larger than one pipe read cross the reader process's pipe whole."""

from __future__ import annotations

import asyncio
import itertools
import socket
import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bruce.producer.counters import Counters
from bruce.producer.reasons import DiscardReason
from bruce.proxy.intake.intake import DatagramIntake
from bruce.proxy.intake.intake_process import READ_SIZE
from bruce.proxy.messages.budget import MessageBudget
from bruce.proxy.messages.message import message_charge
from bruce.wire.datagram import build_any_partition, build_old_v0, build_partition_key

from .conftest import RecordingSink, connect, wait_until

TS = 1_700_000_000_000
MAX_SIZE = 300
KINDS = ("any", "pkey", "old", "malformed", "api_key", "version", "too_long")


def datagram(kind: str, i: int, size: int) -> tuple[bytes, bytes | tuple[DiscardReason, int | None]]:
    """A datagram of ``kind`` whose value is numbered ``i`` (``size`` extra bytes), and the outcome it must have
    when it fits the budget."""
    value = b"%05d" % i + b"x" * size
    good = build_any_partition("t", value, key=b"k", timestamp=TS + i)
    if kind == "any":
        return good, value
    if kind == "pkey":
        return build_partition_key("orders", value, partition_key=i, timestamp=TS), value
    if kind == "old":
        return build_old_v0("legacy", value, timestamp=TS), value
    if kind == "malformed":
        return good[:-1], (DiscardReason.MALFORMED, None)
    if kind == "api_key":
        return good[:4] + struct.pack(">h", 300) + good[6:], (DiscardReason.API_KEY, 300)
    if kind == "version":
        return good[:6] + struct.pack(">h", 2) + good[8:], (DiscardReason.VERSION, 2)
    return good + b"y" * MAX_SIZE, (DiscardReason.LONG_MSG, MAX_SIZE)  # detail: the limit it broke


def one_by_one(datagrams: list[tuple[bytes, Any]], capacity: int) -> list[Any]:
    """The reference: each datagram's outcome with a reservation per message, in order."""
    used = 0
    expected = []
    for data, outcome in datagrams:
        if isinstance(outcome, bytes):
            charge = message_charge(b"k" if data[4:6] == b"\x01\x00" else b"", outcome)
            if used + charge > capacity:
                outcome = (DiscardReason.NO_MEM, None)
            else:
                used += charge
        expected.append(outcome)
    return expected


@settings(max_examples=300, deadline=None)
@given(
    items=st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 120)), max_size=40),
    capacity_messages=st.integers(0, 40),
    cuts=st.lists(st.integers(0, 40), max_size=6),
)
def test_a_burst_has_the_outcomes_of_one_datagram_after_another(
    items: list[tuple[str, int]], capacity_messages: int, cuts: list[int]
) -> None:
    datagrams = [datagram(kind, i, size) for i, (kind, size) in enumerate(items)]
    capacity = max(1, capacity_messages * message_charge(b"k", b"0" * 70))
    sink = RecordingSink()
    counters = Counters()
    budget = MessageBudget(capacity)
    intake = DatagramIntake(
        "/nonexistent/bruce.socket", sink=sink, discards=sink, budget=budget, counters=counters, reader="loop"
    )
    intake.max_input_msg_size = MAX_SIZE
    bounds = sorted({0, len(datagrams), *(c for c in cuts if c < len(datagrams))})
    for start, stop in itertools.pairwise(bounds):
        intake.feed([d for d, _ in datagrams[start:stop]], 1.0)
    assert sink.log == one_by_one(datagrams, capacity)
    created = len(sink.messages)
    assert (budget.held, budget.used) == (created, sum(m.charge for m in sink.messages))
    c = counters.snapshot()
    assert c.get("MsgCreate", 0) == c.get("InputAgentGotOkMsg", 0) == created
    assert sum(v for k, v in c.items() if k.startswith("InputAgent")) == len(datagrams) == intake.datagrams


@pytest.mark.parametrize("malformed", [False, True], ids=["one-reservation", "one-by-one"])
def test_a_failing_sink_leaves_every_datagram_of_the_burst_a_fate(
    make_intake: Callable[..., DatagramIntake], malformed: bool
) -> None:
    """The router fails on the third message: it keeps its reservation (its fate is unknown), the messages after it
    are discarded as SERVER_SHUTDOWN without a reservation, a malformed datagram after it is still reported, and
    received = delivered + discarded + in flight holds, whichever path the burst takes (a malformed datagram in it
    makes the intake reserve message by message)."""
    counters = Counters()
    charge = message_charge(b"", b"0")
    budget = MessageBudget(1 << 20, counters=counters)
    intake = make_intake(budget=budget, counters=counters)
    seen = []

    def third_fails(msg: Any) -> None:
        seen.append(msg)
        if len(seen) == 3:
            raise RuntimeError("router bug")

    intake.sink.on_message = third_fails
    burst = [build_any_partition("t", b"%d" % i, timestamp=TS) for i in range(6)]
    if malformed:
        burst.append(burst[0][:-1])
    with pytest.raises(RuntimeError, match="router bug"):
        intake.feed(burst, 1.0)
    sink = intake.sink
    assert [m.value for m in seen] == [b"0", b"1", b"2"]
    assert [(d[0], d[3]) for d in sink.discards] == [(DiscardReason.SERVER_SHUTDOWN, b"%d" % i) for i in (3, 4, 5)]
    assert sink.unparsed == ([(DiscardReason.MALFORMED, burst[-1], None)] if malformed else [])
    discarded = len(sink.discards) + len(sink.unparsed)
    assert intake.datagrams == len(burst) == len(seen) + discarded  # the three seen are in flight
    assert (budget.held, budget.used) == (3, 3 * charge)
    assert counters.get("MsgCreate") - counters.get("MsgDestroy") == budget.held


@pytest.mark.parametrize("reader", ["loop", "process"])
def test_every_outcome_keeps_its_place_through_either_reader(
    make_intake: Callable[..., DatagramIntake], run: Any, reader: str
) -> None:
    datagrams = [datagram(kind, i, 10) for i, kind in enumerate(KINDS * 3)]
    capacity = 5 * message_charge(b"k", b"0" * 15)  # the later messages are NO_MEM
    intake = make_intake(reader=reader, max_input_msg_size=MAX_SIZE, budget=MessageBudget(capacity))

    async def scenario() -> None:
        serving = asyncio.ensure_future(intake.serve())
        await wait_until(lambda: intake.accepting)
        await asyncio.sleep(0.1 if reader == "process" else 0)
        with connect(str(intake.path)) as client:
            for d, _ in datagrams:
                client.send(d)
                await asyncio.sleep(0)  # the loop reader reads in this thread
        await wait_until(lambda: intake.sink.outcomes == len(datagrams))
        await intake.drain()
        intake.close()
        await serving

    run(scenario())
    assert intake.sink.log == one_by_one(datagrams, capacity)


def test_bursts_larger_than_a_pipe_read_arrive_whole(make_intake: Callable[..., DatagramIntake], run: Any) -> None:
    size = READ_SIZE + 5000
    values = [bytes([65 + i]) * size for i in range(4)]
    intake = make_intake(reader="process", max_input_msg_size=size + 100)

    async def scenario() -> None:
        serving = asyncio.ensure_future(intake.serve())
        await asyncio.sleep(0.1)
        with connect(str(intake.path)) as client:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 * size)
            for v in values:
                client.send(build_any_partition("big", v, timestamp=TS))
        await wait_until(lambda: len(intake.sink.messages) == len(values))
        await intake.drain()
        intake.close()
        await serving

    run(scenario())
    assert [m.value for m in intake.sink.messages] == values
