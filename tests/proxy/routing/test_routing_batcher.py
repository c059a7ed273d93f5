"""The batcher against Bruce's batcher checklist (docs/bruce-compatibility.md#test-checklist): time, count, bytes,
combined batches (exceed split, oversize alone, age flush), two empty messages with bytes=2, per-topic expiry order,
combined include/exclude — plus age from the daemon's receive time, deadlines, flushing, bounds, and a property test.

Times are whole seconds (limits are set in seconds) so every boundary is exact in floating point."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bruce.proxy.config.model import Config, TopicAction, TopicBatching
from bruce.proxy.routing.batcher import Batcher

from .helpers import Submitted, config, limits, msg

PER_TOPIC = TopicAction.PER_TOPIC
COMBINED = TopicAction.COMBINED_TOPICS


def per_topic(time_s: int | None = None, messages: int | None = None, nbytes: int | None = None):
    """A batcher where every topic has its own batches with these limits."""
    cfg = config(named={"c": limits(time_s, messages, nbytes)}, default=TopicBatching(PER_TOPIC, "c"))
    out = Submitted()
    return Batcher(cfg.batching_for, out), out


def combined(time_s: int | None = None, messages: int | None = None, nbytes: int | None = None):
    """A batcher where every topic shares the combined batch with these limits."""
    cfg = config(named={"c": limits(time_s, messages, nbytes)}, combined="c", default=TopicBatching(COMBINED))
    out = Submitted()
    return Batcher(cfg.batching_for, out), out


def add(batcher: Batcher, topic: str, value: str, now: float, received: float | None = None) -> None:
    batcher.add(msg(topic, value, now if received is None else received), now)


# ---------------------------------------------------------------- single topic: time, count, bytes


def test_time_limit_completes_at_oldest_receive_time_plus_time() -> None:
    b, out = per_topic(time_s=100)
    add(b, "t", "m1", 0)
    add(b, "t", "m2", 5)
    assert b.next_deadline() == 100.0 and out.take() == []
    add(b, "t", "m3", 99)
    assert out.take() == [] and b.next_deadline() == 100.0
    b.expire(99.999)
    assert out.take() == []
    b.expire(100)
    assert out.take() == [("t", ["m1", "m2", "m3"])]
    assert b.next_deadline() is None and b.held == 0


def test_a_message_arriving_at_the_deadline_completes_the_batch_with_it() -> None:
    b, out = per_topic(time_s=100)
    add(b, "t", "m1", 0)
    add(b, "t", "m2", 100)
    assert out.take() == [("t", ["m1", "m2"])]
    assert b.next_deadline() is None


def test_count_limit_3() -> None:
    b, out = per_topic(messages=3)
    for i in range(1, 8):
        add(b, "t", f"m{i}", i)
    assert out.take() == [("t", ["m1", "m2", "m3"]), ("t", ["m4", "m5", "m6"])]
    assert b.next_deadline() is None  # no time limit: nothing to wake up for
    assert b.batching_counts() == {"t": 1}
    b.flush_all()
    assert out.take() == [("t", ["m7"])]


def test_byte_limit_reached_exactly() -> None:
    b, out = per_topic(nbytes=3 * 7)
    for i in range(4):
        add(b, "t", "wabbit" + str(i), i)  # 7 bytes each
    assert out.take() == [("t", ["wabbit0", "wabbit1", "wabbit2"])]
    assert b.batching_counts() == {"t": 1}


def test_two_empty_messages_with_bytes_2_complete_a_batch() -> None:
    b, out = per_topic(nbytes=2)
    add(b, "t", "", 0)
    assert out.take() == []  # an empty message counts 1 byte
    add(b, "t", "", 1)
    assert out.take() == [("t", ["", ""])]


def test_bruce_single_topic_10s_3_messages_8_bytes() -> None:
    """Bruce's TSingleTopicBatcher Test5 sequence, with daemon receive times."""
    b, out = per_topic(time_s=10, messages=3, nbytes=8)
    add(b, "t", "wabbits", 0)
    add(b, "t", "x", 0)
    assert out.take() == [("t", ["wabbits", "x"])]  # 8 bytes: complete
    add(b, "t", "wabbits", 0)
    add(b, "t", "xx", 0)
    assert out.take() == [("t", ["wabbits"])]  # 9 would exceed: the batch ships, "xx" starts the next
    add(b, "t", "y", 0)
    assert out.take() == []
    add(b, "t", "wabbits", 10, received=0)  # would exceed, and is itself past its time: alone, after the batch
    assert out.take() == [("t", ["xx", "y"]), ("t", ["wabbits"])]
    add(b, "t", "wabbits", 20)
    add(b, "t", "12345678", 20)  # ≥ the byte limit: alone, after the current batch
    assert out.take() == [("t", ["wabbits"]), ("t", ["12345678"])]
    add(b, "t", "12345678", 20)
    assert out.take() == [("t", ["12345678"])] and b.held == 0


