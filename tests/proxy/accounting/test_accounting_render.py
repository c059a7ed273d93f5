"""The /discards pages (``bruce.proxy.status.pages``) of the tracker's reports: Bruce's plain layout (golden text) and
JSON that is valid JSON with Bruce's field names."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator

import pytest

from bruce.producer.reasons import DiscardReason as R
from bruce.proxy.accounting.discards import DiscardTracker
from bruce.proxy.status import ServerInfo
from bruce.proxy.status.pages import render_discards_json, render_discards_plain

from .clocks import ManualClock

START = 1_700_000_000  # Tue Nov 14 22:13:20 2023 UTC


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def busy_tracker() -> tuple[DiscardTracker, ManualClock]:
    clock = ManualClock(START)
    tracker = DiscardTracker(interval_s=600, clock=clock, prefix_size=256)
    tracker.record_unparsed(R.MALFORMED, b"\x00\x00\x00\x05\xff")
    tracker.record_unparsed(R.API_KEY, b"\x00", detail=300)
    tracker.record_unparsed(R.VERSION, b"\x00", detail=-1)
    tracker.record(R.BAD_TOPIC, "nope", b"", b"", 1)
    tracker.record(R.LONG_MSG, "big", b"", b"value", 2)
    tracker.record(R.RATE_LIMIT, "busy", b"", b"", 3)
    tracker.record(R.KAFKA_ERROR_ACK, "busy", b"", b"", 5)
    tracker.record_possible_duplicate("dup", b"", b"", 9)
    return tracker, clock


EXPECTED_PERIOD = """\
    report ID: 0
    start time: 1700000000 Tue Nov 14 22:13:20 2023
    malformed msg count: 1
    unsupported API key msg count: 1
    unsupported version msg count: 1
    bad topic msg count: 1

    recent malformed msg: 8[AAAABf8=]

    unsupported msg version: -1 count: 1

    recent bad topic: 4[nope]

    recent too long msg: 12[YmlnIHZhbHVl]

    rate limit discard topic: 4[busy] count 1

    discard topic: 3[big] begin [2] end [2] count 1
    discard topic: 4[busy] begin [3] end [5] count 2

    possible duplicate topic: 3[dup] begin [9] end [9] count 1
"""


def test_plain_golden() -> None:
    tracker, clock = busy_tracker()
    clock.now = START + 30
    text = render_discards_plain(ServerInfo(4242, "1.2.3", 0), tracker.report())
    assert text == (
        "pid: 4242\n"
        "now: 1700000030 Tue Nov 14 22:13:50 2023\n"
        "version: 1.2.3\n"
        "report interval in seconds: 600\n"
        "\n"
        "current (unfinished) reporting period:\n" + EXPECTED_PERIOD
    )


def test_plain_shows_the_finished_period_after_rollover() -> None:
    tracker, clock = busy_tracker()
    clock.now = START + 600
    text = render_discards_plain(ServerInfo(1, "v", 0), tracker.report())
    current, finished = text.split("\nlatest finished reporting period:\n")
    assert current.endswith(
        "current (unfinished) reporting period:\n"
        "    report ID: 1\n"
        "    start time: 1700000600 Tue Nov 14 22:23:20 2023\n"
        "    malformed msg count: 0\n"
        "    unsupported API key msg count: 0\n"
        "    unsupported version msg count: 0\n"
        "    bad topic msg count: 0\n"
    )
    assert finished == EXPECTED_PERIOD


def test_empty_plain_report_has_no_sections() -> None:
    tracker = DiscardTracker(clock=ManualClock(START))
    text = render_discards_plain(ServerInfo(1, "v", 0), tracker.report())
    assert "latest finished" not in text
    assert text.endswith("    bad topic msg count: 0\n")


def test_json_fields_and_values() -> None:
    tracker, clock = busy_tracker()
    clock.now = START + 600
    body = json.loads(render_discards_json(ServerInfo(4242, "1.2.3", 0), tracker.report()))
    assert list(body) == ["now", "pid", "version", "interval", "unfinished_report", "finished_report"]
    assert (body["now"], body["pid"], body["version"], body["interval"]) == (START + 600, 4242, "1.2.3", 600)
    assert body["unfinished_report"]["id"] == 1
    f = body["finished_report"]
    assert f == {
        "id": 0,
        "start_time": START,
        "malformed_msg_count": 1,
        "unsupported_api_key_msg_count": 1,
        "unsupported_version_msg_count": 1,
        "bad_topic_msg_count": 1,
        "recent_malformed": ["AAAABf8="],
        "unsupported_msg_version": [{"version": -1, "count": 1}],
        "recent_bad_topic": ["nope"],
        "recent_too_long_msg": ["YmlnIHZhbHVl"],
        "rate_limit_discard": [{"topic": "busy", "count": 1}],
        "discard_topic": [
            {"topic": "big", "min_timestamp": 2, "max_timestamp": 2, "count": 1},
            {"topic": "busy", "min_timestamp": 3, "max_timestamp": 5, "count": 2},
        ],
        "possible_duplicate_topic": [{"topic": "dup", "min_timestamp": 9, "max_timestamp": 9, "count": 1}],
    }
    assert base64.b64decode(f["recent_malformed"][0]) == b"\x00\x00\x00\x05\xff"


def test_json_without_finished_report() -> None:
    tracker, _ = busy_tracker()
    body = json.loads(render_discards_json(ServerInfo(1, "v", 0), tracker.report()))
    assert "finished_report" not in body
    assert body["unfinished_report"]["bad_topic_msg_count"] == 1


HOSTILE_TOPICS = [
    'quo"te',
    "back\\slash",
    "new\nline",
    "tab\t",
    "\x00nul",
    "ünï",
    b"\xff\xfe",
    "}],{",
    "esc\udcff",
    "lone\ud800",
]


@pytest.mark.parametrize("topic", HOSTILE_TOPICS)
def test_json_stays_valid_with_hostile_topics(topic: str | bytes) -> None:
    tracker = DiscardTracker(clock=ManualClock(START))
    tracker.record(R.BAD_TOPIC, topic, b"", b"", 1)
    tracker.record(R.NO_MEM, topic, b"", b"", 1)
    tracker.record(R.RATE_LIMIT, topic, b"", b"", 1)
    tracker.record_possible_duplicate(topic, b"", b"", 1)
    report = tracker.report()
    body = json.loads(render_discards_json(ServerInfo(1, 'ver"sion', 0), report))
    shown = {"esc\udcff": "esc\\xff", "lone\ud800": "lone\\xed\\xa0\\x80", b"\xff\xfe": "\\xff\\xfe"}.get(topic, topic)
    render_discards_plain(ServerInfo(1, "v", 0), report).encode()  # printable: encodes without error
    p = body["unfinished_report"]
    assert p["recent_bad_topic"] == [shown]
    assert p["discard_topic"][0]["topic"] == p["rate_limit_discard"][0]["topic"] == shown
    assert p["possible_duplicate_topic"][0]["topic"] == shown
    assert body["version"] == 'ver"sion'
