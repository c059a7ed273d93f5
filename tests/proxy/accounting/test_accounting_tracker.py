"""Discard tracker: Bruce's anomaly tracker tests (basic, long messages, period rollover at 99/100 and 199/200,
multi-period gaps, NoDiscardQuery after interval+1) plus counters, bounds and the log hand-off."""

from __future__ import annotations

import logging

import pytest

from bruce.producer.counters import Counters
from bruce.producer.reasons import DiscardReason as R
from bruce.proxy.accounting.discard_log import format_discard_line
from bruce.proxy.accounting.discards import MAX_RECENT, MAX_VERSIONS, OTHER_TOPIC, DiscardTracker, TopicInterval
from bruce.wire.datagram import build_any_partition
from bruce.wire.errors import UsageError

from .clocks import ManualClock


def make(interval: int = 100, **kw) -> tuple[DiscardTracker, ManualClock, Counters]:
    clock, counters = ManualClock(), Counters()
    kw.setdefault("prefix_size", 1 << 30)
    return DiscardTracker(interval_s=interval, clock=clock, counters=counters, **kw), clock, counters


def test_basic() -> None:
    tracker, clock, _ = make()
    clock.now = 5
    tracker.record(R.KAFKA_ERROR_ACK, "topic_1", b"", b"hubba bubba", 5)
    tracker.record(R.KAFKA_ERROR_ACK, "topic_2", b"", b"hubba bubba", 5)
    tracker.record_possible_duplicate("topic_2", b"", b"hubba bubba", 5)
    clock.now = 10
    tracker.record(R.KAFKA_ERROR_ACK, "topic_2", b"", b"x", 10)
    tracker.record(R.KAFKA_ERROR_ACK, "topic_2", b"", b"x", 10)
    tracker.record_possible_duplicate("topic_2", b"", b"x", 10)
    clock.now = 20
    tracker.record(R.KAFKA_ERROR_ACK, "topic_2", b"", b"x", 20)
    clock.now = 25
    tracker.record(R.NO_MEM, "topic_2", b"", b"x", 25)
    for bad in ("bad", "badder", "bad", "baddest"):
        tracker.record(R.BAD_TOPIC, bad, b"", b"x", 25)
    for msg in (b"bad msg 1", b"bad msg 2", b"bad msg 3", b"bad msg 2"):
        tracker.record_unparsed(R.MALFORMED, msg)

    report = tracker.report()
    assert report.finished is None
    p = report.unfinished
    assert (p.id, p.start_time) == (0, 0)
    assert p.discard_topic == (TopicInterval("topic_1", 5, 5, 1), TopicInterval("topic_2", 5, 25, 5))
    assert p.possible_duplicate_topic == (TopicInterval("topic_2", 5, 10, 2),)
    assert p.recent_malformed == (b"bad msg 2", b"bad msg 3", b"bad msg 1")
    assert p.malformed_msg_count == 4
    assert p.recent_bad_topic == ("baddest", "bad", "badder")
    assert p.bad_topic_msg_count == 4
    assert p.recent_too_long_msg == ()

    clock.now = 100
    report = tracker.report()
    assert report.finished is not None
    f = report.finished
    assert f.id == 0
    assert (
        len(f.discard_topic),
        len(f.possible_duplicate_topic),
        len(f.recent_malformed),
        len(f.recent_bad_topic),
    ) == (
        2,
        1,
        3,
        3,
    )
    p = report.unfinished
    assert (p.id, p.start_time) == (1, 100)
    assert p.discard_topic == p.possible_duplicate_topic == p.recent_malformed == p.recent_bad_topic == ()


