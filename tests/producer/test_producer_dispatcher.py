"""The dispatcher's outcome state machine, without sockets: every decision applied to a request part, transport
failures, the attempt limit, rerouting on a new view — and the accounting invariant after each step."""

from __future__ import annotations

import gc
import random
from types import SimpleNamespace as NS

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bruce.producer.acks import Failure
from bruce.producer.config import ProducerConfig
from bruce.producer.counters import Counters
from bruce.producer.dispatch.dispatcher import Dispatcher, NoHooks
from bruce.producer.dispatch.responses import RequestOutcomes
from bruce.producer.message import Message, OutcomeSink
from bruce.producer.metadata.cluster import build_view
from bruce.producer.metadata.partitioner import AnyPartitionCycle, explicit_partition, partition_for_key
from bruce.producer.queues.request import NO_COMPRESSION, Part, assemble
from bruce.producer.reasons import DiscardReason


def view(leaders: dict[str, list[int | None]]):
    brokers = [NS(node_id=i, host="h", port=i) for i in (1, 2, 3)]
    topics = [
        NS(
            name=name,
            error_code=0,
            partitions=[
                NS(partition_index=i, leader_id=-1 if b is None else b, error_code=5 if b is None else 0)
                for i, b in enumerate(ls)
            ],
        )
        for name, ls in leaders.items()
    ]
    return build_view(brokers, topics)


class Sink:
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def delivered(self, topic, partition, base_offset, messages):
        self.events.append(("delivered", topic, partition, base_offset, len(messages)))

    def discarded(self, topic, messages, reason):
        self.events.append(("discarded", topic, reason, len(messages)))

    def possible_duplicates(self, topic, messages):
        self.events.append(("dup", topic, len(messages)))


class Hooks(NoHooks):
    """The dispatcher's hooks, recording the brokers woken, the pauses and the metadata fetches asked for;
    ``fetch_at_once``: a fetch asked for begins at once."""

    def __init__(self, begun: int = 0, *, fetch_at_once: bool = False) -> None:
        self.woken: list[int] = []
        self.pauses: list[str] = []
        self.answered: list[bool] = []  # per pause: a broker's answer asked for it
        self.asked: list[str] = []
        self.begun = begun
        self.fetch_at_once = fetch_at_once

    def wake_broker(self, broker: int) -> None:
        self.woken.append(broker)

    def pause(self, cause: str, answered: bool) -> None:
        self.pauses.append(cause)
        self.answered.append(answered)

    def unknown_topic(self, topic: str) -> None:
        self.asked.append(topic)
        self.begun += self.fetch_at_once

    def fetches_begun(self) -> int:
        return self.begun


def make(leaders=None, hooks=None, **config):
    hooks = hooks or Hooks()
    woken, pauses = hooks.woken, hooks.pauses
    d = Dispatcher(ProducerConfig(**config), Counters(), sink := Sink(), hooks=hooks)
    d.apply_view(view(leaders or {"t": [1, 2]}), 0)
    return d, sink, woken, pauses


def check(d: Dispatcher) -> None:
    assert d.ledger.accepted == d.ledger.delivered + d.ledger.discarded + d.ledger.held_messages
    assert d.ledger.held_messages == sum(pq.queued + pq.in_flight + pq.staged for pq in d.all_queues()) + sum(
        len(ms) for ms, _, _ in d.unknown.values()
    )


def submit(d: Dispatcher, n: int, partition: int = 0) -> list[Message]:
    messages = [Message(None, b"v%d" % i, 0, partition_key=partition, pinned=True) for i in range(n)]
    d.ledger.admit(messages)
    d.route("t", messages)
    check(d)
    return messages


def send_request(d: Dispatcher, broker: int):
    candidates, _ = d.candidates(broker, 0.0)
    parts, _ = assemble(
        candidates, data_limit=10**6, message_max_bytes=10**6, policy=lambda t, m: NO_COMPRESSION, magic=2
    )
    RequestOutcomes(d).started(broker, parts, expect_ack=True)
    check(d)
    return parts


def response(parts, code: int, base: int = 0):
    return NS(
        responses=[
            NS(name=p.queue.topic, partition_responses=[NS(index=p.queue.partition, error_code=code, base_offset=base)])
            for p in parts
        ]
    )


def test_ok_delivers_with_consecutive_offsets() -> None:
    d, sink, woken, _ = make()
    messages = submit(d, 3)
    assert woken == [1]
    parts = send_request(d, 1)
    assert parts[0].queue.busy and d.candidates(1, 0.0) == ([], None)  # one in-flight batch per partition
    RequestOutcomes(d).on_response(1, parts, response(parts, 0, base=40), legacy=False)
    check(d)
    assert [(m.partition, m.offset) for m in messages] == [(0, 40), (0, 41), (0, 42)]
    assert sink.events == [("delivered", "t", 0, 40, 3)] and d.ledger.held_messages == 0


