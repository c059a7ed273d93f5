"""The message timeout without sockets (queue times, oldest-first expiry from the queues and the unknown-topic hold,
the accounting after each step) and the broker trouble log (one line per episode, summaries, recovery)."""

from __future__ import annotations

import logging

import pytest

from bruce.producer.acks import Failure
from bruce.producer.config import ProducerConfig
from bruce.producer.dispatch.responses import RequestOutcomes
from bruce.producer.errors import ConfigError
from bruce.producer.message import Message
from bruce.producer.queues.partition_queue import PartitionQueue
from bruce.producer.reasons import DiscardReason
from bruce.producer.transport.trouble import BrokerTrouble

from .test_producer_dispatcher import Hooks, check, make, send_request, submit


def msgs(n: int, tag: str) -> list[Message]:
    return [Message(None, f"{tag}{i}".encode(), 0) for i in range(n)]


def test_pop_expired_takes_whole_front_batches_up_to_the_cutoff_then_the_open_batch() -> None:
    pq = PartitionQueue("t", 0, 1)
    old, mid, new = msgs(2, "o"), msgs(2, "m"), msgs(1, "n")
    pq.add_ready(old, 4, since=1.0)
    pq.add_ready(mid, 4, since=2.0)
    pq.open, pq.open_since = new, 3.0
    assert pq.pop_expired(0.5) == [] and pq.queued == 5
    assert pq.pop_expired(1.0) == old and pq.ready_count == 2
    assert pq.pop_expired(2.5) == mid and pq.ready_count == 0 and pq.open == new  # the open batch is younger
    assert pq.pop_expired(3.0) == new and pq.queued == 0 and pq.open_bytes == 0


def test_a_lone_message_joins_the_last_batch_only_if_that_batch_is_as_young() -> None:
    pq = PartitionQueue("t", 0, 1)
    a, b, c = msgs(3, "x")
    pq.append_ready(a, since=1.0)
    pq.append_ready(b, since=1.0)  # the same tick: joins
    pq.append_ready(c, since=2.0)  # a later tick: a batch of its own, so it does not expire with a and b
    assert [(batch, since) for batch, _, since in pq.ready] == [([a, b], 1.0), ([c], 2.0)]
    assert pq.pop_expired(1.5) == [a, b] and list(pq.ready) == [([c], 2, 2.0)]


def test_take_reports_the_newest_queue_time_and_push_front_keeps_it() -> None:
    pq = PartitionQueue("t", 0, 1)
    first, second = msgs(2, "f"), msgs(2, "s")
    pq.add_ready(first, 4, since=5.0)
    pq.add_ready(second, 4, since=7.0)
    taken, size, since = pq.take(6, True)  # all of the first batch, half of the second
    assert taken == [*first, second[0]] and size == 6 and since == 7.0
    pq.push_front(taken, since)
    assert pq.pop_expired(6.0) == [] and pq.pop_expired(7.0) == [*first, *second]  # never earlier than queued


def test_expire_discards_queued_and_unknown_topic_messages_oldest_first() -> None:
    d, sink, _, _ = make({"t": [1, 2]})
    d.stamp = 1.0
    old = submit(d, 2)
    lost = [Message(None, b"u1", 0)]
    d.ledger.admit(lost)
    d.route("unknown", lost)
    d.stamp = 2.0
    young = submit(d, 2)
    later = [Message(None, b"u2", 0)]
    d.ledger.admit(later)
    d.route("unknown", later)
    d.expire(1.0, "test timeout")
    check(d)
    assert [m.error.reason for m in old + lost] == [DiscardReason.MESSAGE_TIMEOUT] * 3
    assert all(not m.done for m in young + later)
    assert ("discarded", "unknown", DiscardReason.MESSAGE_TIMEOUT, 1) in sink.events
    assert d.unknown["unknown"][0] == later and d.counters.get("MsgDiscard") == 3
    d.expire(2.0, "test timeout")
    check(d)
    assert d.ledger.held_messages == 0 and not d.unknown and all(m.error is not None for m in young + later)