def test_long_messages() -> None:
    tracker, clock, _ = make()
    for t, topic, body in [
        (0, "topic_1", b"long msg 1"),
        (20, "topic_1", b"long msg 2"),
        (30, "topic_1", b"long msg 3"),
        (40, "topic_1", b"long msg 2"),
        (40, "topic_2", b"long msg 1"),
    ]:
        clock.now = t
        tracker.record(R.LONG_MSG, topic, b"", body, t)
    p = tracker.report().unfinished
    assert p.recent_too_long_msg == (
        b"topic_2 long msg 1",
        b"topic_1 long msg 2",
        b"topic_1 long msg 3",
        b"topic_1 long msg 1",
    )
    assert p.discard_topic == (TopicInterval("topic_1", 0, 40, 4), TopicInterval("topic_2", 40, 40, 1))


def test_long_prefix_is_cut() -> None:
    tracker, _, _ = make(prefix_size=8)
    tracker.record(R.LONG_MSG, "topic", b"key", b"v" * 100_000, 1)
    tracker.record_unparsed(R.MALFORMED, bytes(range(200)))
    tracker.record_unparsed(R.LONG_MSG, b"x" * 70_000)
    p = tracker.report().unfinished
    assert p.recent_too_long_msg == (b"topic vv",)
    assert p.recent_malformed == (b"x" * 8, bytes(range(8)))  # an oversized datagram is malformed, as in Bruce


def bad_topic_counts(tracker: DiscardTracker) -> tuple[int, int | None, int, int]:
    report = tracker.report()
    finished = report.finished
    return (
        report.unfinished.id,
        report.unfinished.bad_topic_msg_count,
        -1 if finished is None else finished.id,
        -1 if finished is None else finished.bad_topic_msg_count,
    )


def test_rollover_and_gaps() -> None:
    tracker, clock, counters = make()

    def bad(n: int) -> None:
        for _ in range(n):
            tracker.record(R.BAD_TOPIC, "bad", None, None, int(clock.now))

    bad(1)
    assert bad_topic_counts(tracker) == (0, 1, -1, -1)
    clock.now = 99
    assert bad_topic_counts(tracker) == (0, 1, -1, -1)
    clock.now = 100
    assert bad_topic_counts(tracker) == (1, 0, 0, 1)
    clock.now = 150
    bad(2)
    assert bad_topic_counts(tracker) == (1, 2, 0, 1)
    clock.now = 199
    assert bad_topic_counts(tracker) == (1, 2, 0, 1)
    clock.now = 200
    assert bad_topic_counts(tracker) == (2, 0, 1, 2)
    bad(3)
    assert bad_topic_counts(tracker) == (2, 3, 1, 2)
    clock.now = 399  # the event itself rolls period 2 over; period 3 collects the four
    bad(4)
    assert bad_topic_counts(tracker) == (3, 4, 2, 3)
    assert counters.get("DiscardReportDataLost") == 0
    clock.now = 500  # two periods after period 3 began: its data is dropped, both reports are placeholders
    report = tracker.report()
    assert report.finished is not None
    assert (report.finished.id, report.finished.start_time, report.finished.bad_topic_msg_count) == (4, 400, 0)
    assert (report.unfinished.id, report.unfinished.start_time, report.unfinished.bad_topic_msg_count) == (5, 500, 0)
    assert counters.get("DiscardReportDataLost") == 1  # made visible
    clock.now = 1000
    assert bad_topic_counts(tracker)[::2] == (10, 9)
    assert counters.get("DiscardReportDataLost") == 1  # empty periods lose nothing
    clock.now = 1599
    assert bad_topic_counts(tracker)[::2] == (15, 14)
    clock.now = 1600
    assert bad_topic_counts(tracker)[::2] == (16, 15)


@pytest.mark.parametrize(("first_query", "ids"), [(100, (1, 0)), (200, (2, 1))])
def test_first_query_after_one_or_two_periods(first_query: int, ids: tuple[int, int]) -> None:
    tracker, clock, _ = make()
    clock.now = first_query
    report = tracker.report()
    assert report.finished is not None
    assert (report.unfinished.id, report.finished.id) == ids