def test_exceeding_with_a_count_limit_of_one_ships_the_message_alone() -> None:
    b, out = per_topic(messages=1, nbytes=4)
    add(b, "t", "abc", 0)
    assert out.take() == [("t", ["abc"])]
    add(b, "t", "ab", 0)
    assert out.take() == [("t", ["ab"])]


# ---------------------------------------------------------------- combined batches


def test_combined_10s_3_messages_8_bytes_exceed_split_oversize_alone_age_flush() -> None:
    """Bruce's TCombinedTopicsBatcher Test3 sequence (10 ms/3/8 B there, 10 s here)."""
    b, out = combined(time_s=10, messages=3, nbytes=8)
    add(b, "bugs", "wabbits", 0)
    add(b, "elmer", "x", 0)
    assert out.take() == [("bugs", ["wabbits"]), ("elmer", ["x"])]  # 8 bytes, split per topic
    add(b, "bugs", "wabbits", 1)
    add(b, "bugs", "xx", 1)
    assert out.take() == [("bugs", ["wabbits"])]  # exceed split
    add(b, "elmer", "y", 2)
    assert out.take() == []
    add(b, "bugs", "wabbits", 11, received=1)  # exceeds and is already 10 s old: alone after the batch (age)
    assert out.take() == [("bugs", ["xx"]), ("elmer", ["y"]), ("bugs", ["wabbits"])]
    add(b, "bugs", "wabbits", 12)
    add(b, "elmer", "12345678", 12)  # oversize: alone, after the current batch
    assert out.take() == [("bugs", ["wabbits"]), ("elmer", ["12345678"])]
    add(b, "elmer", "12345678", 12)
    assert out.take() == [("elmer", ["12345678"])] and b.held == 0


def test_combined_exceed_with_a_fresh_message_starts_the_next_batch() -> None:
    b, out = combined(time_s=10, messages=3, nbytes=8)
    add(b, "bugs", "xx", 0)
    add(b, "elmer", "y", 0)
    add(b, "bugs", "wabbits", 10)  # fresh: the old batch ships (exceed), this one starts a batch
    assert out.take() == [("bugs", ["xx"]), ("elmer", ["y"])]
    assert b.batching_counts() == {"bugs": 1} and b.next_deadline() == 20.0


def test_combined_20s_3_messages_25_bytes() -> None:
    """Bruce's TCombinedTopicsBatcher Test2 sequence, with daemon receive times."""
    b, out = combined(time_s=20, messages=3, nbytes=25)
    add(b, "t1", "t1 msg 1", 5)
    assert b.next_deadline() == 25.0
    add(b, "t1", "t1 msg 2", 7)
    assert b.next_deadline() == 25.0
    add(b, "t2", "t2 msg 1", 8)  # 3 messages: complete, each topic's part separately
    assert out.take() == [("t1", ["t1 msg 1", "t1 msg 2"]), ("t2", ["t2 msg 1"])]
    assert b.next_deadline() is None
    add(b, "t1", "123456789012345678901234", 29)
    assert b.next_deadline() == 49.0
    add(b, "t1", "x", 29)  # 25 bytes
    assert out.take() == [("t1", ["123456789012345678901234", "x"])]
    add(b, "t1", "t1 msg 3", 45)
    add(b, "t1", "t1 msg 4", 65)  # arrives at the deadline: completes the batch, included
    assert out.take() == [("t1", ["t1 msg 3", "t1 msg 4"])]
    add(b, "t1", "t1 msg 5", 70)
    add(b, "t2", "t2 msg 2", 75)
    assert b.batching_counts() == {"t1": 1, "t2": 1}
    b.flush_all()
    assert out.take() == [("t1", ["t1 msg 5"]), ("t2", ["t2 msg 2"])]
    assert b.next_deadline() is None and b.held == 0


