"""``to_bruce``: each of Bruce's options, verified on the datagrams received; --nonblocking; errors and exit codes."""

from __future__ import annotations

import asyncio
import io
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bruce.client import DaemonUnavailableError, now_ms, to_bruce
from bruce.client.to_bruce import EXIT_DROPPED, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, main
from bruce.producer.reasons import DiscardReason
from bruce.proxy.intake.intake import DatagramIntake
from bruce.wire.datagram import Datagram, DatagramKind, build_any_partition, parse_datagram
from bruce.wire.errors import MalformedInput

from .conftest import TIMEOUT

TO_BRUCE = Path(sys.executable).parent / "to_bruce"


def received(receiver: socket.socket) -> list[bytes]:
    receiver.setblocking(False)
    out = []
    while True:
        try:
            out.append(receiver.recv(100_000))
        except BlockingIOError:
            return out


def parsed(receiver: socket.socket) -> list[Datagram]:
    return [parse_datagram(d) for d in received(receiver)]


def test_one_any_partition_message(receiver: socket.socket, sock_path: str) -> None:
    before = now_ms()
    assert main(["--socket_path", sock_path, "--topic", "clicks", "--value", "hello"]) == EXIT_OK
    (d,) = parsed(receiver)
    assert (d.kind, d.topic, d.key, d.value, d.partition_key) == (
        DatagramKind.ANY_PARTITION,
        b"clicks",
        b"",
        b"hello",
        None,
    )
    assert before <= d.timestamp <= now_ms()


@pytest.mark.parametrize(("option", "on_wire"), [("7", 7), ("0", 0), ("4294967295", -1), ("0x80000000", -(2**31))])
def test_partition_key(receiver: socket.socket, sock_path: str, option: str, on_wire: int) -> None:
    assert (
        main(["--socket_path", sock_path, "--topic", "t", "--partition_key", option, "--key", "k", "--value", "v"]) == 0
    )
    (d,) = parsed(receiver)
    assert (d.kind, d.partition_key, d.key, d.value) == (DatagramKind.PARTITION_KEY, on_wire, b"k", b"v")


def test_count_and_seq_with_pad(receiver: socket.socket, sock_path: str) -> None:
    args = ["--socket_path", sock_path, "--topic", "t", "--value", "x", "--count", "3", "--seq", "--pad", "4"]
    assert main(args) == EXIT_OK
    assert [d.value for d in parsed(receiver)] == [b"0001 x", b"0002 x", b"0003 x"]


def test_seq_without_pad_and_default_empty_value(receiver: socket.socket, sock_path: str) -> None:
    assert main(["--socket_path", sock_path, "--topic", "t", "--count", "2", "--seq"]) == EXIT_OK
    assert [d.value for d in parsed(receiver)] == [b"1 ", b"2 "]


def test_stdin_value_is_used_for_every_message(
    receiver: socket.socket, sock_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"line one\n\xffbinary")))
    assert main(["--socket_path", sock_path, "--topic", "t", "--stdin", "--count", "2"]) == EXIT_OK
    assert [d.value for d in parsed(receiver)] == [b"line one\n\xffbinary"] * 2


def test_bad_sends_a_malformed_datagram(receiver: socket.socket, sock_path: str) -> None:
    assert main(["--socket_path", sock_path, "--topic", "t", "--value", "v", "--bad"]) == EXIT_OK
    (raw,) = received(receiver)
    assert int.from_bytes(raw[:4], "big") == len(raw) - 1
    with pytest.raises(MalformedInput):
        parse_datagram(raw)


def test_bad_is_discarded_as_malformed_by_the_intake(
    make_intake: Callable[..., DatagramIntake], sock_path: str, run: Any
) -> None:
    intake = make_intake()

    async def scenario() -> None:
        serving = asyncio.ensure_future(intake.serve())
        await asyncio.sleep(0.05)
        args = ["--socket_path", sock_path, "--topic", "t", "--value", "v", "--bad", "--count", "2"]
        assert await asyncio.to_thread(main, args) == EXIT_OK
        await intake.drain()
        intake.close()
        await serving

    run(scenario())
    assert [u[0] for u in intake.sink.unparsed] == [DiscardReason.MALFORMED] * 2
    assert intake.counters.get("InputAgentDiscardMsgMalformed") == 2


def test_interval_spaces_the_messages(receiver: socket.socket, sock_path: str) -> None:
    start = time.monotonic()
    assert main(["--socket_path", sock_path, "--topic", "t", "--count", "3", "--interval", "30000"]) == EXIT_OK
    assert time.monotonic() - start >= 0.06  # two gaps of 30 ms; the first message goes at once
    assert len(received(receiver)) == 3