def test_no_discard_query_watchdog(caplog: pytest.LogCaptureFixture) -> None:
    tracker, clock, counters = make()
    clock.now = 100
    assert not tracker.check_query_rate()
    tracker.report()
    clock.now = 200
    assert not tracker.check_query_rate()
    assert counters.get("NoDiscardQuery") == 0
    clock.now = 201  # interval + 1 without a query
    with caplog.at_level(logging.WARNING):
        assert tracker.check_query_rate()
    assert "no discard query in the last 101 s" in caplog.text
    clock.now = 250
    assert tracker.check_query_rate()
    assert counters.get("NoDiscardQuery") == 2
    tracker.report()
    assert not tracker.check_query_rate()
    assert counters.get("NoDiscardQuery") == 2


def test_every_reason_is_counted_and_lands_where_bruce_puts_it() -> None:
    tracker, _, counters = make()
    topic_reasons = [
        R.NO_MEM,
        R.NO_AVAILABLE_PARTITIONS,
        R.RATE_LIMIT,
        R.TOPIC_AUTOCREATE_FAIL,
        R.TOPIC_CREATE_TIMEOUT,
        R.KAFKA_ERROR_ACK,
        R.DELIVERY_ATTEMPT_LIMIT,
        R.SERVER_SHUTDOWN,
        R.MESSAGE_TIMEOUT,
        R.PRODUCER_CLOSED,
        R.TRANSACTION_ABORTED,
        R.AUTHENTICATION_FAILED,
        R.BUG,
        R.LONG_MSG,
        R.SPOOL_FULL,
        R.SPOOL_CORRUPT,
    ]
    for i, reason in enumerate(topic_reasons):
        tracker.record(reason, "t", b"k", b"v", 1000 + i)
    tracker.record(R.BAD_TOPIC, "no-such-topic", b"k", b"v", 1)
    tracker.record(R.BAD_TOPIC_NAME, "no such topic", b"k", b"v", 2)
    tracker.record(R.RATE_LIMIT, "u", b"", b"", 7)
    tracker.record_unparsed(R.MALFORMED, b"\x00\x01")
    tracker.record_unparsed(R.API_KEY, b"\x00\x02", detail=300)
    tracker.record_unparsed(R.VERSION, b"\x00\x03", detail=-1)
    tracker.record_unparsed(R.VERSION, b"\x00\x03", detail=-1)
    tracker.record_unparsed(R.VERSION, b"\x00\x04", detail=3)
    tracker.record_unparsed(R.LONG_MSG, b"\x00\x05")

    counts = {reason: counters.get("Discard", (("reason", reason.value),)) for reason in R}
    expected = {reason: 1 for reason in topic_reasons}
    expected.update(
        {
            R.RATE_LIMIT: 2,
            R.LONG_MSG: 2,
            R.BAD_TOPIC: 1,
            R.BAD_TOPIC_NAME: 1,
            R.MALFORMED: 1,
            R.API_KEY: 1,
            R.VERSION: 3,
        }
    )
    assert counts == expected
    assert counters.get("Discard") == len(topic_reasons) + 9

    p = tracker.report().unfinished
    assert p.discard_topic == (
        TopicInterval("t", 1000, 1000 + len(topic_reasons) - 1, len(topic_reasons)),
        TopicInterval("u", 7, 7, 1),
    )
    assert p.rate_limit_discard == (("t", 1), ("u", 1))
    # the oversized datagram (LONG_MSG, unparsed) is counted as malformed, as Bruce counts it
    assert (p.malformed_msg_count, p.unsupported_api_key_msg_count, p.unsupported_version_msg_count) == (2, 1, 3)
    assert p.unsupported_msg_version == ((-1, 2), (3, 1))
    assert (p.bad_topic_msg_count, p.recent_bad_topic) == (2, ("no such topic", "no-such-topic"))
    assert p.recent_too_long_msg == (b"t v",)
    assert p.recent_malformed == (b"\x00\x05", b"\x00\x01")
    assert p.possible_duplicate_topic == ()


