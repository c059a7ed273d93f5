"""The router's checks in Bruce's order (docs/bruce-compatibility.md#routing-checks) against a cluster view built from a
Metadata answer: bad topic, too long, no available partitions, rate limit; the LONG_MSG boundary per protocol; waiting
for the first metadata; view changes; counters; the debug log; shutdown."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from bruce.producer.reasons import DiscardReason
from bruce.proxy.config.model import RateLimit
from bruce.proxy.routing.ratelimit import RateLimiter
from bruce.proxy.routing.router import LEGACY_MESSAGE_OVERHEAD, RECORD_BATCH_OVERHEAD, message_overhead

from .helpers import CLUSTER, Rig, config, view

BAD_TOPIC = DiscardReason.BAD_TOPIC
LONG_MSG = DiscardReason.LONG_MSG
NO_PARTITIONS = DiscardReason.NO_AVAILABLE_PARTITIONS
RATE_LIMIT = DiscardReason.RATE_LIMIT


def test_checks_in_bruces_order_first_failure_wins() -> None:
    cfg = config(message_max_bytes=26 + 10, rate_limits={"dead": RateLimit(1000, 0), "good": RateLimit(1000, 1)})
    limiter = RateLimiter.from_limits(cfg.rate_limit_for, cfg.topic_rate_limiting.named_configs.values())
    rig = Rig(cfg=cfg, rate_limiter=limiter)
    rig.send("nope", "x" * 11)  # unknown and too long: bad topic wins
    rig.send("dead", "x" * 11)  # too long and no partition: too long wins
    rig.send("dead", "short")  # no partition (and over its rate limit of 0): no partition wins
    rig.send("good", "first")  # passes: the rate limit allows 1 per second
    rig.send("good", "second")  # over the rate limit
    rig.send("good", "x" * 11)  # too long is checked before the rate limit (and does not count against it)
    assert rig.take_discards() == [
        (BAD_TOPIC, "nope", "x" * 11),
        (LONG_MSG, "dead", "x" * 11),
        (NO_PARTITIONS, "dead", "short"),
        (RATE_LIMIT, "good", "second"),
        (LONG_MSG, "good", "x" * 11),
    ]
    assert rig.out.take() == [("good", ["first"])]
    assert rig.counters.snapshot() == {
        "DiscardBadTopicMsgOnRoute": 1,
        "DiscardLongMsg": 2,
        "DiscardNoAvailablePartition": 1,
        "DiscardDueToRateLimit": 1,
    }


def test_a_discarded_message_does_not_count_against_the_rate_limit() -> None:
    cfg = config(message_max_bytes=100, rate_limits={"good": RateLimit(1000, 1)})
    limiter = RateLimiter.from_limits(cfg.rate_limit_for, cfg.topic_rate_limiting.named_configs.values())
    rig = Rig(cfg=cfg, rate_limiter=limiter)
    rig.send("good", "x" * 100, now=1.0)  # LONG_MSG: stops before the rate limiter
    rig.send("good", "ok", now=1.5)  # so the first window is anchored here, not at 1.0
    rig.send("good", "over", now=2.0)  # same window [1.5, 2.5): over the limit of 1
    rig.send("good", "next", now=2.6)  # the next window
    assert [(r, v) for r, _, v in rig.take_discards()] == [(LONG_MSG, "x" * 100), (RATE_LIMIT, "over")]
    assert rig.out.take() == [("good", ["ok"]), ("good", ["next"])]


def test_topic_with_a_topic_level_metadata_error_is_a_bad_topic() -> None:
    rig = Rig(errors={"half": 29})  # TOPIC_AUTHORIZATION_FAILED: Bruce drops the topic at parse
    rig.send("half", "v")
    rig.send("good", "v")
    assert rig.take_discards() == [(BAD_TOPIC, "half", "v")]
    assert rig.out.take() == [("good", ["v"])]


def test_a_partly_available_topic_routes() -> None:
    rig = Rig()
    rig.send("half", "v")
    assert rig.out.take() == [("half", ["v"])] and rig.take_discards() == []


@pytest.mark.parametrize(
    ("protocol", "overhead"), [("v0", LEGACY_MESSAGE_OVERHEAD), ("auto", RECORD_BATCH_OVERHEAD), ("modern", 80)]
)
def test_too_long_boundary_per_protocol(protocol: str, overhead: int) -> None:
    assert message_overhead(protocol) == overhead
    limit = 1000
    rig = Rig(message_max_bytes=limit, message_overhead=message_overhead(protocol))
    fits = limit - overhead  # key + value + overhead == message_max_bytes: allowed
    rig.send("good", b"v" * (fits - 3), key=b"key")
    rig.send("good", b"v" * (fits - 2), key=b"key")  # one byte more: too long (the key counts)
    rig.send("good", b"v" * (fits + 1))
    assert [(r, len(v)) for r, _, v in rig.take_discards()] == [(LONG_MSG, fits - 2), (LONG_MSG, fits + 1)]
    assert [len(vs[0]) for _, vs in rig.out.take()] == [fits - 3]


def test_bruce_long_message_rule_is_key_plus_value_plus_26() -> None:
    rig = Rig(message_max_bytes=1_000_000)  # the default overhead is Bruce's
    rig.send("good", b"v" * (1_000_000 - 26))
    rig.send("good", b"v" * (1_000_000 - 25))
    assert [(r, len(v)) for r, _, v in rig.take_discards()] == [(LONG_MSG, 1_000_000 - 25)]


def test_messages_wait_for_the_first_metadata_then_route_in_order() -> None:
    rig = Rig(cluster=None)
    for topic, value in [("good", "1"), ("nope", "2"), ("dead", "3"), ("good", "4")]:
        rig.send(topic, value)
    assert rig.out.take() == [] and rig.discards == []
    assert rig.router.held == 4
    rig.router.refresh(2.0)  # still no view: nothing changes
    assert rig.router.held == 4
    rig.state.view = view(CLUSTER)
    rig.router.refresh(3.0)
    assert rig.out.take() == [("good", ["1"]), ("good", ["4"])]
    assert rig.take_discards() == [(BAD_TOPIC, "nope", "2"), (NO_PARTITIONS, "dead", "3")]
    assert rig.router.held == 0


def test_the_next_message_notices_a_new_view() -> None:
    rig = Rig(cluster=None)
    rig.send("good", "early")
    rig.state.view = view(CLUSTER)
    rig.send("good", "late")
    assert rig.out.take() == [("good", ["early"]), ("good", ["late"])]


def test_a_new_view_replaces_what_was_known() -> None:
    rig = Rig()
    rig.send("good", "a")
    rig.send("half", "a")
    rig.state.view = view({"good": [None, None], "new": [3]})  # good lost its partitions, half was deleted
    rig.send("good", "b")
    rig.send("half", "b")
    rig.send("new", "b")
    assert rig.out.take() == [("good", ["a"]), ("half", ["a"]), ("new", ["b"])]
    assert rig.take_discards() == [(NO_PARTITIONS, "good", "b"), (BAD_TOPIC, "half", "b")]


def test_the_debug_log_sees_only_validated_messages() -> None:
    seen: list[tuple[str, bytes]] = []
    debug = NS(active=True, on_receive=lambda topic, key, value, ts: seen.append((topic, value)))
    rig = Rig(debug=debug, message_max_bytes=100)
    rig.send("good", "ok")
    rig.send("nope", "bad")
    rig.send("good", "x" * 200)
    debug.active = False
    rig.send("good", "quiet")
    assert seen == [("good", b"ok")]


def test_shutdown_discards_what_the_router_holds() -> None:
    rig = Rig(cluster=None)
    rig.send("good", "1")
    rig.send("other", "2")
    assert rig.router.discard_held(DiscardReason.SERVER_SHUTDOWN) == 2
    assert [r for r, *_ in rig.take_discards()] == [DiscardReason.SERVER_SHUTDOWN] * 2
    assert rig.router.held == 0


def _mixed_burst(now: float) -> list:
    from .helpers import msg

    values = [("nope", "x" * 11), ("dead", "x" * 11), ("dead", "short"), ("good", "first"), ("good", "second")]
    values += [("good", "x" * 11), ("half", "h"), ("good", "third")]
    return [msg(t, v, now) for t, v in values]


def test_route_many_routes_a_burst_as_route_does_one_by_one() -> None:
    """The intake's burst path gives every message the fate route() gives it, in the same order, with the same
    counters (bad topic, too long, no partition, rate limit, batched)."""
    outcomes = []
    for burst in (False, True):
        cfg = config(message_max_bytes=26 + 10, rate_limits={"good": RateLimit(1000, 2)})
        limiter = RateLimiter.from_limits(cfg.rate_limit_for, cfg.topic_rate_limiting.named_configs.values())
        rig = Rig(cfg=cfg, rate_limiter=limiter)
        messages = _mixed_burst(1.0)
        if burst:
            rig.router.route_many(messages)
        else:
            for m in messages:
                rig.router.route(m)
        outcomes.append((rig.take_discards(), rig.out.take(), rig.counters.snapshot()))
    assert outcomes[0] == outcomes[1]
    assert outcomes[1][1] == [("good", ["first"]), ("good", ["second"]), ("half", ["h"])]


def test_route_many_sees_a_new_view_and_leaves_what_it_never_saw_after_a_failure() -> None:
    rig = Rig(cluster=None)
    rig.state.view = view(CLUSTER)  # the first view arrives: the burst is routed against it
    messages = _mixed_burst(1.0)[3:]  # good, good, good (not too long here), half, good
    calls = []

    def failing_add(m, now):  # type: ignore[no-untyped-def]
        calls.append(m.value)
        if m.value == b"h":
            raise RuntimeError("the batcher failed")

    rig.router._add = failing_add
    with pytest.raises(RuntimeError, match="the batcher failed"):
        rig.router.route_many(messages)
    assert calls == [b"first", b"second", b"x" * 11, b"h"]
    assert [m.value for m in messages] == [b"third"]  # only the one never seen is left for the intake to settle


def _batching_config(**kw):  # type: ignore[no-untyped-def]
    from bruce.proxy.config.model import TopicAction, TopicBatching

    from .helpers import limits

    return config(named={"c": limits(5, 4, 40)}, default=TopicBatching(TopicAction.PER_TOPIC, "c"), **kw)


def test_route_many_batches_a_burst_as_route_does_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from bruce.proxy.routing.batcher import Batcher

    """With batching on, a burst of one topic and receive time that passes as a whole goes to the batcher in one
    step (Batcher.try_add_many) unless it completes a batch; every burst gives the same discards, batches (in
    order) and counters as route() of each message."""
    from .helpers import msg

    bursts = [
        (1.0, [("good", "a"), ("good", "b"), ("good", "c")]),  # one step
        (1.0, [("half", "h1"), ("half", "h2")]),  # one step
        (1.5, [("good", "d"), ("good", "e"), ("good", "f")]),  # d completes the batch of 4: one by one
        (1.5, [("good", "g"), ("good", "x" * 11)]),  # too long: one by one
        (1.5, [("nope", "x"), ("nope", "y")]),  # unknown topic
        (1.5, [("dead", "z")]),  # no partition
        (2.0, [("good", "i"), ("half", "h3"), ("good", "j")]),  # mixed
        (7.0, [("good", "k" * 9), ("good", "l" * 9)]),  # the batch is past its time: one by one
        (12.5, [("half", "h4"), ("half", "h5")]),  # one step, then the batch of "l" (time up at 12) ships
    ]
    outcomes = []
    original = Batcher.try_add_many
    for burst in (False, True):
        rig = Rig(cfg=_batching_config(message_max_bytes=26 + 10))
        steps: list[bool] = []
        monkeypatch.setattr(Batcher, "try_add_many", lambda *a, s=steps: s.append(original(*a)) or s[-1])
        for now, values in bursts:
            messages = [msg(t, v, now) for t, v in values]
            if burst:
                rig.router.route_many(messages)
            else:
                for m in messages:
                    rig.router.route(m)
            outcomes.append(rig.out.take())
        assert steps == ([True, True, False, False, True] if burst else [])  # one step: bursts 1, 2, 9
        rig.router._batcher.flush_all()
        outcomes.append((rig.take_discards(), rig.out.take(), rig.counters.snapshot()))
    half = len(outcomes) // 2
    assert outcomes[:half] == outcomes[half:]
    assert outcomes[2] == [("good", ["a", "b", "c", "d"])]
    assert outcomes[8] == [("good", ["l" * 9])]  # its time was up when the last burst came


def test_route_many_with_a_rate_limit_routes_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from bruce.proxy.routing.batcher import Batcher

    from .helpers import msg

    cfg = _batching_config(rate_limits={"good": RateLimit(1000, 2)})
    limiter = RateLimiter.from_limits(cfg.rate_limit_for, cfg.topic_rate_limiting.named_configs.values())
    rig = Rig(cfg=cfg, rate_limiter=limiter)
    called = []
    original = Batcher.try_add_many
    monkeypatch.setattr(Batcher, "try_add_many", lambda *a: called.append(a) or original(*a))
    rig.router.route_many([msg("good", v, 1.0) for v in "abc"])
    assert called == [] and [(r, v) for r, _, v in rig.take_discards()] == [(RATE_LIMIT, "c")]


def test_route_many_leaves_nothing_when_the_expiry_after_a_whole_burst_fails() -> None:
    """A burst put in its batch in one step is handed on whole: if shipping the batches whose time is up then
    raises, nothing is left for the intake to settle."""
    from .helpers import msg

    rig = Rig(cfg=_batching_config())
    rig.router.route_many([msg("good", "old", 1.0)])  # its batch's time is up at 6.0
    rig.out.batches.clear()

    def failing_submit(topic, messages):  # type: ignore[no-untyped-def]
        raise RuntimeError("the producer failed")

    rig.router._batcher._submit = failing_submit
    messages = [msg("half", "a", 6.0), msg("half", "b", 6.0)]
    with pytest.raises(RuntimeError, match="the producer failed"):
        rig.router.route_many(messages)
    assert messages == []
    assert rig.router._batcher.batching_counts() == {"half": 2}  # in their batch (the old one was taken to ship)
