"""Message debug logs: line format, the commands and their texts, a topic filter that filters, time and byte limits,
files deleted at startup and when a new session starts."""

from __future__ import annotations

import resource
import signal
from pathlib import Path

import pytest

from bruce.producer.counters import Counters
from bruce.proxy.accounting.msg_debug import FILE_NAMES, MAX_TOPICS, MessageDebugLog, format_debug_line
from bruce.wire.errors import UsageError

from .clocks import ManualClock
from .forking import run_forked


def make(tmp_path: Path, **kw) -> tuple[MessageDebugLog, ManualClock, Counters]:
    clock, counters = ManualClock(1000.0), Counters()
    debug = MessageDebugLog(str(tmp_path / "debug"), clock=clock, counters=counters, **kw)
    debug.start()
    return debug, clock, counters


def contents(tmp_path: Path) -> dict[str, list[bytes]]:
    out = {}
    for name in FILE_NAMES:
        path = tmp_path / "debug" / name
        out[name] = path.read_bytes().splitlines() if path.exists() else None
    return out


def all_three(debug: MessageDebugLog, topic: str, value: bytes, ts: int = 1) -> None:
    debug.on_receive(topic, b"k", value, ts)
    debug.on_send(topic, b"k", value, ts)
    debug.on_ack(topic, b"k", value, ts)


def test_line_format() -> None:
    assert format_debug_line(1700000000123, b"clicks", b"key", b"hello") == (
        b"ts: 1700000000123 topic: 6[clicks] key: 4[a2V5] value: 8[aGVsbG8=]\n"
    )
    assert format_debug_line(5, b"t", b"", None) == b"ts: 5 topic: 1[t] key: 0[] value: 0[]\n"


def test_files_from_a_previous_run_are_deleted_at_startup(tmp_path: Path) -> None:
    (tmp_path / "debug").mkdir()
    for name in FILE_NAMES:
        (tmp_path / "debug" / name).write_bytes(b"old\n")
    debug, _, _ = make(tmp_path)
    assert not debug.active
    assert contents(tmp_path) == dict.fromkeys(FILE_NAMES)


def test_off_by_default_and_nothing_is_written(tmp_path: Path) -> None:
    debug, _, _ = make(tmp_path)
    assert debug.get_topics() == "No message debug topics are currently enabled\n"
    all_three(debug, "t", b"v")
    assert not (tmp_path / "debug").exists()


def test_the_topic_filter_filters(tmp_path: Path) -> None:
    debug, _, _ = make(tmp_path)
    assert debug.add_topic("wanted") == "Enabled debug topic [wanted]\n"
    assert debug.active
    all_three(debug, "wanted", b"yes", 7)
    all_three(debug, "other", b"no", 8)  # Bruce would log this one too
    debug.close()
    line = b"ts: 7 topic: 6[wanted] key: 4[aw==] value: 4[eWVz]"
    assert contents(tmp_path) == {name: [line] for name in FILE_NAMES}


def test_add_and_del_topic_commands(tmp_path: Path) -> None:
    debug, _, _ = make(tmp_path)
    assert debug.add_topic("a") == "Enabled debug topic [a]\n"
    assert debug.add_topic("a") == "Failed to enable debug topic [a]\n"  # already present
    assert debug.add_topic("b") == "Enabled debug topic [b]\n"
    assert debug.get_topics() == "topic: [a]\ntopic: [b]\n"
    assert debug.del_topic("zzz") == "Failed to disable debug topic [zzz]\n"  # absent
    assert debug.del_topic("a") == "Disabled debug topic [a]\n"
    all_three(debug, "a", b"x")
    all_three(debug, "b", b"y")
    assert debug.del_topic("b") == "Disabled debug topic [b]\n"
    assert not debug.active  # the last topic went: logging is off, the files stay
    all_three(debug, "b", b"z")
    assert contents(tmp_path) == {name: [b"ts: 1 topic: 1[b] key: 4[aw==] value: 4[eQ==]"] for name in FILE_NAMES}


