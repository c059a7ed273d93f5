"""The parent side of the reader process: start it on the input socket, feed what it forwards to the intake.

Why a process: the kernel queues only ~11 datagrams per UNIX datagram socket, so whenever the daemon's event loop is
busy for more than a few dozen microseconds (building a batch, compressing, parsing a response) clients block or get
EAGAIN. The child (:mod:`bruce.proxy.intake.intake_reader`) does nothing but read: it is back in ``recv`` within
microseconds, and its pipe (1 MiB where the system allows) holds thousands of datagrams until the loop gets to them.
The loop then reads the pipe in 64 KiB chunks, hundreds of datagrams per wake-up instead of ~11, each burst one
unpickled list (figures in :mod:`bruce.proxy.intake.intake`, from bench/intake_bench.py and bench/proxy_bench.py).

Rules:
- At most 64 KiB is read per wake-up (about a millisecond of processing) so other work in the loop keeps its turn; a
  frame split across reads is joined once complete.
- End of the pipe before :meth:`ReaderProcess.wait_finished` asked for it means the child died: an
  :class:`~bruce.proxy.intake.socket_path.IntakeError` goes to ``on_error`` (``serve()`` raises it).
- Shutdown: after the socket is shut for reading, the child forwards what was queued and exits; the parent reads the
  pipe to its end. A child that does not finish in time is killed (by its PID) and what it left in the pipe is read.
- Bounded: one burst in the child, the pipe, one read plus one partial frame here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Iterable
from itertools import chain
from typing import Protocol

from .intake_reader import FRAME
from .socket_path import IntakeError

READ_SIZE = 64 * 1024  # bytes read from the pipe per wake-up
PIPE_SIZE = 1024 * 1024  # requested pipe capacity (Linux caps it at /proc/sys/fs/pipe-max-size for non-root)
STOP_TIMEOUT_S = 5.0


class ReaderTarget(Protocol):
    """What the reader process needs of the intake it feeds (:class:`~.intake.DatagramIntake`)."""

    max_input_msg_size: int

    @property
    def fileno(self) -> int: ...

    def clock(self) -> float: ...

    def feed(self, datagrams: Iterable[bytes], now: float) -> int: ...


class ReaderProcess:
    """The parent side: starts the child on the intake's socket and feeds what arrives on the pipe to the intake."""

    def __init__(
        self, intake: ReaderTarget, loop: asyncio.AbstractEventLoop, on_error: Callable[[BaseException], None]
    ) -> None:
        self.intake = intake
        self.loop = loop
        self.on_error = on_error
        self.process: subprocess.Popen[bytes] | None = None
        self.finished: asyncio.Future[None] = loop.create_future()  # the pipe reached its end
        self.stopping = False  # the end of the pipe is expected (the socket was shut for reading)
        self._fd = -1
        self._pending: list[bytes] = []  # the pieces of an incomplete frame
        self._pending_size = 0
        self._need = 0  # bytes the pending frame needs before it is worth joining

    def start(self) -> None:
        r, w = os.pipe()
        try:
            import fcntl

            with contextlib.suppress(OSError, AttributeError):
                fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
            sock_fd = self.intake.fileno
            args = [str(sock_fd), str(w), str(self.intake.max_input_msg_size + 1), str(os.getpid())]
            self.process = subprocess.Popen(
                [sys.executable, "-m", "bruce.proxy.intake.intake_reader", *args],
                pass_fds=(sock_fd, w),
                stdin=subprocess.DEVNULL,
            )
        except BaseException:
            os.close(r)
            raise
        finally:
            os.close(w)
        os.set_blocking(r, False)
        self._fd = r
        self.loop.add_reader(r, self._on_readable)

    def _on_readable(self) -> None:
        try:
            chunk = os.read(self._fd, READ_SIZE)
        except BlockingIOError:
            return
        except OSError as e:
            self._end(e)
            return
        if not chunk:
            self._end(None)
            return
        if self._pending:
            self._pending.append(chunk)
            self._pending_size += len(chunk)
            if self._pending_size < self._need:
                return
            chunk = b"".join(self._pending)
            self._pending = []
        view = memoryview(chunk)
        unpack = FRAME.unpack_from
        end = len(chunk)
        off = 0
        bursts = []
        try:
            while off + 4 <= end:
                (size,) = unpack(chunk, off)
                stop = off + 4 + size
                if stop > end:
                    break
                bursts.append(pickle.loads(view[off + 4 : stop]))
                off = stop
        except BaseException as e:
            self._end(e)
            return
        if off < end:
            rest = chunk[off:]
            self._pending = [rest]
            self._pending_size = len(rest)
            self._need = 4 + unpack(rest)[0] if len(rest) >= 4 else 4
        if bursts:
            try:  # one feed for all the bursts of this read: its fixed costs are paid once
                self.intake.feed(chain.from_iterable(bursts) if len(bursts) > 1 else bursts[0], self.intake.clock())
            except BaseException as e:
                self._end(e)

    def _end(self, error: BaseException | None) -> None:
        self._close_pipe()
        if error is None and not self.stopping:
            code = self.process.poll() if self.process is not None else None
            error = IntakeError(f"the intake reader process ended unexpectedly (exit status {code})")
        if not self.finished.done():
            self.finished.set_result(None)
        if error is not None:
            self.on_error(error)

    def _close_pipe(self) -> None:
        if self._fd >= 0:
            self.loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1
        if self._pending:
            self._pending = []  # an incomplete frame: the child was killed mid-write

    async def wait_finished(self, timeout: float = STOP_TIMEOUT_S) -> bool:
        """After the socket was shut for reading: wait until the child forwarded everything and exited. ``False`` if
        it had to be killed after ``timeout`` (datagrams it held are lost; what it left queued is still readable)."""
        self.stopping = True
        clean = True
        try:
            await asyncio.wait_for(asyncio.shield(self.finished), timeout)
        except TimeoutError:
            clean = False
        self.terminate()
        if not clean:
            self._drain_pipe()
        return clean

    def _drain_pipe(self) -> None:
        """Read what a killed child left in the pipe, to its end (no writer is left, so reads never wait)."""
        for _ in range(PIPE_SIZE // READ_SIZE + 2):
            if self._fd < 0:
                return
            self._on_readable()
        self._close_pipe()

    def terminate(self) -> None:
        """Stop the child (by its PID) if it still runs, and reap it."""
        proc = self.process
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait(STOP_TIMEOUT_S)

    def close(self) -> None:
        self.stopping = True
        self.terminate()
        self._close_pipe()
        if not self.finished.done():
            self.finished.set_result(None)