def test_combined_include_and_exclude() -> None:
    """Default combined with one topic excluded (its own batches); default per-topic with one topic included."""
    named = {"shared": limits(messages=3), "own": limits(messages=2)}
    excl = config(
        named=named,
        combined="shared",
        default=TopicBatching(COMBINED),
        topics={"solo": TopicBatching(PER_TOPIC, "own")},
    )
    out = Submitted()
    b = Batcher(excl.batching_for, out)
    for topic, value in [("a", "a1"), ("solo", "s1"), ("b", "b1"), ("solo", "s2"), ("a", "a2")]:
        add(b, topic, value, 0)
    assert out.take() == [("solo", ["s1", "s2"]), ("a", ["a1", "a2"]), ("b", ["b1"])]

    incl = config(
        named=named,
        combined="shared",
        default=TopicBatching(PER_TOPIC, "own"),
        topics={"x": TopicBatching(COMBINED), "y": TopicBatching(COMBINED)},
    )
    b = Batcher(incl.batching_for, out)
    for topic, value in [("x", "x1"), ("p", "p1"), ("y", "y1"), ("p", "p2"), ("x", "x2")]:
        add(b, topic, value, 0)
    assert out.take() == [("p", ["p1", "p2"]), ("x", ["x1", "x2"]), ("y", ["y1"])]


def test_disabled_topics_and_combined_when_combined_batching_is_off_go_unbatched() -> None:
    cfg = config(
        named={"c": limits(messages=5)},
        default=TopicBatching(COMBINED),
        topics={"off": TopicBatching(TopicAction.DISABLE), "own": TopicBatching(PER_TOPIC, "c")},
    )  # combined batching disabled: combined topics are unbatched (Bruce)
    out = Submitted()
    b = Batcher(cfg.batching_for, out)
    add(b, "off", "o1", 0)
    add(b, "any", "a1", 0)
    add(b, "own", "w1", 0)
    add(b, "any", "a2", 0)
    assert out.take() == [("off", ["o1"]), ("any", ["a1"]), ("any", ["a2"])]
    assert b.batching_counts() == {"own": 1}


# ---------------------------------------------------------------- time: expiry order, deadlines, receive time


def test_per_topic_batches_expire_in_deadline_order() -> None:
    """Bruce's TPerTopicBatcher Test2 idea: each topic's own time limit; a batch started later with a shorter limit
    ships first; a message's arrival ships every batch whose time is up, its own first."""
    cfg = config(
        named={"t10": limits(10, 3), "t20": limits(20, 4), "t30": limits(30, 5), "t40": limits(40, 3)},
        default=TopicBatching(PER_TOPIC, "t40"),
        topics={
            "t1": TopicBatching(PER_TOPIC, "t10"),
            "t2": TopicBatching(PER_TOPIC, "t20"),
            "t3": TopicBatching(PER_TOPIC, "t30"),
        },
    )
    out = Submitted()
    b = Batcher(cfg.batching_for, out)
    add(b, "t4", "t4 msg 1", 0)  # expires at 40
    add(b, "t2", "t2 msg 1", 1)  # 21
    add(b, "t1", "t1 msg 1", 5)  # 15
    add(b, "t1", "t1 msg 2", 6)
    add(b, "t3", "t3 msg 1", 7)  # 37
    assert b.next_deadline() == 15.0 and out.take() == []
    b.expire(14)
    assert out.take() == []
    add(b, "t3", "t3 msg 2", 38)  # t3's own batch is due: it ships with this message, then the others in order
    assert out.take() == [("t3", ["t3 msg 1", "t3 msg 2"]), ("t1", ["t1 msg 1", "t1 msg 2"]), ("t2", ["t2 msg 1"])]
    assert b.next_deadline() == 40.0
    add(b, "t1", "t1 msg 3", 39)  # 49
    b.expire(1000)
    assert out.take() == [("t4", ["t4 msg 1"]), ("t1", ["t1 msg 3"])]
    assert b.next_deadline() is None


