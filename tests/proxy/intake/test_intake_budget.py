"""The memory budget: reservations, release, high-water mark, NO_MEM refusals, resume notifications, misuse, and the
charge per message covering what a held message really occupies."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable

import pytest

from bruce.producer.counters import Counters
from bruce.proxy.intake.intake import DatagramIntake
from bruce.proxy.messages.budget import BudgetError, MessageBudget
from bruce.proxy.messages.message import MESSAGE_OVERHEAD, HeldMessage, message_charge
from bruce.wire.datagram import build_any_partition, build_partition_key


def test_reserve_release_and_high_water() -> None:
    budget = MessageBudget(1000)
    assert budget.try_reserve(400) and budget.try_reserve(500)
    assert (budget.used, budget.free, budget.held, budget.high_water) == (900, 100, 2, 900)
    assert not budget.try_reserve(101)  # would exceed the capacity: refused, nothing reserved
    assert (budget.used, budget.held, budget.refused) == (900, 2, 1)
    assert budget.try_reserve(100)  # exactly full is allowed
    budget.release(400)
    budget.release(600, count=2)
    assert (budget.used, budget.free, budget.held, budget.high_water) == (0, 1000, 0, 1000)
    assert budget.try_reserve(1000)  # release restored the whole capacity


def test_release_counts_msg_destroy() -> None:
    counters = Counters()
    budget = MessageBudget(1000, counters=counters)
    for _ in range(3):
        budget.try_reserve(10)
    budget.release(20, count=2)
    budget.release(10)
    assert counters.get("MsgDestroy") == 3


@pytest.mark.parametrize(
    ("charge", "count"),
    [(101, 1), (50, 3), (50, 2)],  # more bytes than held, more messages than held, bytes left with no message
)
def test_release_not_matching_a_reservation_is_a_bug(charge: int, count: int) -> None:
    budget = MessageBudget(1000)
    budget.try_reserve(60)
    budget.try_reserve(40)
    with pytest.raises(BudgetError):
        budget.release(charge, count)
    assert (budget.used, budget.held) == (100, 2)  # unchanged


def test_invalid_construction() -> None:
    with pytest.raises(ValueError):
        MessageBudget(0)
    with pytest.raises(ValueError):
        MessageBudget(100, resume_fraction=1.5)


def test_notify_when_free_waits_for_the_resume_level() -> None:
    budget = MessageBudget(800, resume_fraction=0.5)
    calls: list[str] = []

    def a() -> None:
        calls.append("a")

    def b() -> None:
        calls.append("b")

    for _ in range(7):
        budget.try_reserve(100)
    budget.notify_when_free(a)
    budget.notify_when_free(a)  # registering twice has no further effect
    budget.notify_when_free(b)
    budget.cancel_notify(b)
    budget.release(200, count=2)  # 500 held: above the resume level (400)
    assert calls == []
    budget.release(100)  # 400 held: at the resume level
    assert calls == ["a"]
    budget.try_reserve(100)
    budget.release(100)
    assert calls == ["a"]  # one-shot
    budget.notify_when_free(b)  # already at the resume level: called at once
    assert calls == ["a", "b"]


@pytest.mark.parametrize(
    ("key_len", "value_len", "partition_key"),
    [(0, 0, False), (1, 1, False), (16, 16, True), (3, 100, True), (10, 1000, True)],
)
def test_held_messages_stay_within_their_charge(
    make_intake: Callable[..., DatagramIntake], key_len: int, value_len: int, partition_key: bool
) -> None:
    """What the budget promises: the memory held messages occupy (object, key, value, timestamp, partition key,
    charge, list slot), measured with tracemalloc, is no more than their charges."""
    intake = make_intake()
    n = 5000
    key, value = b"k" * key_len, b"v" * value_len
    datagrams = [
        build_partition_key("topic", value, key, partition_key=i * 100_000, timestamp=1_700_000_000_000 + i)
        if partition_key
        else build_any_partition("topic", value, key, timestamp=1_700_000_000_000 + i)
        for i in range(n)
    ]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        intake.feed(datagrams, 12.5)
        del datagrams
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    messages: list[HeldMessage] = intake.sink.messages
    assert len(messages) == n
    charge = message_charge(key, value)
    assert all(m.charge == charge for m in messages)
    assert held <= n * charge, f"{held / n:.0f} B held per message, charged {charge}"
    assert held >= n * (charge - MESSAGE_OVERHEAD)  # key and value really are held: the measure is not vacuous