@pytest.mark.parametrize(("code", "legacy"), [(2, True), (7, False)])
def test_resend_requeues_in_front_and_counts_an_attempt(code: int, legacy: bool) -> None:
    d, _, _, pauses = make()
    first = submit(d, 2)
    parts = send_request(d, 1)
    later = submit(d, 1)
    RequestOutcomes(d).on_response(1, parts, response(parts, code), legacy=legacy)
    check(d)
    assert not pauses and all(m.attempts == 1 for m in first) and later[0].attempts == 0
    queue = d.queue("t", 0)
    assert [m for b, _, _ in queue.ready for m in b] == first + later
    assert (queue.not_before > 0) is (not legacy)  # the modern path backs off before resending


@pytest.mark.parametrize("code", [-1, 10, 4])
def test_discard_codes(code: int) -> None:
    d, sink, _, _ = make()
    messages = submit(d, 2)
    parts = send_request(d, 1)
    RequestOutcomes(d).on_response(1, parts, response(parts, code), legacy=True)
    check(d)
    assert all(m.error is not None and m.error.reason == DiscardReason.KAFKA_ERROR_ACK for m in messages)
    assert sink.events == [("discarded", "t", DiscardReason.KAFKA_ERROR_ACK, 2)]


def test_pause_code_requests_a_pause_and_keeps_messages() -> None:
    d, _, _, pauses = make()
    messages = submit(d, 2)
    parts = send_request(d, 1)
    RequestOutcomes(d).on_response(1, parts, response(parts, 6), legacy=True)
    check(d)
    assert d.paused and pauses and all(m.attempts == 1 for m in messages)
    assert d.queue("t", 0).ready_count == 2


def test_attempt_limit() -> None:
    d, sink, _, _ = make(max_failed_delivery_attempts=2)
    (message,) = submit(d, 1)
    for _ in range(3):
        parts = send_request(d, 1)
        RequestOutcomes(d).on_response(1, parts, response(parts, 2), legacy=True)
        check(d)
    assert message.attempts == 3 and message.error.reason == DiscardReason.DELIVERY_ATTEMPT_LIMIT
    assert sink.events[-1] == ("discarded", "t", DiscardReason.DELIVERY_ATTEMPT_LIMIT, 1)


@pytest.mark.parametrize("written", [True, False])
def test_transport_failure_requeues_possible_duplicates_and_pauses(written: bool) -> None:
    d, sink, _, pauses = make()
    messages = submit(d, 2)
    parts = send_request(d, 1)
    RequestOutcomes(d).on_failure(1, parts, Failure.BROKER_CLOSE, written=written)
    check(d)
    assert pauses and all(m.possible_duplicate is written and m.attempts == 0 for m in messages)
    assert (("dup", "t", 2) in sink.events) is written


def test_short_and_unexpected_responses_are_protocol_failures() -> None:
    d, _, _, pauses = make()
    submit(d, 1, partition=0)
    parts = send_request(d, 1)
    wrong = NS(responses=[NS(name="t", partition_responses=[NS(index=1, error_code=0, base_offset=0)])])
    RequestOutcomes(d).on_response(1, parts, wrong, legacy=False)
    check(d)
    assert pauses and d.counters.get("ProduceResponseShort") == 1
    assert d.counters.get("ProduceResponseUnexpectedPartition") == 1


def test_reroute_on_a_new_view() -> None:
    d, _sink, _, _ = make({"t": [1, 2, 1], "gone": [1]})
    keyless = [Message(None, b"a%d" % i, 0) for i in range(3)]
    keyed = [Message(None, b"k", 0, partition_key=0)]
    pinned = [Message(None, b"p", 0, partition_key=0, pinned=True)]
    doomed = [Message(None, b"g", 0)]
    for topic, ms in (("t", keyless), ("t", keyed), ("t", pinned), ("gone", doomed)):
        d.ledger.admit(ms)
        d.route(topic, ms)
    check(d)
    keyless_partition = next(
        pq.partition for pq in d.all_queues() if keyless[0] in [m for b, _, _ in pq.ready for m in b]
    )
    new_leaders = [1, 2, 1]
    new_leaders[0] = None  # partition 0 loses its leader
    if keyless_partition != 0:
        new_leaders[keyless_partition] = 3  # a leader change: messages stay, now for broker 3
    d.apply_view(view({"t": new_leaders}), 1)
    check(d)
    assert doomed[0].error.reason == DiscardReason.BAD_TOPIC
    assert sorted(d.queues) == ["t"]  # the vanished topic's queues are gone with it
    assert pinned[0].error.reason == DiscardReason.NO_AVAILABLE_PARTITIONS
    where = {m: pq.partition for pq in d.all_queues() for b, _, _ in pq.ready for m in b}
    assert where[keyed[0]] == 1  # PartitionKey: next available partition
    assert len({where[m] for m in keyless}) == 1 and where[keyless[0]] != 0