def test_equal_deadlines_ship_in_the_order_the_batches_started() -> None:
    b, out = per_topic(time_s=10)
    for topic in ["c", "a", "b"]:
        add(b, topic, topic, 3)
    b.expire(13)
    assert [t for t, _ in out.take()] == ["c", "a", "b"]


def test_age_is_measured_from_the_receive_time_not_the_client_timestamp() -> None:
    b, out = per_topic(time_s=10)
    stale = msg("t", "stale", 100.0)
    stale.timestamp = 0  # the client's clock says 1970
    future = msg("u", "future", 100.0)
    future.timestamp = 2**62  # or far in the future
    b.add(stale, 100.0)
    b.add(future, 100.0)
    assert out.take() == []  # a stale client clock does not flush at once
    assert b.next_deadline() == 110.0
    b.expire(110.0)  # a future client clock does not keep a batch forever
    assert out.take() == [("t", ["stale"]), ("u", ["future"])]


def test_an_older_message_moves_the_deadline_earlier() -> None:
    """A message released late (parked while its topic was created) carries its old receive time."""
    b, out = per_topic(time_s=10)
    add(b, "t", "new", 50)
    assert b.next_deadline() == 60.0
    add(b, "t", "old", 51, received=45)
    assert b.next_deadline() == 55.0
    b.expire(55)
    assert out.take() == [("t", ["new", "old"])]
    assert b.next_deadline() is None  # the superseded deadline is gone too


def test_next_deadline_is_the_earliest_of_every_topics_batch() -> None:
    cfg = config(
        named={"slow": limits(100), "fast": limits(10)},
        default=TopicBatching(PER_TOPIC, "slow"),
        topics={"f": TopicBatching(PER_TOPIC, "fast")},
    )
    out = Submitted()
    b = Batcher(cfg.batching_for, out)
    add(b, "s", "1", 0)  # due at 100
    add(b, "s", "2", 1)  # same batch: still 100
    add(b, "t", "3", 2)  # due at 102
    assert b.next_deadline() == 100.0
    add(b, "f", "4", 3)  # due at 13: earlier than every pending one
    assert b.next_deadline() == 13.0
    b.expire(13)
    assert out.take() == [("f", ["4"])] and b.next_deadline() == 100.0


def test_flush_all_ships_everything_ignoring_limits() -> None:
    b, out = combined(time_s=100, messages=100)
    cfg_b, cfg_out = per_topic(time_s=100, messages=100)
    for i in range(5):
        add(b, f"t{i % 2}", f"m{i}", i)
        add(cfg_b, f"t{i % 2}", f"m{i}", i)
    b.flush_all()
    cfg_b.flush_all()
    assert out.take() == [("t0", ["m0", "m2", "m4"]), ("t1", ["m1", "m3"])]
    assert cfg_out.take() == [("t0", ["m0", "m2", "m4"]), ("t1", ["m1", "m3"])]
    assert b.held == cfg_b.held == 0 and b.next_deadline() is None and cfg_b.next_deadline() is None


# ---------------------------------------------------------------- bounds


def test_stale_deadlines_do_not_pile_up() -> None:
    """Batches completed by count leave their deadline entries behind; the heap is rebuilt before they outnumber
    the live ones by much."""
    b, out = per_topic(time_s=1000, messages=2)
    for i in range(20_000):
        add(b, f"t{i % 7}", "v", i / 1000)
        assert len(b._heap) <= 2 * 7 + 64  # the heap is internal: its bound is the promise under test
    per_topic_counts = [len(range(t, 20_000, 7)) for t in range(7)]
    assert len(out.batches) == sum(n // 2 for n in per_topic_counts)


def test_idle_topics_are_forgotten_beyond_max_topics() -> None:
    cfg = config(named={"c": limits(messages=2)}, default=TopicBatching(PER_TOPIC, "c"))
    out = Submitted()
    b = Batcher(cfg.batching_for, out, max_topics=10)
    for i in range(100):
        add(b, f"t{i}", "a", i)
        add(b, f"t{i}", "b", i)  # complete: the topic's batch is empty again
    add(b, "open", "x", 100)
    assert len(b._by_topic) <= 10  # internal: the bound under test
    assert len(out.batches) == 100 and b.batching_counts() == {"open": 1}


# ---------------------------------------------------------------- properties

_steps = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c", "solo", "off"]),
        st.integers(0, 12),  # value size
        st.integers(0, 4),  # seconds to advance
        st.booleans(),  # call expire before adding
    ),
    max_size=80,
)


