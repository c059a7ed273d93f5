"""The reader process's program: empty the daemon's input socket into a pipe, so clients never wait for its loop.

Run by :class:`bruce.proxy.intake.intake_process.ReaderProcess` as ``python -m bruce.proxy.intake.intake_reader
SOCKET_FD PIPE_FD BUFSIZE PARENT_PID``; it imports almost nothing, so it starts fast and stays small.

Rules:
- Blocking ``recv`` of one datagram (truncated at ``max_input_msg_size + 1`` bytes, so the parent still sees too-long
  ones), then the rest of the queue with ``MSG_DONTWAIT``, up to 256 datagrams or 256 KiB: one burst, written to the
  pipe as one frame, ``length:u32 | pickle of the list of datagrams`` (one C call here and one in the parent, where
  framing each datagram cost a Python loop on both sides). The parent unpickles only what its own child wrote. The
  socket's file description stays blocking: the parent reads it only with ``MSG_DONTWAIT``.
- It only reads. Clients wait whenever it is away from ``recv``, so the datagrams are parsed in the event loop:
  parsing here as well nearly doubled this process's CPU per datagram and lowered the end-to-end rate, though it
  took work off the loop (bench/proxy_bench.py; docs/benchmarks.md, "CPU per message", parsing).
- Ignores SIGINT and SIGTERM (the daemon orders shutdown); dies with its parent (``PR_SET_PDEATHSIG``, and a write to a
  pipe nobody reads ends it); exits 0 once the socket is shut for reading and its queue is empty, which is how the
  parent's ``stop_accepting`` ends it. An empty read is told apart from a zero-length datagram by ``POLLRDHUP``.
- Linux only.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import socket
import struct
import sys

FRAME = struct.Struct(">I")
BURST = 256  # datagrams per frame, at most
BURST_BYTES = 256 * 1024  # datagram bytes per frame, at most (a single larger datagram goes alone)


def forward(sock: socket.socket, pipe_fd: int, bufsize: int) -> None:
    """Copy datagrams from ``sock`` to ``pipe_fd``, a frame per burst, until the socket is shut for reading and
    empty."""
    recv = sock.recv
    dontwait = socket.MSG_DONTWAIT
    dumps = pickle.dumps
    protocol = pickle.HIGHEST_PROTOCOL
    pack = FRAME.pack
    while True:
        data = recv(bufsize)
        if not data and _shut_for_reading(sock):
            return
        burst = [data]
        size = len(data)
        for _ in range(BURST - 1):
            if size >= BURST_BYTES:
                break
            try:
                data = recv(bufsize, dontwait)
            except BlockingIOError:
                break
            burst.append(data)
            size += len(data)
        payload = dumps(burst, protocol)
        view = memoryview(pack(len(payload)) + payload)
        while view:
            view = view[os.write(pipe_fd, view) :]


def _shut_for_reading(sock: socket.socket) -> bool:
    """After an empty read: was it the shutdown, or a zero-length datagram (which the parent discards as malformed)?"""
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLRDHUP)
    return any(event & select.POLLRDHUP for _, event in poller.poll(0))


def _die_with_parent(parent_pid: int) -> None:
    import ctypes

    pr_set_pdeathsig = 1
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        sys.exit(0)


def main(argv: list[str] | None = None) -> int:
    """``python -m bruce.proxy.intake.intake_reader SOCKET_FD PIPE_FD BUFSIZE PARENT_PID`` (started by
    ReaderProcess)."""
    sock_fd, pipe_fd, bufsize, parent_pid = (int(a) for a in (argv if argv is not None else sys.argv[1:]))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _die_with_parent(parent_pid)
    sock = socket.socket(fileno=sock_fd)
    with contextlib.suppress(BrokenPipeError):  # the parent is gone: nobody is left to read
        forward(sock, pipe_fd, bufsize)
    return 0


if __name__ == "__main__":
    sys.exit(main())
