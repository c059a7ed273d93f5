"""Compact storage of held batches: packing gives back exactly the messages packed (field by field) with charges that
add up to the packed charge, the packed charge covers the memory really held (tracemalloc) and meets Bruce's
figure for 100-byte values, what cannot be restored exactly stays loose, the producer's queues send and drain packed
batches like loose ones, and the budget packs before it refuses a message."""

from __future__ import annotations

import gc
import tracemalloc

import pytest

from bruce.producer.config import ProducerConfig
from bruce.producer.counters import Counters
from bruce.producer.dispatch.dispatcher import Dispatcher
from bruce.producer.queues.partition_queue import PartitionQueue
from bruce.proxy.messages.budget import MakeRoom, MessageBudget
from bruce.proxy.messages.message import HeldMessage
from bruce.proxy.routing.packed import (
    BATCH_BYTES,
    INDEX_BYTES,
    KEYED_INDEX_BYTES,
    PACK_MIN,
    SEQS_BATCH_BYTES,
    PackedBatch,
    Packer,
)

from .helpers import view

FIELDS = ("topic", "key", "value", "timestamp", "partition_key", "size", "headers", "pinned", "attempts", "spool_seq")


def loose(
    n: int, *, value: int = 100, keyed: bool = False, key: bytes | None = b"", spooled: int = 0
) -> list[HeldMessage]:
    """``spooled``: 0 no sequences; else two bursts' runs ``spooled`` apart and one message in memory only."""
    out = [
        HeldMessage(
            "t", key, b"%06d" % i + b"v" * (value - 6), 1_700_000_000_000 + i, (i * 7919 - 50) if keyed else None, 5.0
        )
        for i in range(n)
    ]
    if spooled:
        for i, m in enumerate(out):
            m.spool_seq = -1 if i == 5 else (1000 + i if i < n // 2 else 1000 + spooled + i)
    return out


def reserved(messages: list[HeldMessage], capacity: int = 10**9) -> MessageBudget:
    budget = MessageBudget(capacity)
    assert budget.try_reserve_many(sum(m.charge for m in messages), len(messages))
    return budget


def fields(m: HeldMessage) -> tuple:
    return tuple(getattr(m, f) for f in FIELDS)


@pytest.mark.parametrize(("spooled", "seq_bytes"), [(0, 0), (10**6, 4), (2**40, 8)])
@pytest.mark.parametrize("keyed", [False, True])
@pytest.mark.parametrize("key", [None, b"", b"key-1"])
def test_unpack_gives_back_every_field_and_the_exact_charge(
    keyed: bool, key: bytes | None, spooled: int, seq_bytes: int
) -> None:
    messages = loose(50, keyed=keyed, key=key, spooled=spooled)
    messages[3].value = b""  # an empty value, and a partition key beside AnyPartition ones
    messages[3].size = len(key or b"")
    if keyed:
        messages[4].partition_key = None
    budget = reserved(messages)
    packer = Packer(budget)
    packed = packer.pack("t", messages)
    assert isinstance(packed, PackedBatch) and len(packed) == 50
    per = (KEYED_INDEX_BYTES if keyed else INDEX_BYTES) + seq_bytes
    batch = BATCH_BYTES + (SEQS_BATCH_BYTES if seq_bytes else 0)
    assert packed.charge == sum(m.size for m in messages) + 50 * per + batch
    assert budget.used == packed.charge and budget.held == 50  # the difference went back at once
    back = packed.unpack()
    assert [fields(m) for m in back] == [fields(m) for m in messages]
    assert sum(m.charge for m in back) == packed.charge
    budget.release(sum(m.charge for m in back), len(back))
    assert (budget.used, budget.held) == (0, 0)


@pytest.mark.parametrize(
    "spoil",
    [
        lambda ms: setattr(ms[1], "attempts", 1),
        lambda ms: setattr(ms[1], "possible_duplicate", True),
        lambda ms: setattr(ms[1], "headers", [("h", b"x")]),
        lambda ms: setattr(ms[1], "timestamp", ms[0].timestamp + 2**31),
        lambda ms: ms.__delitem__(slice(PACK_MIN - 1, None)),
    ],
    ids=["retried", "duplicate", "headers", "timestamps-apart", "too-few"],
)
def test_what_cannot_be_restored_exactly_stays_loose(spoil) -> None:
    messages = loose(20)
    spoil(messages)
    budget = reserved(messages)
    used = budget.used
    assert Packer(budget).pack("t", messages) is None
    assert budget.used == used


# What the packer allocated and still holds: blocks allocated from packed.py's code. Not the process's whole traced
# memory, which other threads (pytest-xdist's link to its controller) change meanwhile.
PACKER_ONLY = [tracemalloc.Filter(True, "*/proxy/routing/packed.py")]


@pytest.mark.parametrize("spooled", [0, 10**6])
@pytest.mark.parametrize("keyed", [False, True])
def test_a_packed_batch_holds_no_more_memory_than_its_charge(keyed: bool, spooled: int) -> None:
    """The packed charge bounds what packed messages really occupy (tracemalloc); for 100-byte values it is at most
    Bruce's 128 bytes a message (8,192 messages per MiB of budget)."""
    for n, batches in ((PACK_MIN, 200), (2600, 4)):
        groups = [loose(n, keyed=keyed, spooled=spooled) for _ in range(batches)]
        packer = Packer(reserved([m for g in groups for m in g]))
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot().filter_traces(PACKER_ONLY)
            packed = [packer.pack("t", g) for g in groups]
            gc.collect()
            after = tracemalloc.take_snapshot().filter_traces(PACKER_ONLY)
        finally:
            tracemalloc.stop()
        held = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
        charge = sum(p.charge for p in packed)  # type: ignore[union-attr]
        assert held <= charge, (n, held, charge)
        assert held >= sum(m.size for g in groups for m in g)  # the values really are held: the measure is not vacuous
        if n >= 1000:
            assert charge / (n * batches) <= 128, charge / (n * batches)


def test_queues_send_and_drain_packed_batches_like_loose_ones() -> None:
    pq = PartitionQueue("t", 0, 1)
    batches = [loose(10), loose(10), loose(10)]
    everything = [fields(m) for b in batches for m in b]
    budget = reserved([m for b in batches for m in b])
    for b in batches:
        pq.add_ready(b, sum(m.size for m in b))
    pq.ready[0] = (loose(10), pq.ready[0][1], pq.ready[0][2])
    pq.ready[0][0][3].attempts = 1  # the front batch came back from a request: it stays loose
    everything[3] = fields(pq.ready[0][0][3])
    assert pq.compact(lambda topic, ms: Packer(budget).pack(topic, ms)) == 20
    assert [type(b).__name__ for b, _, _ in pq.ready] == ["list", "PackedBatch", "PackedBatch"]
    pq.append_ready(loose(1)[0])  # joins no packed batch
    assert pq.ready_count == 31 and len(pq.ready) == 4
    taken, size, _ = pq.take(100 * 15, first=True)  # the data limit ends inside the first packed batch
    assert [fields(m) for m in taken] == everything[:15] and size == 1500
    rest = pq.drain()
    assert [fields(m) for m in rest] == [*everything[15:], fields(loose(1)[0])]
    assert pq.ready_count == 0 and not pq.ready


def test_the_budget_packs_before_it_refuses() -> None:
    make_room = MakeRoom()  # the daemon's: connected to the producer's compact once it exists
    budget = MessageBudget(10_000, on_full=make_room)
    messages = loose(20)  # 20 x 500 = 10,000: full
    assert budget.try_reserve_many(sum(m.charge for m in messages), 20)
    packer = Packer(budget)
    queued = [messages]
    make_room.connect(lambda: [packer.pack("t", ms) for ms in queued])
    assert budget.has_room(500)  # room made by packing (what a TCP input asks before it reads)
    assert budget.try_reserve(500)
    assert budget.used == 20 * (100 + INDEX_BYTES) + BATCH_BYTES + 500 and budget.refused == 0
    queued.clear()
    assert not budget.try_reserve(10_000) and budget.refused == 1  # nothing left to pack: NO_MEM


def test_the_dispatcher_packs_a_batch_that_must_wait_and_sends_it_whole() -> None:
    """Flowing batches are packed only when the budget asks; while paused, a batch is packed on the way in; taking
    the queue's messages for requests gives every message back in order, with the charges the budget holds."""
    messages = [loose(20), loose(20), loose(20)]
    budget = reserved([m for b in messages for m in b])
    d = Dispatcher(ProducerConfig(), Counters(), None)
    d.pack = Packer(budget).pack
    d.apply_view(view({"t": [1]}), 1)
    d.route("t", list(messages[0]))
    d.route("t", list(messages[1]))
    pq = d.queue("t", 0)
    assert [type(b).__name__ for b, _, _ in pq.ready] == ["list", "list"]  # flowing: never packed on the way
    assert d.compact() == 40  # the budget asks
    assert d.compact() == 0 and not d.compactable  # nothing queued since: nothing to look at
    d.paused = True
    d.route("t", list(messages[2]))  # waits for a broker: packed on the way
    assert [type(b).__name__ for b, _, _ in pq.ready] == ["PackedBatch"] * 3
    assert budget.used == 3 * (20 * (100 + INDEX_BYTES) + BATCH_BYTES)
    taken, _, _ = pq.take(10**9, first=True)
    assert [fields(m) for m in taken] == [fields(m) for b in messages for m in b]
    assert sum(m.charge for m in taken) == budget.used


def test_a_batch_for_a_leader_that_cannot_be_reached_is_packed_on_the_way() -> None:
    """An outage without a pause (a failed connect pauses nothing): the sender marks the broker unreachable, and its
    partitions' batches are held packed from then on, until a connect succeeds."""
    messages = [loose(20), loose(20)]
    budget = reserved([m for b in messages for m in b])
    d = Dispatcher(ProducerConfig(), Counters(), None)
    d.pack = Packer(budget).pack
    d.apply_view(view({"t": [1]}), 1)
    leader = d.queue("t", 0).leader
    d.unreachable.add(leader)
    d.route("t", list(messages[0]))
    d.unreachable.discard(leader)
    d.route("t", list(messages[1]))
    assert [type(b).__name__ for b, _, _ in d.queue("t", 0).ready] == ["PackedBatch", "list"]


def test_messages_of_unbatched_topics_are_packed_when_the_budget_asks() -> None:
    messages = loose(30)
    budget = reserved(messages)
    d = Dispatcher(ProducerConfig(), Counters(), None)
    d.pack = Packer(budget).pack
    d.apply_view(view({"t": [1]}), 1)
    for m in messages[:3]:
        d.route("t", [m])  # one at a time: they join one ready batch
    assert d.compact() == 0  # too few to pack: looked at again later
    for m in messages[3:]:
        d.route("t", [m])
    assert d.compact() == 30
    pq = d.queue("t", 0)
    d.route("t", [loose(1)[0]])  # after a packed batch: a new loose one
    assert [type(b).__name__ for b, _, _ in pq.ready] == ["PackedBatch", "list"]
    assert [fields(m) for m in pq.drain()] == [*(fields(m) for m in messages), fields(loose(1)[0])]