def test_all_topics(tmp_path: Path) -> None:
    debug, _, _ = make(tmp_path)
    assert debug.add_all_topics() == "All message debug topics enabled\n"
    assert debug.get_topics() == "All message debug topics are currently enabled\n"
    assert debug.add_topic("a") == "Failed to enable debug topic [a]\n"
    assert debug.del_topic("a") == "Failed to disable debug topic [a]\n"
    all_three(debug, "a", b"1")
    all_three(debug, "b", b"2")
    assert debug.del_all_topics() == "All message debug topics disabled\n"
    assert not debug.active
    assert debug.get_topics() == "No message debug topics are currently enabled\n"
    assert [len(v) for v in contents(tmp_path).values()] == [2, 2, 2]


def test_a_new_session_deletes_the_old_files_but_changes_within_a_session_do_not(tmp_path: Path) -> None:
    debug, _, _ = make(tmp_path)
    debug.add_topic("a")
    all_three(debug, "a", b"first")
    debug.add_topic("b")  # still the same session: appended
    all_three(debug, "b", b"second")
    debug.tick()
    assert [len(v) for v in contents(tmp_path).values()] == [2, 2, 2]
    debug.del_all_topics()
    assert [len(v) for v in contents(tmp_path).values()] == [2, 2, 2]  # kept while off
    debug.add_topic("c")  # off -> on: a new session
    assert [len(v) for v in contents(tmp_path).values()] == [0, 0, 0]
    all_three(debug, "c", b"third")
    debug.close()
    assert [v[0].split(b" value: ")[1] for v in contents(tmp_path).values()] == [b"8[dGhpcmQ=]"] * 3


def test_tick_flushes_buffered_lines(tmp_path: Path) -> None:
    debug, _, _ = make(tmp_path)
    debug.add_all_topics()
    debug.on_receive("t", b"", b"v", 3)
    debug.tick()
    assert contents(tmp_path)["msg_receive"] == [b"ts: 3 topic: 1[t] key: 0[] value: 4[dg==]"]
    debug.close()