def test_print_every_nth(receiver: socket.socket, sock_path: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--socket_path", sock_path, "--topic", "t", "--count", "5", "--print", "2"]) == EXIT_OK
    assert capsys.readouterr().out == "2 messages written\n4 messages written\n"


def test_nonblocking_counts_what_the_full_socket_refused(
    receiver: socket.socket, sock_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--socket_path", sock_path, "--topic", "t", "--count", "1000", "--nonblocking", "--seq"]
    assert main(args) == EXIT_DROPPED
    got = [d.value for d in parsed(receiver)]
    assert 0 < len(got) < 1000
    assert got == [b"%d " % n for n in range(1, len(got) + 1)]  # the first ones went through, the rest were dropped
    err = capsys.readouterr().err
    assert f"{1000 - len(got)} of 1000 messages dropped: the socket was full (EAGAIN); {len(got)} sent." in err
    assert "net.unix.max_dgram_qlen" in err and "sysctl -w net.unix.max_dgram_qlen=512" in err  # what to do about it
    assert "messages sent to" not in err  # no confirmation when messages were lost


def test_one_line_confirmation_unless_quiet(
    receiver: socket.socket, sock_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--socket_path", sock_path, "--topic", "clicks", "--value", "hello"]) == EXIT_OK
    assert capsys.readouterr() == ("", f"to_bruce: 1 message sent to {sock_path} (topic clicks)\n")
    assert main(["--socket_path", sock_path, "--topic", "clicks", "--count", "3", "-q"]) == EXIT_OK
    assert main(["--socket_path", sock_path, "--topic", "clicks", "--quiet"]) == EXIT_OK
    assert capsys.readouterr() == ("", "")
    assert len(received(receiver)) == 5


def test_socket_path_defaults_to_the_daemons_default(
    receiver: socket.socket, sock_path: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert Path(sock_path).name == "bruce.socket"  # the daemon's default name under $XDG_RUNTIME_DIR
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(Path(sock_path).parent))
    assert main(["--topic", "t", "--value", "v", "--count", "2"]) == EXIT_OK
    assert [d.value for d in parsed(receiver)] == [b"v", b"v"]
    assert f"2 messages sent to {sock_path}" in capsys.readouterr().err


def test_key_default_is_empty_in_help_docs_and_on_the_wire(
    receiver: socket.socket, sock_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--help"]) == EXIT_OK
    help_text = " ".join(capsys.readouterr().out.split())
    assert "message key (default: empty, which Kafka receives as no key)" in help_text
    client_md = (Path(__file__).resolve().parents[3] / "docs" / "client.md").read_text()
    assert "| `--key KEY` | message key (default: empty, which Kafka receives as no key) |" in client_md
    assert main(["--socket_path", sock_path, "--topic", "t", "--value", "v"]) == EXIT_OK
    assert [d.key for d in parsed(receiver)] == [b""]


@pytest.mark.parametrize(
    "args",
    [
        ["--socket_path", "p"],  # no topic
        ["--socket_path", "p", "--topic", "t", "--value", "v", "--stdin"],  # exclusive
        ["--socket_path", "p", "--topic", "t", "--count", "-1"],
        ["--socket_path", "p", "--topic", "t", "--partition_key", "4294967296"],
        ["--socket_path", "p", "--topic", "t", "--interval", "soon"],
    ],
)
def test_bad_options(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == EXIT_USAGE
    assert "to_bruce" in capsys.readouterr().err


def test_no_daemon(sock_path: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--socket_path", sock_path, "--topic", "t", "--value", "v"]) == EXIT_ERROR
    assert "no bruce daemon is listening" in capsys.readouterr().err


def test_topic_too_long_for_a_datagram(
    receiver: socket.socket, sock_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--socket_path", sock_path, "--topic", "x" * 40000, "--value", "v", "--unchecked"]
    assert main(args) == EXIT_ERROR
    assert "topic" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("topic", "why"),
    [
        ("bad topic!", "characters Kafka refuses: ' ', '!'"),
        ("", "empty"),
        (".", "'.' and '..' are not topic names"),
        ("..", "'.' and '..' are not topic names"),
        ("x" * 250, "250 characters, more than Kafka's 249"),
        ("caf\u00e9", "characters Kafka refuses: '\u00e9'"),
    ],
)
def test_topic_names_kafka_refuses_are_refused(
    receiver: socket.socket, sock_path: str, capsys: pytest.CaptureFixture[str], topic: str, why: str
) -> None:
    assert main(["--socket_path", sock_path, "--topic", topic, "--value", "v", "--count", "3"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"to_bruce: --topic {topic!r} is not a valid Kafka topic name: {why}" in err, err
    assert "legal: letters, digits, '.', '_', '-'; 1 to 249 characters" in err
    assert received(receiver) == []


@pytest.mark.parametrize("topic", ["x" * 249, "a.b_c-D9", "..."])
def test_every_topic_name_kafka_takes_is_sent(receiver: socket.socket, sock_path: str, topic: str) -> None:
    assert main(["--socket_path", sock_path, "--topic", topic, "--value", "v"]) == EXIT_OK
    assert [d.topic for d in parsed(receiver)] == [topic.encode()]


def test_a_value_over_the_daemons_limit_is_refused(
    receiver: socket.socket, sock_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fits = 65536 - len(build_any_partition(b"t", b"", b"", timestamp=0))
    assert main(["--socket_path", sock_path, "--topic", "t", "--value", "v" * (fits + 1)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "the datagram would be 65537 bytes" in err and f"value {fits + 1}" in err, err
    assert "over the daemon's --max_input_msg_size (65536 bytes by default" in err, err
    assert received(receiver) == []
    assert main(["--socket_path", sock_path, "--topic", "t", "--value", "v" * fits]) == EXIT_OK
    args = ["--socket_path", sock_path, "--topic", "t", "--value", "v" * (fits + 1), "--max_input_msg_size", "70000"]
    assert main(args) == EXIT_OK
    assert [len(d.value) for d in parsed(receiver)] == [fits, fits + 1]


def test_unchecked_sends_what_the_daemon_refuses(receiver: socket.socket, sock_path: str) -> None:
    """For testing the daemon's own checks (BAD_TOPIC_NAME, LONG_MSG)."""
    assert main(["--socket_path", sock_path, "--topic", "bad topic!", "--value", "v" * 70000, "--unchecked"]) == 0
    assert [(d.topic, len(d.value)) for d in parsed(receiver)] == [(b"bad topic!", 70000)]


def test_a_failure_mid_count_says_how_many_were_sent(
    receiver: socket.socket, sock_path: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = to_bruce.BruceClient.send_datagram
    calls = []

    def fail_on_the_fourth(self: Any, datagram: bytes, **kwargs: Any) -> None:
        calls.append(1)
        if len(calls) == 4:
            raise DaemonUnavailableError(f"no bruce daemon is listening on {sock_path}; the message was not sent")
        real(self, datagram, **kwargs)

    monkeypatch.setattr(to_bruce.BruceClient, "send_datagram", fail_on_the_fourth)
    assert main(["--socket_path", sock_path, "--topic", "t", "--value", "v", "--count", "10"]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert err.endswith("; 3 of 10 messages sent before the failure\n"), err
    assert len(received(receiver)) == 3


def test_installed_command(receiver: socket.socket, sock_path: str) -> None:
    result = subprocess.run(
        [str(TO_BRUCE), "--socket_path", sock_path, "--topic", "cli", "--value", "from the shell"],
        capture_output=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    assert [d.value for d in parsed(receiver)] == [b"from the shell"]
    assert subprocess.run([str(TO_BRUCE), "--help"], capture_output=True, timeout=TIMEOUT).returncode == 0


def test_option_values_that_are_not_numbers_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--socket_path", "p", "--topic", "t", "--count", "many"]) == EXIT_USAGE
    assert "argument --count: 'many' is not a whole number" in capsys.readouterr().err
    assert main(["--socket_path", "p", "--topic", "t", "--partition_key", "k"]) == EXIT_USAGE
    assert "argument --partition_key: 'k' is not a number" in capsys.readouterr().err


def test_stdin_is_read_within_a_bound(
    receiver: socket.socket, sock_path: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(to_bruce, "MAX_STDIN", 10)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x" * 11)))
    assert main(["--socket_path", sock_path, "--topic", "t", "--stdin"]) == EXIT_ERROR
    assert "standard input holds more than 10 bytes" in capsys.readouterr().err
    assert received(receiver) == []
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x" * 10)))
    assert main(["--socket_path", sock_path, "--topic", "t", "--stdin"]) == EXIT_OK
    assert [d.value for d in parsed(receiver)] == [b"x" * 10]


def _as_from_a_terminal() -> None:
    """In the child before exec: SIGINT deliverable, as from a terminal. The test process may have it ignored (a
    shell's background job) or blocked (a signal mask it inherited), and a child inherits both."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_ctrl_c_says_how_many_were_sent(sock_path: str, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as small:
        small.bind(sock_path)
        proc = subprocess.Popen(
            [str(TO_BRUCE), "--socket_path", sock_path, "--topic", "t", "--count", "1000", "--interval", "1000"],
            stderr=subprocess.PIPE,
            preexec_fn=_as_from_a_terminal,
        )
        first = small.recv(1000)  # it is sending
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=TIMEOUT)
    assert parse_datagram(first).topic == b"t"
    assert proc.returncode == EXIT_INTERRUPTED
    assert re.fullmatch(rb"to_bruce: interrupted; \d+ of 1000 messages sent\n", err), err