def test_misuse_is_refused() -> None:
    tracker, _, _ = make()
    with pytest.raises(UsageError, match="record_unparsed"):
        tracker.record(R.MALFORMED, "t", b"", b"", 0)
    with pytest.raises(UsageError, match="not a discard of an unparsed datagram"):
        tracker.record_unparsed(R.RATE_LIMIT, b"x")
    with pytest.raises(UsageError, match="detail"):
        tracker.record_unparsed(R.VERSION, b"x")
    with pytest.raises(UsageError, match="at least 1 s"):
        DiscardTracker(interval_s=0)


def test_recent_lists_and_maps_are_bounded() -> None:
    tracker, _, counters = make(max_topics=10)
    for i in range(1000):
        tracker.record_unparsed(R.MALFORMED, b"m%d" % i)
        tracker.record(R.BAD_TOPIC, f"bad{i}", b"", b"", i)
        tracker.record(R.LONG_MSG, f"t{i % 5}", b"", b"%d" % i, i)
        tracker.record(R.RATE_LIMIT, f"r{i}", b"", b"", i)
        tracker.record_possible_duplicate(f"d{i}", b"", b"", i)
        tracker.record_unparsed(R.VERSION, b"v", detail=i)
    p = tracker.report().unfinished
    assert len(p.recent_malformed) == len(p.recent_bad_topic) == len(p.recent_too_long_msg) == MAX_RECENT
    assert p.recent_malformed[0] == b"m999" and p.recent_bad_topic[0] == "bad999"
    assert (p.malformed_msg_count, p.bad_topic_msg_count) == (1000, 1000)  # counts stay exact
    assert len(p.unsupported_msg_version) == MAX_VERSIONS and p.unsupported_version_msg_count == 1000
    # Per-topic maps keep max_topics topics plus one <other> bucket holding the rest.
    discard = {i.topic: i for i in p.discard_topic}
    assert len(discard) == 11 and set(discard) >= {f"t{i}" for i in range(5)}
    assert discard[OTHER_TOPIC].count == 1000 + 1000 - sum(i.count for t, i in discard.items() if t != OTHER_TOPIC)
    rate = dict(p.rate_limit_discard)
    assert len(rate) == 11 and rate[OTHER_TOPIC] == 990
    dups = {i.topic: i for i in p.possible_duplicate_topic}
    assert len(dups) == 11 and dups[OTHER_TOPIC] == TopicInterval(OTHER_TOPIC, 10, 999, 990)
    assert counters.get("DiscardReportTopicOverflow") > 0


def test_topics_are_capped_and_bytes_topics_are_readable() -> None:
    tracker, _, _ = make()
    tracker.record(R.NO_MEM, "x" * 40_000, b"", b"", 1)
    tracker.record(R.BAD_TOPIC, b"\xff\xfebad", b"", b"", 1)
    p = tracker.report().unfinished
    assert p.discard_topic[0].topic == "x" * 255
    assert p.recent_bad_topic == ("\\xff\\xfebad",)


def test_discards_are_logged_at_most_once_per_30_seconds_per_reason(caplog: pytest.LogCaptureFixture) -> None:
    tracker, _, _ = make()
    with caplog.at_level(logging.WARNING, logger="bruce.proxy.accounting.discards"):
        for _ in range(100):
            tracker.record(R.RATE_LIMIT, "t", b"", b"", 1)
            tracker.record_unparsed(R.MALFORMED, b"x")
    messages = [r.getMessage() for r in caplog.records]
    assert messages == ["discarded message: RATE_LIMIT topic 't'", "discarded message: MALFORMED"]
    quiet, _, _ = make(log_discards=False)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="bruce.proxy.accounting.discards"):
        quiet.record(R.RATE_LIMIT, "t", b"", b"", 1)
    assert caplog.records == []


class RecordingLog:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def discard(self, *args, **kwargs) -> None:
        self.calls.append(("DISC", *args, *kwargs.items()))

    def duplicate(self, *args) -> None:
        self.calls.append(("DUP", *args))