def test_time_limit_turns_logging_off(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    debug, clock, counters = make(tmp_path, time_limit_s=60)
    debug.add_topic("t")
    clock.now += 59.9
    debug.on_receive("t", b"", b"in time", 1)
    clock.now += 0.1
    debug.on_receive("t", b"", b"too late", 2)
    assert not debug.active
    assert debug.get_topics() == "No message debug topics are currently enabled\n"
    assert counters.get("MsgDebugAutoOff", (("cause", "time"),)) == 1
    assert "reached its limit of 60 s" in caplog.text
    assert [x.split()[1] for x in contents(tmp_path)["msg_receive"]] == [b"1"]


def test_time_limit_is_also_enforced_by_tick(tmp_path: Path) -> None:
    debug, clock, counters = make(tmp_path, time_limit_s=60)
    debug.add_all_topics()
    clock.now += 61
    debug.tick()
    assert not debug.active and counters.get("MsgDebugAutoOff") == 1


def test_byte_budget_is_shared_by_the_three_files(tmp_path: Path) -> None:
    one_line = len(format_debug_line(1, b"t", b"k", b"v"))
    debug, _, counters = make(tmp_path, byte_limit=5 * one_line)
    debug.add_topic("t")
    all_three(debug, "t", b"v")  # 3 lines
    all_three(debug, "t", b"v")  # 2 fit; the 6th would pass the budget: off
    assert not debug.active
    assert counters.get("MsgDebugAutoOff", (("cause", "bytes"),)) == 1
    assert [len(v) for v in contents(tmp_path).values()] == [2, 2, 1]
    assert sum((tmp_path / "debug" / n).stat().st_size for n in FILE_NAMES) == 5 * one_line
    assert debug.add_topic("t") == "Enabled debug topic [t]\n"  # a new session has a fresh budget
    all_three(debug, "t", b"v")
    assert debug.active
    debug.close()


def test_truncate_files(tmp_path: Path) -> None:
    debug, _, _ = make(tmp_path)
    debug.add_all_topics()
    all_three(debug, "t", b"v")
    assert debug.truncate_files() == "Message debug files truncated\n"
    all_three(debug, "t", b"after")
    debug.del_all_topics()
    assert [len(v) for v in contents(tmp_path).values()] == [1, 1, 1]  # only the line after truncation
    assert debug.truncate_files() == "Message debug files truncated\n"  # while off: by path
    assert [len(v) for v in contents(tmp_path).values()] == [0, 0, 0]


def test_truncate_failure_is_answered(tmp_path: Path) -> None:
    debug, _, _ = make(tmp_path)
    (tmp_path / "debug" / "msg_send").mkdir(parents=True)  # cannot be truncated
    answer = debug.truncate_files()
    assert answer.startswith("Failed to truncate message debug files: ") and "Is a directory" in answer


def test_the_topic_list_is_bounded(tmp_path: Path) -> None:
    debug, _, _ = make(tmp_path)
    for i in range(MAX_TOPICS):
        assert debug.add_topic(f"t{i}") == f"Enabled debug topic [t{i}]\n"
    assert debug.add_topic("one-more") == (
        f"Failed to enable debug topic [one-more]: {MAX_TOPICS} topics are enabled, the most there can be\n"
    )
    assert debug.get_topics().count("\n") == MAX_TOPICS
    assert debug.add_all_topics() == "All message debug topics enabled\n"  # covers any number
    debug.close()


def test_handle_command_routes_every_command(tmp_path: Path) -> None:
    debug, _, _ = make(tmp_path)
    assert debug.handle_command("add_topic/a.b-c") == "Enabled debug topic [a.b-c]\n"
    assert debug.handle_command("get_topics") == "topic: [a.b-c]\n"
    assert debug.handle_command("del_topic/a.b-c") == "Disabled debug topic [a.b-c]\n"
    assert debug.handle_command("add_all_topics") == "All message debug topics enabled\n"
    assert debug.handle_command("truncate_files") == "Message debug files truncated\n"
    assert debug.handle_command("del_all_topics") == "All message debug topics disabled\n"
    assert debug.handle_command("add_topic/") == "Failed to enable debug topic []\n"
    assert debug.handle_command("nope") is None
    assert debug.handle_command("get_topics/extra") is None


def test_unwritable_debug_dir_fails_the_command_and_stays_off(tmp_path: Path) -> None:
    (tmp_path / "debug").write_bytes(b"a file, not a directory")
    debug, _, _ = make(tmp_path)
    answer = debug.add_topic("t")
    assert answer.startswith("Failed to enable debug topic [t]: ")
    assert not debug.active
    assert debug.get_topics() == "No message debug topics are currently enabled\n"
    assert debug.add_all_topics().startswith("Failed to enable all message debug topics: ")


def test_relative_directory_is_refused() -> None:
    with pytest.raises(UsageError, match="absolute"):
        MessageDebugLog("debug")


def test_filter_matches_topics_with_undecodable_bytes(tmp_path: Path) -> None:
    debug, _, _ = make(tmp_path)
    debug.add_topic("bad\udcff")
    debug.on_receive("bad\udcff", b"", b"v", 1)
    debug.on_receive("bad", b"", b"v", 2)
    debug.close()
    assert contents(tmp_path)["msg_receive"] == [b"ts: 1 topic: 4[bad\xff] key: 0[] value: 4[dg==]"]


def test_a_write_failure_turns_logging_off(tmp_path: Path) -> None:
    def scenario() -> dict:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, resource.RLIM_INFINITY))
        counters = Counters()
        debug = MessageDebugLog(str(tmp_path / "debug"), counters=counters)
        debug.add_all_topics()
        for i in range(10_000):
            debug.on_receive("t", b"", b"x" * 100, i)
            debug.tick()
        return {"active": debug.active, "errors": counters.get("MsgDebugWriteError"), "topics": debug.get_topics()}

    result = run_forked(scenario)
    assert result == {"active": False, "errors": 1, "topics": "No message debug topics are currently enabled\n"}
    assert (tmp_path / "debug" / "msg_receive").stat().st_size <= 100_000