def test_messages_in_a_request_are_not_expired_until_they_come_back() -> None:
    d, _, _, _ = make({"t": [1]})
    d.stamp = 1.0
    sent = submit(d, 3)
    parts = send_request(d, 1)
    d.expire(10.0, "test timeout")
    check(d)
    assert all(not m.done for m in sent)  # in flight: the request's until it is answered or fails
    RequestOutcomes(d).on_failure(1, parts, Failure.BROKER_CLOSE, written=True)
    d.expire(10.0, "test timeout")
    check(d)
    assert [m.error.reason for m in sent] == [DiscardReason.MESSAGE_TIMEOUT] * 3 and d.ledger.held_messages == 0


def test_a_pause_says_whether_a_broker_answered() -> None:
    d, _, _, _ = make({"t": [1]}, hooks=(hooks := Hooks()))
    submit(d, 1)
    RequestOutcomes(d).on_failure(1, send_request(d, 1), Failure.BROKER_CLOSE, written=True)
    d.resume()
    RequestOutcomes(d).on_failure(1, send_request(d, 1), Failure.PROTOCOL_ERROR, written=True)
    asked = list(zip(hooks.pauses, hooks.answered, strict=True))
    assert asked == [("SocketBrokerClose on broker 1", False), ("ProtocolError on broker 1", True)]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_broker_trouble_is_logged_once_then_summarised_then_its_recovery(caplog) -> None:
    clock = Clock()
    trouble = BrokerTrouble(clock, interval=30.0)
    with caplog.at_level(logging.WARNING, logger="bruce.producer"):
        trouble.reachable("h:1")  # never in trouble: nothing to say
        trouble.failed("h:1", "connection refused")
        for _ in range(20):
            clock.now += 1
            trouble.failed("h:1", "connection refused")  # counted, not logged
        trouble.failed("h:2", "Name or service not known")
        clock.now += 10
        trouble.failed("h:1", "timed out")  # 31 s after the first line: the summary
        clock.now += 1
        trouble.failed("h:1", "timed out")
        assert trouble.unreachable() == ["h:1", "h:2"]
        clock.now += 0.5
        trouble.reachable("h:1")
        trouble.reachable("h:1")
    assert [r.getMessage() for r in caplog.records] == [
        "broker h:1 unreachable: connection refused",
        "broker h:2 unreachable: Name or service not known",
        "broker h:1 unreachable for 30 s: 22 failed attempts, last: timed out",
        "broker h:1 reachable again after 31.5 s (23 failed attempts)",
    ]
    assert all(r.levelno == logging.WARNING for r in caplog.records) and trouble.unreachable() == ["h:2"]


def test_message_timeout_setting_uses_librdkafkas_name_and_defaults() -> None:
    assert ProducerConfig().message_timeout_ms == 300_000 and ProducerConfig().reconnect_backoff_max_ms == 10_000
    assert ProducerConfig.from_mapping({"message.timeout.ms": 0}).message_timeout_ms == 0  # no limit
    with pytest.raises(ConfigError, match="message_timeout_ms"):
        ProducerConfig(message_timeout_ms=-1)


def test_the_last_error_of_each_broker_is_kept_until_it_answers() -> None:
    """For the status page before any metadata: what the log said about each broker, TLS/SASL refusals included
    (those are logged by the producer, not here)."""
    trouble = BrokerTrouble(clock=lambda: 0.0)
    trouble.failed("a:9092", "cannot connect: refused")
    trouble.refused("b:9092", "authentication failed: SASL credentials refused")
    assert trouble.last_error("a:9092")[0] == "cannot connect: refused"  # type: ignore[index]
    assert trouble.last_error("b:9092")[0].startswith("authentication failed")  # type: ignore[index]
    assert trouble.unreachable() == ["a:9092"]  # a refusal is not a reachability episode
    trouble.reachable("a:9092")
    trouble.reachable("b:9092")
    assert trouble.last_error("a:9092") is None and trouble.last_error("b:9092") is None
