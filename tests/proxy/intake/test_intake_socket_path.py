"""The socket path on a shared host: the default directory created private and verified (a squatted, symlinked,
foreign or open directory refused with the path and the fix), and a live socket never taken over."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from bruce.client import default_socket_path
from bruce.proxy.intake.intake import DatagramIntake
from bruce.proxy.intake.socket_path import SocketPathError, check_not_live, ensure_private_dir

from .conftest import connect

NOBODY = 65534


def _foreign(path: Path) -> None:
    """Make ``path`` belong to another user (this suite runs as root; as anyone else, chown is refused)."""
    assert os.geteuid() == 0, "simulating another user's directory needs root (chown)"
    os.chown(path, NOBODY, NOBODY)


def test_the_default_is_a_private_directory_under_tmpdir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    path = default_socket_path()
    assert path == f"{tmp_path}/bruce-{os.geteuid()}/bruce.socket"
    old = os.umask(0)
    try:
        ensure_private_dir(os.path.dirname(path))
    finally:
        os.umask(old)
    st = os.lstat(os.path.dirname(path))
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.geteuid()
    ensure_private_dir(os.path.dirname(path))  # an existing, correct directory is reused


@pytest.mark.parametrize("squat", ["foreign-owner", "symlink", "file", "open-mode"])
def test_a_squatted_default_directory_is_refused(tmp_path: Path, squat: str) -> None:
    directory = tmp_path / "bruce-0"
    if squat == "foreign-owner":
        directory.mkdir(mode=0o777)
        _foreign(directory)
        expected = "belongs to uid 65534"
    elif squat == "symlink":
        (tmp_path / "theirs").mkdir()
        directory.symlink_to(tmp_path / "theirs")
        expected = "is a symbolic link"
    elif squat == "file":
        directory.write_text("")
        expected = "is not a directory"
    else:
        directory.mkdir()
        directory.chmod(0o755)
        expected = "has mode 0755"
    with pytest.raises(SocketPathError) as refused:
        ensure_private_dir(str(directory))
    message = str(refused.value)
    assert expected in message and str(directory) in message and "--receive_socket_name" in message
    assert "\n" not in message
    assert os.path.lexists(directory)  # nothing is deleted


def test_a_bad_runtime_dir_names_the_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    with pytest.raises(SocketPathError, match=r"\$XDG_RUNTIME_DIR \(.*\) has mode 0755.*unset XDG_RUNTIME_DIR"):
        ensure_private_dir(str(tmp_path))


def test_a_live_datagram_socket_is_never_taken_over(
    make_intake: Callable[..., DatagramIntake], sock_path: str, run: Callable[..., object]
) -> None:
    live = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    live.bind(sock_path)  # another daemon, serving
    try:
        with pytest.raises(SocketPathError, match="is live: another process is reading it"):
            make_intake().open()
        with connect(sock_path) as client:
            client.send(b"still reaches the first one")
        assert live.recv(100) == b"still reaches the first one"
    finally:
        live.close()


def test_a_live_stream_socket_is_refused_too(sock_path: str) -> None:
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    live.bind(sock_path)
    live.listen()
    try:
        with pytest.raises(SocketPathError, match="a process serves a stream socket there"):
            check_not_live(sock_path)
    finally:
        live.close()


def test_a_foreign_stale_socket_in_a_sticky_directory_is_one_line(make_intake: Callable[..., DatagramIntake]) -> None:
    """As in /tmp: a stale socket another user left cannot be unlinked (EPERM), which is an error, not a crash."""
    sticky = Path(tempfile.mkdtemp(prefix="bruce-sticky-"))
    try:
        sticky.chmod(0o1777)
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        stale.bind(str(sticky / "s"))
        stale.close()
        (sticky / "s").chmod(0o777)  # anyone may connect: the probe sees ECONNREFUSED, a stale file
        _foreign(sticky / "s")
        pid = os.fork()
        if pid == 0:  # the daemon as an ordinary user, who may not remove another user's file in a sticky directory
            code = 5
            try:
                os.setuid(NOBODY - 1)
                make_intake(path=str(sticky / "s")).open()
                code = 4
            except SocketPathError as e:
                code = 3 if "cannot replace the stale input socket" in str(e) and "uid 65534" in str(e) else 4
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 3
    finally:
        shutil.rmtree(sticky)