def test_unknown_topics_wait_for_a_fetch_that_began_after_them() -> None:
    d, _sink, _, _ = make(hooks=(hooks := Hooks(begun=1)))
    d.clock = lambda: 100.0  # type: ignore[assignment]  # a frozen clock: every time reading is equal
    asked = hooks.asked
    (m,) = [Message(None, b"x", 0)]
    d.ledger.admit([m])
    d.route("new", [m])
    check(d)
    assert asked == ["new"]
    d.apply_view(view({"t": [1]}), 1)  # fetch 1 began before the message arrived: keep waiting, ask for another
    assert m.error is None and asked == ["new", "new"]
    hooks.begun = 2
    d.apply_view(view({"t": [1], "new": [2]}), 2)
    check(d)
    assert d.queue("new", 0).ready_count == 1 and not d.unknown
    (m2,) = [Message(None, b"y", 0)]
    d.ledger.admit([m2])
    d.route("other", [m2])
    hooks.begun = 3
    d.apply_view(view({"t": [1]}), 3)
    check(d)
    assert m2.error.reason == DiscardReason.BAD_TOPIC


def test_a_fetch_begun_at_the_same_clock_reading_as_the_arrival_settles_an_unknown_topic() -> None:
    """With a millisecond loop clock a message and the metadata fetch it triggers often share one reading. The fetch
    began after the message was held, so its answer settles the topic at once (not at the periodic refresh, 15
    minutes later)."""
    d, _sink, _, _ = make(hooks=(hooks := Hooks(fetch_at_once=True)))
    d.clock = lambda: 100.0  # type: ignore[assignment]
    m = Message(None, b"x", 0)
    d.ledger.admit([m])
    d.route("missing", [m])
    assert hooks.begun == 1 and m.error is None
    d.apply_view(view({"t": [1]}), 1)
    check(d)
    assert m.error is not None and m.error.reason == DiscardReason.BAD_TOPIC
    assert not d.unknown


def test_acks_zero_delivers_on_write() -> None:
    d, _sink, _, _ = make()
    messages = submit(d, 2)
    candidates, _ = d.candidates(1, 0.0)
    parts, _ = assemble(candidates, data_limit=10, message_max_bytes=10**6, policy=lambda t, m: NO_COMPRESSION, magic=2)
    RequestOutcomes(d).started(1, parts, expect_ack=False)
    RequestOutcomes(d).on_written_no_ack(1, parts)
    check(d)
    assert [(m.partition, m.offset) for m in messages] == [(0, -1), (0, -1)]


class SendingSink(Sink):
    def sent(self, topic, partition, messages):
        self.events.append(("sent", topic, partition, [m.value for m in messages]))


@pytest.mark.parametrize("acks", [-1, 0])
def test_the_sent_hook_hears_each_written_request_before_its_outcome(acks: int) -> None:
    d = Dispatcher(ProducerConfig(acks=acks), Counters(), sink := SendingSink())
    d.apply_view(view({"t": [1, 2]}), 0)
    submit(d, 2)
    parts = send_request(d, 1) if acks else None
    if acks:
        RequestOutcomes(d).on_failure(1, parts, Failure.BROKER_CLOSE, written=True)  # resent later: heard again
        RequestOutcomes(d).on_response(1, send_request(d, 1), response(parts, 0), legacy=False)
    else:
        candidates, _ = d.candidates(1, 0.0)
        parts, _ = assemble(
            candidates, data_limit=10, message_max_bytes=10**6, policy=lambda t, m: NO_COMPRESSION, magic=2
        )
        RequestOutcomes(d).started(1, parts, expect_ack=False)
        RequestOutcomes(d).on_written_no_ack(1, parts)
    check(d)
    kinds = [e[0] for e in sink.events]
    assert kinds == (["sent", "dup", "sent", "delivered"] if acks else ["sent", "delivered"])
    assert sink.events[0] == ("sent", "t", 0, [b"v0", b"v1"])


