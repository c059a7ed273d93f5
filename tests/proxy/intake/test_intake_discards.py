"""Every outcome of a datagram, from real datagrams over a real socket: messages, MALFORMED, API_KEY(n), VERSION(n),
LONG_MSG at the exact size boundary, NO_MEM when the budget is full; counters and the one-fate invariant."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from bruce.producer.reasons import DiscardReason
from bruce.proxy.intake.intake import TOPIC_CACHE_SIZE, DatagramIntake
from bruce.proxy.messages.budget import MessageBudget
from bruce.proxy.messages.message import MESSAGE_OVERHEAD, message_charge
from bruce.wire.datagram import build_any_partition, build_old_v0, build_partition_key

from .conftest import connect, wait_until

TS = 1_700_000_000_123


async def deliver(intake: DatagramIntake, datagrams: Sequence[bytes]) -> None:
    """Serve ``intake``, send ``datagrams`` from one client, wait for one outcome each, stop."""
    serving = asyncio.ensure_future(intake.serve())
    await wait_until(lambda: intake.accepting)
    with connect(str(intake.path)) as client:
        for d in datagrams:
            client.send(d)
            await asyncio.sleep(0)
    await wait_until(lambda: intake.sink.outcomes >= len(datagrams))
    await intake.drain()
    intake.close()
    await serving
    assert intake.sink.outcomes == len(datagrams)


def outcome_counters(intake: DatagramIntake) -> dict[str, int]:
    return {k: v for k, v in intake.counters.snapshot().items() if k.startswith("InputAgent") or k == "MsgCreate"}


@pytest.mark.parametrize("reader", ["loop", "process"])
def test_valid_datagrams_become_messages(make_intake: Callable[..., DatagramIntake], run: Any, reader: str) -> None:
    clock = iter(range(1000, 100000)).__next__
    intake = make_intake(reader=reader, clock=lambda: float(clock()))
    datagrams = [
        build_any_partition("clicks", b"v1", b"k1", timestamp=TS),
        build_partition_key("orders", b"v2", partition_key=0x444, timestamp=TS + 1),
        build_old_v0("legacy", b"v3", timestamp=TS + 2),
        build_any_partition("clicks", b"", timestamp=TS + 3),  # empty key and value are valid
    ]
    run(deliver(intake, datagrams))
    got = [(m.topic, m.key, m.value, m.timestamp, m.partition_key, m.charge) for m in intake.sink.messages]
    assert got == [
        ("clicks", b"k1", b"v1", TS, None, message_charge(b"k1", b"v1")),
        ("orders", b"", b"v2", TS + 1, 0x444, message_charge(b"", b"v2")),
        ("legacy", b"", b"v3", TS + 2, None, message_charge(b"", b"v3")),
        ("clicks", b"", b"", TS + 3, None, MESSAGE_OVERHEAD),
    ]
    assert all(m.received >= 1000 for m in intake.sink.messages)  # the daemon's clock, not the client's timestamp
    assert intake.sink.messages[0].topic is intake.sink.messages[3].topic  # topic strings are shared
    assert outcome_counters(intake) == {"InputAgentGotOkMsg": 4, "MsgCreate": 4}
    assert intake.budget.held == 4 and intake.budget.used == sum(m.charge for m in intake.sink.messages)


def test_malformed_datagrams(make_intake: Callable[..., DatagramIntake], run: Any) -> None:
    good = build_any_partition("t", b"value", timestamp=TS)
    bad_size = struct.pack(">i", len(good) - 1) + good[4:]  # to_bruce --bad
    bad_flags = good[:8] + b"\x00\x01" + good[10:]
    trailing = struct.pack(">i", len(good) + 1) + good[4:] + b"x"
    datagrams = [bad_size, b"", b"1234567", bad_flags, trailing]
    intake = make_intake()
    run(deliver(intake, datagrams))
    assert intake.sink.unparsed == [(DiscardReason.MALFORMED, d, None) for d in datagrams]
    assert intake.sink.messages == [] and intake.budget.used == 0
    assert outcome_counters(intake) == {"InputAgentDiscardMsgMalformed": 5}


def test_unsupported_api_key_and_versions(make_intake: Callable[..., DatagramIntake], run: Any) -> None:
    any_v0 = build_any_partition("t", b"v", timestamp=TS)
    pkey_v0 = build_partition_key("t", b"v", partition_key=1, timestamp=TS)
    api_258 = any_v0[:4] + struct.pack(">h", 258) + any_v0[6:]
    any_v1 = any_v0[:6] + struct.pack(">h", 1) + any_v0[8:]
    pkey_v3 = pkey_v0[:6] + struct.pack(">h", 3) + pkey_v0[8:]
    legacy_ff = any_v0[:4] + b"\xff" + any_v0[5:]  # Bruce's test: byte 4 = 0xFF → unsupported version -1
    intake = make_intake()
    run(deliver(intake, [api_258, any_v1, pkey_v3, legacy_ff]))
    assert intake.sink.unparsed == [
        (DiscardReason.API_KEY, api_258, 258),
        (DiscardReason.VERSION, any_v1, 1),
        (DiscardReason.VERSION, pkey_v3, 3),
        (DiscardReason.VERSION, legacy_ff, -1),
    ]
    assert outcome_counters(intake) == {
        "InputAgentDiscardMsgUnsupportedApiKey": 1,
        "InputAgentDiscardAnyPartitionMsgUnsupportedApiVersion": 1,
        "InputAgentDiscardPartitionKeyMsgUnsupportedApiVersion": 1,
        "InputAgentDiscardMsgUnsupportedVersion": 1,
    }


@pytest.mark.parametrize("reader", ["loop", "process"])
def test_oversize_is_too_long_at_the_exact_boundary(
    make_intake: Callable[..., DatagramIntake], run: Any, reader: str
) -> None:
    limit = 300

    def sized(n: int) -> bytes:
        d = build_any_partition("t", b"x" * (n - 29), timestamp=TS)
        assert len(d) == n
        return d

    at_limit, one_over, far_over = sized(limit), sized(limit + 1), sized(5000)
    intake = make_intake(reader=reader, max_input_msg_size=limit)
    run(deliver(intake, [at_limit, one_over, far_over]))
    assert [m.value for m in intake.sink.messages] == [at_limit[29:]]  # exactly the limit is accepted
    assert (
        intake.sink.unparsed
        == [
            (DiscardReason.LONG_MSG, one_over, limit),  # one byte over is too long, not malformed
            (DiscardReason.LONG_MSG, far_over[: limit + 1], limit),  # the kernel truncated it to limit + 1
        ]
    )
    assert outcome_counters(intake) == {"InputAgentGotOkMsg": 1, "MsgCreate": 1, "InputAgentDiscardMsgTooLong": 2}


def test_budget_full_discards_the_new_message_no_mem(make_intake: Callable[..., DatagramIntake], run: Any) -> None:
    # Bruce's input agent test: a pool that holds 4 messages; the 5th is discarded with NO_MEM.
    values = [b"%03d" % i + b"x" * 200 for i in range(5)]
    budget = MessageBudget(4 * message_charge(b"", values[0]))
    intake = make_intake(budget=budget)
    run(deliver(intake, [build_any_partition(f"topic{i}", v, timestamp=TS + i) for i, v in enumerate(values)]))
    assert [m.value for m in intake.sink.messages] == values[:4]
    assert intake.sink.discards == [(DiscardReason.NO_MEM, "topic4", b"", values[4], TS + 4)]
    assert outcome_counters(intake) == {"InputAgentGotOkMsg": 4, "MsgCreate": 4, "InputAgentDiscardMsgNoMem": 1}
    assert (budget.used, budget.held, budget.refused) == (budget.capacity, 4, 1)


def test_released_space_admits_new_messages(make_intake: Callable[..., DatagramIntake]) -> None:
    charge = message_charge(b"", b"v")
    budget = MessageBudget(2 * charge)
    intake = make_intake(budget=budget)
    d = build_any_partition("t", b"v", timestamp=TS)
    assert intake.feed([d, d, d], 1.0) == 2
    budget.release(charge)
    assert intake.feed([d], 2.0) == 1
    assert len(intake.sink.messages) == 3 and len(intake.sink.discards) == 1


def test_every_datagram_has_exactly_one_outcome(make_intake: Callable[..., DatagramIntake], run: Any) -> None:
    good = build_any_partition("t", b"v" * 50, timestamp=TS)
    mixed = [good, b"junk", good[:4] + b"\x01\x05" + good[6:], good + b"x" * 400, good] * 20
    budget = MessageBudget(30 * message_charge(b"", b"v" * 50))
    intake = make_intake(budget=budget, max_input_msg_size=200)
    run(deliver(intake, mixed))
    counted = sum(v for k, v in outcome_counters(intake).items() if k != "MsgCreate")
    assert counted == len(mixed) == intake.datagrams
    assert len(intake.sink.messages) == 30 and len(intake.sink.discards) == 10


def test_topic_bytes_that_are_not_utf8_keep_their_bytes(make_intake: Callable[..., DatagramIntake]) -> None:
    intake = make_intake()
    intake.feed([build_any_partition(b"bad\xff", b"v", timestamp=TS)], 1.0)
    (msg,) = intake.sink.messages
    assert msg.topic.encode("utf-8", "surrogateescape") == b"bad\xff"  # the router discards it as BAD_TOPIC


def test_topic_cache_is_bounded(make_intake: Callable[..., DatagramIntake]) -> None:
    intake = make_intake()
    n = TOPIC_CACHE_SIZE + 100
    intake.feed((build_any_partition(f"topic-{i}", b"", timestamp=TS) for i in range(n)), 1.0)
    assert len(intake.sink.messages) == n
    assert [m.topic for m in intake.sink.messages[-3:]] == [f"topic-{i}" for i in range(n - 3, n)]
    assert len(intake._topics) <= TOPIC_CACHE_SIZE