def test_every_event_reaches_the_discard_log_with_bruce_info_text() -> None:
    sink = RecordingLog()
    tracker, _, counters = make(discard_log=sink, prefix_size=4)  # type: ignore[arg-type]
    tracker.record(R.KAFKA_ERROR_ACK, "t", b"key", b"value", 17)
    tracker.record_unparsed(R.API_KEY, b"datagram", detail=300)
    tracker.record_unparsed(R.VERSION, b"datagram", detail=-1)
    tracker.record_unparsed(R.MALFORMED, b"datagram")
    tracker.record_possible_duplicate("t", b"k", b"v", 18)
    assert sink.calls == [
        ("DISC", "KAFKA_ERROR_ACK", "t", b"key", b"value", 17),
        # The log gets the whole datagram and cuts it to its own prefix size.
        ("DISC", "API_KEY(300)", b"", None, b"datagram", None),
        ("DISC", "VERSION(-1)", b"", None, b"datagram", None),
        ("DISC", "MALFORMED", b"", None, b"datagram", None),
        ("DUP", "t", b"k", b"v", 18),
    ]
    assert counters.get("PossibleDuplicateMsg") == 0  # the producer counts duplicates; the tracker only reports them


def test_long_msg_and_bad_topic_name_say_why(caplog: pytest.LogCaptureFixture) -> None:
    """The log line and the discard log line carry the topic, the size and the limit (LONG_MSG), or what is wrong with
    the name (BAD_TOPIC_NAME); a bad topic name is counted under its own reason and reported with the bad topics."""
    sink = RecordingLog()
    tracker, clock, counters = make(discard_log=sink, prefix_size=4, interval=1000)  # type: ignore[arg-type]
    tracker.message_limit = 1000
    oversized = build_any_partition("big", b"v" * 70_000, timestamp=1)[:65_537]  # what the intake reads of it
    with caplog.at_level(logging.WARNING, logger="bruce.proxy.accounting.discards"):
        tracker.record(R.LONG_MSG, "t", b"key", b"v" * 1500, 17)
        clock.now += 30  # a warning per reason per 30 s
        tracker.record_unparsed(R.LONG_MSG, oversized, detail=65_536)
        tracker.record(R.BAD_TOPIC_NAME, "bad topic!", b"", b"v", 18)
    assert [r.getMessage() for r in caplog.records] == [
        "discarded message: LONG_MSG topic 't': 1503 bytes of key and value, limit 1000",
        "discarded message: LONG_MSG topic 'big': a datagram of 70031 bytes, limit 65536 (--max_input_msg_size)",
        "discarded message: BAD_TOPIC_NAME topic 'bad topic!': not a valid Kafka topic name: characters Kafka refuses:"
        " ' ', '!'",
    ]
    assert sink.calls == [
        ("DISC", "LONG_MSG", "t", b"key", b"v" * 1500, 17, ("size", 1503), ("limit", 1000)),
        ("DISC", "LONG_MSG", b"big", None, oversized, None, ("size", 70031), ("limit", 65_536)),
        ("DISC", "BAD_TOPIC_NAME", "bad topic!", b"", b"v", 18),
    ]
    assert counters.get("Discard", (("reason", "BAD_TOPIC_NAME"),)) == 1
    p = tracker.report().unfinished
    assert (p.bad_topic_msg_count, p.recent_bad_topic, p.discard_topic) == (
        1,
        ("bad topic!",),
        (TopicInterval("t", 17, 17, 1),),
    )


def test_the_discard_log_line_ends_with_size_and_limit_where_one_applies() -> None:
    line = format_discard_line(5, 6, "DISC", "LONG_MSG", b"t", b"", b"v", 10, size=1503, limit=1000)
    assert line == b"now: 5 ts: 6 event: DISC info: LONG_MSG topic: 1[t] key: 0[] msg: 4[dg==] size: 1503 limit: 1000\n"
    plain = format_discard_line(5, 6, "DISC", "RATE_LIMIT", b"t", b"", b"v", 10)
    assert plain == b"now: 5 ts: 6 event: DISC info: RATE_LIMIT topic: 1[t] key: 0[] msg: 4[dg==]\n"