def _mixed_config(shared: tuple) -> Config:
    """Combined batching under ``shared`` limits (at least one set), a per-topic topic "solo" and a disabled "off"."""
    if shared == (None, None, None):
        shared = (5, None, None)
    return config(
        named={"shared": limits(*shared), "own": limits(4, 3, 10)},
        combined="shared",
        default=TopicBatching(COMBINED),
        topics={"solo": TopicBatching(PER_TOPIC, "own"), "off": TopicBatching(TopicAction.DISABLE)},
    )


@settings(max_examples=150, deadline=None)
@given(
    steps=_steps,
    shared=st.tuples(st.sampled_from([None, 3, 7]), st.sampled_from([None, 2, 4]), st.sampled_from([None, 5, 16])),
)
def test_every_message_ships_once_in_order_within_the_limits(steps: list, shared: tuple) -> None:
    cfg = _mixed_config(shared)
    out = Submitted()
    b = Batcher(cfg.batching_for, out)
    now = 0.0
    added = []
    for topic, size, advance, expire_first in steps:
        now += advance
        if expire_first:
            b.expire(now)
            deadline = b.next_deadline()
            assert deadline is None or deadline > now
        m = msg(topic, b"v" * size, now)
        added.append(m)
        b.add(m, now)
        assert b.held == sum(b.batching_counts().values())
    b.flush_all()
    shipped = [m for _, ms in out.batches for m in ms]
    assert sorted(map(id, shipped)) == sorted(map(id, added))  # each message exactly once
    for topic in {"a", "b", "c", "solo", "off"}:
        assert [m for m in shipped if m.topic == topic] == [m for m in added if m.topic == topic]  # order kept
    for topic, ms in out.batches:
        policy = cfg.batching_for(topic)
        if policy.limits is None:
            assert len(ms) == 1
            continue
        if policy.limits.messages is not None:
            assert len(ms) <= policy.limits.messages
        if policy.limits.bytes is not None and len(ms) > 1:
            assert sum(max(1, m.size) for m in ms) <= policy.limits.bytes
    assert b.held == 0 and b.next_deadline() is None


_runs = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "solo", "off"]),
        st.lists(st.integers(0, 6), min_size=1, max_size=6),  # the run's value sizes
        st.integers(0, 3),  # seconds to advance
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(
    runs=_runs,
    shared=st.tuples(
        st.sampled_from([None, 1, 3, 7]), st.sampled_from([None, 1, 2, 5]), st.sampled_from([None, 5, 16])
    ),
)
def test_a_run_added_in_one_step_ships_as_when_added_one_by_one(runs: list, shared: tuple) -> None:
    """The router's runs (one topic, one receive time): try_add_many then expire, or one by one when it declines,
    give the same batches in the same order as add() of each, and it declines only when a message would complete a
    batch."""
    cfg = _mixed_config(shared)
    one_out, many_out = Submitted(), Submitted()
    one, many = Batcher(cfg.batching_for, one_out), Batcher(cfg.batching_for, many_out)
    now = 0.0
    steps = 0
    for topic, sizes, advance in runs:
        now += advance
        run = [msg(topic, b"v" * size, now) for size in sizes]
        shipped_before = len(one_out.batches)
        for m in run:
            one.add(m, now)
        completed = any(  # a batch of this topic completed inside the run (expiry of others aside)
            t == topic and any(m in run for m in ms) for t, ms in one_out.batches[shipped_before:]
        )
        if many.try_add_many(run, sum(max(1, s) for s in sizes), now):
            assert not completed
            many.expire(now)
            steps += 1
        else:
            for m in run:
                many.add(m, now)
        assert [(t, [id(m) for m in ms]) for t, ms in one_out.batches] == [
            (t, [id(m) for m in ms]) for t, ms in many_out.batches
        ]
        assert one.batching_counts() == many.batching_counts() and one.next_deadline() == many.next_deadline()
    one.flush_all()
    many.flush_all()
    assert [(t, [id(m) for m in ms]) for t, ms in one_out.batches] == [
        (t, [id(m) for m in ms]) for t, ms in many_out.batches
    ]
