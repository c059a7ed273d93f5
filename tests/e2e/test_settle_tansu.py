"""Settling journaled batches against tansu's log (bruce.producer.idempotence.recovery): tansu keeps each producer's
state, and its Fetch answers carry every record batch's producer id, epoch and base sequence (checked here first).
Batches found in the log are not resent; the missing tail is resent with its own producer id, epoch and sequences; a gap
and a producer id the broker does not know fall back. confluent-kafka (CRCs on) reads the partition back."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from readback import read_back

from bruce.producer import Producer, ProducerConfig
from bruce.producer.idempotence.journal import JournalEntry
from bruce.producer.idempotence.recovery import Settlement, Settler
from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.wire.recordbatch import build_record_batch

pytestmark = pytest.mark.e2e


def _batch(values: list[bytes]) -> bytes:
    now = int(time.time() * 1000)
    return build_record_batch([(None, v, now, ()) for v in values])


def _entry(bid: int, pid: int, epoch: int, topic: str, base: int, values: list[bytes]) -> JournalEntry:
    entry = JournalEntry(bid, pid, epoch, topic, 0, base, len(values), -1, [], _batch(values))
    return entry


async def _settle(address: str, topic: str, written: list[list[bytes]], journaled: list[JournalEntry]) -> Settlement:
    """Write ``written`` as idempotent batches (one each), then settle ``journaled`` (whose producer id -1 means the
    producer's; epoch -1 too) with the same producer's identity."""
    config = ProducerConfig(bootstrap_servers=(address,), enable_idempotence=True, linger_ms=0)
    async with Producer(config) as producer:
        await producer.ready()
        for values in written:
            await asyncio.gather(*(producer.send(topic, v, partition=0) for v in values))
        idem = producer._dispatcher.seq.idem  # type: ignore[union-attr]
        for e in journaled:
            e.producer_id = idem.producer_id if e.producer_id == -1 else e.producer_id
            e.producer_epoch = idem.producer_epoch if e.producer_epoch == -1 else e.producer_epoch
        settler = Settler(producer, config, lambda e: e.payload or None, deadline=time.monotonic() + 20)
        return await settler.settle(journaled, {})


def _values(address: str, topic: str, expected: int) -> list[bytes]:
    return [m.value() for m in read_back(address, topic, 1, expected, extra=0.5)]


def test_found_batches_stay_and_the_missing_tail_is_resent_with_its_sequences(
    tansu: EmbeddedBroker, new_topic: Callable[..., str]
) -> None:
    """Two batches were stored (sequences 0 and 3), two more journaled and never stored (6 and 8): the first two are
    found, the last two resent in order with their sequences and acknowledged — the log holds each value once."""
    topic = new_topic(partitions=1)
    a, b, c, d = [b"a0", b"a1", b"a2"], [b"b0", b"b1", b"b2"], [b"c0", b"c1"], [b"d0"]
    journaled = [_entry(1, -1, -1, topic, 0, a), _entry(2, -1, -1, topic, 3, b)]
    journaled += [_entry(3, -1, -1, topic, 6, c), _entry(4, -1, -1, topic, 8, d)]
    out = asyncio.run(_settle(tansu.address, topic, [a, b], journaled))
    assert [e.batch_id for e in out.found] == [1, 2]
    assert [e.batch_id for e in out.resent] == [3, 4]
    assert out.fallback == [] and out.gaps == 0
    assert _values(tansu.address, topic, 9) == [*a, *b, *c, *d]


def test_a_batch_missing_before_a_found_one_is_a_gap_and_falls_back(
    tansu: EmbeddedBroker, new_topic: Callable[..., str]
) -> None:
    """The log holds sequences 0 and 3 of the producer; the journal says a batch at 2 was sent too (not there): the
    broker appends in sequence order, so this is a gap — nothing is resent, the batch falls back to the caller."""
    topic = new_topic(partitions=1)
    a, b = [b"a0", b"a1", b"a2"], [b"b0", b"b1", b"b2"]
    journaled = [_entry(1, -1, -1, topic, 0, a), _entry(2, -1, -1, topic, 2, [b"x"]), _entry(3, -1, -1, topic, 3, b)]
    out = asyncio.run(_settle(tansu.address, topic, [a, b], journaled))
    assert [e.batch_id for e in out.found] == [1, 3]
    assert [e.batch_id for e in out.fallback] == [2]
    assert out.resent == [] and out.gaps == 1
    assert _values(tansu.address, topic, 6) == [*a, *b]


def test_a_producer_id_the_broker_does_not_know_falls_back(
    tansu: EmbeddedBroker, new_topic: Callable[..., str]
) -> None:
    """The journaled batch's producer id was never given by this broker (its state is gone): the resend is answered
    UNKNOWN_PRODUCER_ID, the log is read again, the batch is not there: it falls back (the caller sends it as new)."""
    topic = new_topic(partitions=1)
    out = asyncio.run(_settle(tansu.address, topic, [], [_entry(1, 987_654, 0, topic, 4, [b"lost"])]))
    assert [e.batch_id for e in out.fallback] == [1]
    assert out.found == [] and out.resent == []
    assert _values(tansu.address, topic, 0) == []


def test_an_older_epoch_that_is_missing_falls_back_and_the_current_one_is_resent(
    tansu: EmbeddedBroker, new_topic: Callable[..., str]
) -> None:
    """A batch journaled under an earlier identity of the producer and not in the log cannot continue that sequence:
    it falls back; the current identity's missing batch is resent."""
    topic = new_topic(partitions=1)
    a = [b"a0", b"a1"]
    journaled = [_entry(1, 424_242, 0, topic, 0, [b"old"]), _entry(2, -1, -1, topic, 0, a)]
    journaled.append(_entry(3, -1, -1, topic, 2, [b"new"]))
    out = asyncio.run(_settle(tansu.address, topic, [a], journaled))
    assert [e.batch_id for e in out.found] == [2]
    assert [e.batch_id for e in out.resent] == [3]
    assert [e.batch_id for e in out.fallback] == [1]
    assert _values(tansu.address, topic, 3) == [*a, b"new"]
