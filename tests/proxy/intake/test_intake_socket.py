"""The input socket's lifecycle: created with its mode, a stale socket replaced, anything else refused, unlinked on
stop and close (only while it is ours), actionable errors."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bruce.proxy.intake.intake import DatagramIntake, IntakeError

from .conftest import connect, wait_until


@pytest.mark.parametrize("mode", [0o600, 0o666, 0o620])
def test_open_binds_and_applies_mode(make_intake: Callable[..., DatagramIntake], sock_path: str, mode: int) -> None:
    make_intake(mode=mode).open()
    st = os.stat(sock_path)
    assert stat.S_ISSOCK(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == mode


def test_without_mode_the_umask_applies(make_intake: Callable[..., DatagramIntake], sock_path: str) -> None:
    old = os.umask(0o027)
    try:
        make_intake().open()
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(sock_path).st_mode) == 0o750


def test_stale_socket_file_is_replaced(make_intake: Callable[..., DatagramIntake], sock_path: str) -> None:
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    stale.bind(sock_path)
    stale.close()  # the file stays behind, as after a crash
    with pytest.raises(ConnectionRefusedError):
        connect(sock_path)
    intake = make_intake()
    intake.open()
    with connect(sock_path) as client:
        client.send(b"reaches the new socket")
    assert asyncio.run(intake.drain()) == 1
    assert intake.sink.unparsed[0][1] == b"reaches the new socket"


def test_a_path_that_is_not_a_socket_is_never_deleted(
    make_intake: Callable[..., DatagramIntake], sock_path: str
) -> None:
    Path(sock_path).write_text("precious")
    with pytest.raises(IntakeError, match="exists and is not a socket"):
        make_intake().open()
    assert Path(sock_path).read_text() == "precious"


def test_unusable_paths_give_actionable_errors(make_intake: Callable[..., DatagramIntake], sock_path: str) -> None:
    with pytest.raises(IntakeError, match=r"cannot create the input socket .*missing-dir"):
        make_intake(path=str(Path(sock_path).parent / "missing-dir" / "s")).open()
    long_path = str(Path(sock_path).parent / ("x" * 120))
    with pytest.raises(IntakeError, match="cannot create the input socket"):
        make_intake(path=long_path).open()


def test_close_unlinks_the_path(make_intake: Callable[..., DatagramIntake], sock_path: str) -> None:
    intake = make_intake()
    intake.open()
    assert os.path.exists(sock_path)
    intake.close()
    assert not os.path.exists(sock_path)
    intake.close()  # idempotent


def test_close_leaves_a_socket_that_replaced_ours(make_intake: Callable[..., DatagramIntake], sock_path: str) -> None:
    intake = make_intake()
    intake.open()
    os.unlink(sock_path)
    other = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    other.bind(sock_path)  # e.g. a second daemon started meanwhile
    try:
        intake.close()
        assert os.path.exists(sock_path)
    finally:
        other.close()


@pytest.mark.parametrize("reader", ["loop", "process"])
def test_stop_accepting_refuses_new_and_connected_clients(
    make_intake: Callable[..., DatagramIntake], sock_path: str, run: Any, reader: str
) -> None:
    intake = make_intake(reader=reader)

    async def scenario() -> None:
        serving = asyncio.ensure_future(intake.serve())
        await wait_until(lambda: intake.accepting)
        connected = connect(sock_path)
        connected.send(b"before the stop")
        await wait_until(lambda: intake.datagrams == 1)
        intake.stop_accepting()
        assert not os.path.exists(sock_path)
        with pytest.raises(BrokenPipeError):
            connected.send(b"after the stop")
        connected.close()
        with pytest.raises(FileNotFoundError):
            connect(sock_path)
        await intake.drain()
        intake.close()
        await serving

    run(scenario())
    assert intake.datagrams == 1


def test_open_twice_is_an_error(make_intake: Callable[..., DatagramIntake]) -> None:
    intake = make_intake()
    intake.open()
    with pytest.raises(IntakeError, match="already open"):
        intake.open()


def test_invalid_settings_are_refused(make_intake: Callable[..., DatagramIntake]) -> None:
    with pytest.raises(IntakeError, match="max_input_msg_size"):
        make_intake(max_input_msg_size=0)
    with pytest.raises(IntakeError, match="reader"):
        make_intake(reader="thread")
    with pytest.raises(IntakeError, match="burst"):
        make_intake(burst=0)