def test_a_sink_without_the_sent_hook_or_with_the_protocols_no_op_is_not_called() -> None:
    class Plain(OutcomeSink):  # inherits the protocol's no-op ``sent``
        def delivered(self, topic, partition, base_offset, messages): ...
        def discarded(self, topic, messages, reason): ...
        def possible_duplicates(self, topic, messages): ...

    assert RequestOutcomes(Dispatcher(ProducerConfig(), Counters(), Sink())).on_sent is None
    assert RequestOutcomes(Dispatcher(ProducerConfig(), Counters(), Plain())).on_sent is None
    assert RequestOutcomes(Dispatcher(ProducerConfig(), Counters(), None)).on_sent is None
    sink = SendingSink()
    assert RequestOutcomes(Dispatcher(ProducerConfig(), Counters(), sink)).on_sent == sink.sent


# ---------------------------------------------------------------- lone messages (topics the daemon does not batch)


kinds = st.lists(st.sampled_from(["any", "key", "pin"]) | st.integers(0, 7), min_size=1, max_size=60)


@settings(max_examples=200)
@given(kinds, st.integers(0, 2**32 - 1))
def test_lone_messages_go_where_the_partitioning_rules_say_in_order(sequence, seed) -> None:
    leaders = {"t": [1, None, 2, 1, 3, None]}
    d = Dispatcher(ProducerConfig(), Counters(), None, cycle=AnyPartitionCycle(random.Random(seed)))
    d.apply_view(view(leaders), 0)
    info = d.view.topic("t")
    model = AnyPartitionCycle(random.Random(seed))
    expected: dict[int, list[Message]] = {}
    lost: list[Message] = []
    for i, kind in enumerate(sequence):
        if kind == "any":
            m = Message(None, b"%d" % i, 0)
            p = model.next(info)
        elif kind == "key":
            m = Message(None, b"%d" % i, 0, partition_key=i * 2654435761)
            p = partition_for_key(m.partition_key, info)
        else:
            partition = 3 if kind == "pin" else kind
            m = Message(None, b"%d" % i, 0, partition_key=partition, pinned=True)
            p = explicit_partition(partition, info)
        (lost if p is None else expected.setdefault(p, [])).append(m)
        d.ledger.admit([m])
        d.route("t", [m])
        check(d)
    got = {pq.partition: [m for batch, _, _ in pq.ready for m in batch] for pq in d.all_queues() if pq.ready_count}
    assert got == expected
    assert all(m.error.reason == DiscardReason.NO_AVAILABLE_PARTITIONS for m in lost)
    assert d.ledger.held_bytes == sum(m.size for ms in expected.values() for m in ms)


def test_lone_messages_join_the_last_ready_batch_and_wake_the_broker_once() -> None:
    d, _sink, woken, _ = make({"t": [1]})
    first = submit(d, 3)  # a batch of three
    lone = [Message(None, b"x%d" % i, 0) for i in range(4)]
    for m in lone:
        d.ledger.admit([m])
        d.route("t", [m])
    check(d)
    pq = d.queue("t", 0)
    assert len(pq.ready) == 1 and pq.ready[0] == ([*first, *lone], sum(m.size for m in first + lone), 0.0)
    assert woken == [1]  # the partition was already marked ready for broker 1: its sender will look anyway
    messages, size, _ = pq.take(10**6, True)
    assert messages == [*first, *lone] and size == sum(m.size for m in messages)
    RequestOutcomes(d).started(1, [Part(pq, messages, size)], expect_ack=True)
    later = Message(None, b"later", 0)
    d.ledger.admit([later])
    d.route("t", [later])
    assert woken == [1, 1]  # not marked any more: woken again
    assert list(pq.ready) == [([later], 5, 0.0)]


@pytest.mark.parametrize("batch", [1, 100])
def test_a_queued_message_costs_one_gc_tracked_object(batch: int) -> None:
    """The garbage collector walks every container held: a queued message adds only itself (no list or tuple per
    lone message; one list and one tuple per batch)."""
    d, _sink, _, _ = make({"t": [1, 2]})
    messages = [Message(None, b"v", 0) for _ in range(2000)]
    groups = [messages[i : i + batch] for i in range(0, len(messages), batch)]
    for group in groups[:2]:  # the queues exist from here on
        d.ledger.admit(group)
        d.route("t", group)
    gc.collect()
    before = len(gc.get_objects())
    for group in groups[2:]:
        d.ledger.admit(group)
        d.route("t", group)
    del group
    gc.collect()
    assert d.ledger.held_messages == 2000
    per_batch = 2 if batch > 1 else 0
    assert len(gc.get_objects()) - before <= 2 + per_batch * (len(groups) - 2)
