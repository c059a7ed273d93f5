"""The input socket's path on a shared host: the default directory made private and verified, a live socket never
taken over.

Rules:
- The default path (:func:`bruce.client.default_socket_path`, shared with the clients) is
  ``$XDG_RUNTIME_DIR/bruce.socket`` when that variable is set, else ``/tmp/bruce-<uid>/bruce.socket`` (``$TMPDIR``
  instead of ``/tmp`` when set, as tmux does). Its directory is created with mode ``0700`` when missing
  (:func:`ensure_private_dir`) and then verified — a real directory (not a symlink), owned by this user, no access for
  group or others — so another local user can neither bind the name first nor read what clients send. Any problem is one
  :class:`SocketPathError` line naming the path and the fix; nothing is deleted or chmod-ed.
- An explicit ``--receive_socket_name`` keeps Bruce's behaviour: its directory is the operator's and is not checked.
- Whatever the path, a socket file there is only replaced when nobody answers on it (:func:`check_not_live`): a
  ``connect`` that succeeds (or hits a socket of another type) means another process serves it, and the daemon
  refuses to start rather than take it over; ``ECONNREFUSED`` means a stale file left by a dead process.
"""

from __future__ import annotations

import errno
import os
import socket
import stat

from bruce.wire import BruceError

PRIVATE_MODE = 0o700


class SocketPathError(BruceError):
    """The input socket's path cannot be used safely (the message names the path and the fix)."""

    reason = "INTAKE"


class IntakeError(SocketPathError):
    """The input socket cannot be set up as configured (the message says what to change)."""


def ensure_private_dir(directory: str) -> None:
    """Create ``directory`` (mode 0700) if missing, then verify it is a directory of this user that nobody else can
    enter. Raises :class:`SocketPathError` naming the directory and the fix."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    from_env = bool(runtime) and os.path.normpath(directory) == os.path.normpath(runtime or "")
    what = f"$XDG_RUNTIME_DIR ({directory})" if from_env else f"the default socket directory {directory}"
    others = (
        "unset XDG_RUNTIME_DIR or give --receive_socket_name PATH"
        if from_env
        else "give --receive_socket_name PATH (or set XDG_RUNTIME_DIR)"
    )
    if not from_env:
        try:
            os.mkdir(directory, PRIVATE_MODE)
        except FileExistsError:
            pass
        except OSError as e:
            raise SocketPathError(f"cannot create {what}: {e.strerror}; {others}") from e
    try:
        st = os.lstat(directory)
    except OSError as e:
        raise SocketPathError(f"cannot inspect {what}: {e.strerror}; {others}") from e
    uid = os.geteuid()
    if stat.S_ISLNK(st.st_mode):
        problem = "is a symbolic link (another user may have planted it)"
    elif not stat.S_ISDIR(st.st_mode):
        problem = "is not a directory"
    elif st.st_uid != uid:
        problem = f"belongs to uid {st.st_uid}, not to this user (uid {uid}): another user may be squatting it"
    elif stat.S_IMODE(st.st_mode) & 0o077:
        mode = stat.S_IMODE(st.st_mode)
        raise SocketPathError(
            f"{what} has mode {mode:04o}: other users could reach the socket; run chmod 700 {directory}, or {others}"
        )
    else:
        return
    raise SocketPathError(f"{what} {problem}; remove it (as root if need be), or {others}")


def check_not_live(path: str) -> None:
    """Refuse a path where another process answers; a missing path or a stale socket file is fine (the intake
    replaces the latter). Raises :class:`SocketPathError`."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise SocketPathError(f"cannot inspect the input socket path {path}: {e.strerror}") from e
    if not stat.S_ISSOCK(st.st_mode):
        return  # the intake refuses it with its own message, and never deletes it
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        probe.connect(os.fsencode(path))
    except ConnectionRefusedError:
        return  # stale: nobody reads it
    except FileNotFoundError:
        return
    except OSError as e:
        if e.errno == errno.EPROTOTYPE:
            live = "a process serves a stream socket there"
        else:
            raise SocketPathError(
                f"cannot tell whether the input socket {path} is in use: {e.strerror} (it belongs to uid "
                f"{st.st_uid}); remove it as its owner or give another --receive_socket_name"
            ) from e
    else:
        live = "another process is reading it (is another bruce running?)"
    finally:
        probe.close()
    raise SocketPathError(
        f"the input socket {path} is live: {live}; stop that process or give another --receive_socket_name"
    )
