"""The daemon's input: Bruce's UNIX datagram socket, read promptly, each datagram turned into a message or a discard.

Rules:
- The socket: a stale socket file at the path is unlinked before ``bind``; a live one (another process answers) and
  anything else at the path are errors, never deleted; with ``private_dir`` (the default path) its directory is
  created 0700 and verified first (:mod:`bruce.proxy.intake.socket_path`). The mode is applied with ``chmod`` when
  configured (else the umask rules); the path is unlinked on stop and on close, only while it is still our socket.
- Reading: the kernel queues only ~11 datagrams for all clients together (``net.unix.max_dgram_qlen`` + 1; SO_RCVBUF
  does not change it), so clients block (or get EAGAIN) whenever the reader is away for longer than ~11 datagrams'
  worth of traffic. ``bench/intake_bench.py`` compares reading in the loop (stock asyncio, uvloop), a reader thread
  and a reader process (docs/benchmarks.md, "Reading the input socket"): the reader process receives more datagrams
  per second for about the same CPU in all, half of it off the loop, and the clients block far less, most of all
  while the loop is busy. At a moderate paced rate it costs more CPU in all (both sides wake for a few datagrams each
  time); stock asyncio costs more than uvloop; a reader thread is the slowest (the GIL hands it the CPU only between
  the loop's slices). So ``reader="process"`` (:mod:`bruce.proxy.intake.intake_process`) is the default on Linux:
  clients wait only for the reader process's ``recv`` loop, never for the event loop. The loop reader
  (``add_reader``, then bursts of non-blocking reads) remains for other systems and for low-rate hosts that prefer
  the least CPU. docs/client.md tells operators when to raise ``net.unix.max_dgram_qlen``.
- One ``recv`` of ``max_input_msg_size + 1`` bytes per datagram: a datagram of exactly the limit is accepted, one byte
  more arrives truncated to limit + 1 and is discarded as LONG_MSG (too long), never as malformed (Bruce's off-by-one,
  fixed).
- What becomes of each datagram (parsing, LONG_MSG, the spool, the budget, the ``InputAgent*`` counters, the order of
  the outcomes) is :mod:`bruce.proxy.intake.intake_burst`'s: whichever the reader, each wake-up's datagrams go to
  ``DatagramIntake.feed`` (:meth:`IntakeBursts.feed <bruce.proxy.intake.intake_burst.IntakeBursts.feed>`) as one burst.
- Shutdown: :meth:`DatagramIntake.stop_accepting` unlinks the path (new clients get ENOENT) and shuts the socket for
  reading (connected clients get EPIPE; blocked ones get EPIPE as soon as there is room), then
  :meth:`DatagramIntake.drain` processes everything the kernel had already accepted. So every ``send`` that succeeded
  is read and accounted for (Bruce loses these silently).
- An exception while reading (or from the sink) stops reading and is raised by :meth:`DatagramIntake.serve`: it is a
  bug or a broken socket, and the daemon's task group must see it (the rest of that burst still gets its fate:
  :mod:`bruce.proxy.intake.intake_burst`).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from time import monotonic

from bruce.producer import Counters

from ..messages import MessageBudget
from ..spool import SpoolSlot
from .intake_burst import TOPIC_CACHE_SIZE, IntakeBursts, IntakeDiscards, MessageSink
from .intake_process import ReaderProcess
from .socket_path import IntakeError, check_not_live, ensure_private_dir

__all__ = [
    "DATAGRAM_SIZE_LIMIT",
    "DEFAULT_MAX_INPUT_MSG_SIZE",
    "DEFAULT_READER",
    "TOPIC_CACHE_SIZE",
    "DatagramIntake",
    "IntakeDiscards",
    "IntakeError",
    "MessageSink",
    "check_large_datagrams",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_INPUT_MSG_SIZE = 65536  # --max_input_msg_size: the whole datagram, in bytes
DATAGRAM_SIZE_LIMIT = 16 * 1024 * 1024  # Bruce's hard limit for --max_input_msg_size
DEFAULT_BURST = 256  # datagrams read per wake-up before yielding to the rest of the loop
DRAIN_TIMEOUT_S = 5.0  # how long drain() waits for the reader process to forward what it holds
READERS = ("process", "loop")
DEFAULT_READER = "process" if sys.platform == "linux" else "loop"


# -------------------------------------------------------------------------------------------- the large-datagram check


def check_large_datagrams(max_input_msg_size: int, *, allow_large_unix_datagrams: bool = False) -> int | None:
    """Bruce's startup check: can a client send a datagram of ``max_input_msg_size + 1`` bytes over a UNIX socket?

    Returns ``None`` when the default send buffer suffices, or the ``SO_SNDBUF`` a client needs when it only works with
    a larger one and ``allow_large_unix_datagrams`` is set. Raises :class:`IntakeError` otherwise.
    """
    if not 0 < max_input_msg_size <= DATAGRAM_SIZE_LIMIT:
        raise IntakeError(f"max_input_msg_size must be within 1..{DATAGRAM_SIZE_LIMIT} bytes, got {max_input_msg_size}")
    size = max_input_msg_size + 1
    if _send_one(size, sndbuf=None):
        return None
    sndbuf = 2 * size + 4096
    if not _send_one(size, sndbuf=sndbuf):
        raise IntakeError(
            f"max_input_msg_size={max_input_msg_size}: the kernel refuses UNIX datagrams of {size} bytes even with "
            f"SO_SNDBUF={sndbuf} (capped by net.core.wmem_max); lower max_input_msg_size or raise net.core.wmem_max"
        )
    if not allow_large_unix_datagrams:
        raise IntakeError(
            f"max_input_msg_size={max_input_msg_size}: UNIX datagrams of {size} bytes need SO_SNDBUF >= {sndbuf} on "
            "the client side (the default send buffer is too small); pass allow_large_unix_datagrams to accept that "
            "(clients must raise SO_SNDBUF; bruce.client.client does it) or lower max_input_msg_size"
        )
    log.warning(
        "datagrams up to max_input_msg_size=%d bytes need SO_SNDBUF >= %d on the client side",
        max_input_msg_size,
        sndbuf,
    )
    return sndbuf


def _send_one(size: int, *, sndbuf: int | None) -> bool:
    """Send one ``size``-byte datagram over a fresh socketpair and read it back whole."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with a, b:
        a.setblocking(False)
        b.setblocking(False)
        if sndbuf is not None:
            a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
        try:
            a.send(bytes(size))
        except OSError as e:
            if e.errno in (errno.EMSGSIZE, errno.ENOBUFS, errno.EAGAIN):
                return False
            raise
        return len(b.recv(size + 1)) == size


def _max_dgram_qlen() -> int | None:
    try:
        return int(Path("/proc/sys/net/unix/max_dgram_qlen").read_text())
    except (OSError, ValueError):
        return None


# ------------------------------------------------------------------------------------------------------ the intake


class DatagramIntake:
    """Bruce's input socket: bind it, read it (see ``reader``), hand each datagram's message to ``sink`` (the router)
    or its discard to ``discards`` (the accounting); spooled first when ``spool`` holds an open spool.

    ``reader="process"`` (the default on Linux) reads through a child process
    (:mod:`bruce.proxy.intake.intake_process`); ``reader="loop"`` reads in the event loop itself (``add_reader``).

    Lifecycle: ``open()`` → ``await serve()`` (returns after ``close()``); shutdown is ``stop_accepting()``, then
    ``await drain()``, then ``close()``. ``open`` / ``close`` also work as a context manager.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        sink: MessageSink,
        discards: IntakeDiscards,
        budget: MessageBudget,
        counters: Counters,
        spool: SpoolSlot | None = None,
        mode: int | None = None,
        private_dir: bool = False,
        max_input_msg_size: int = DEFAULT_MAX_INPUT_MSG_SIZE,
        reader: str = DEFAULT_READER,
        burst: int = DEFAULT_BURST,
        clock: Callable[[], float] = monotonic,
    ) -> None:
        if not 0 < max_input_msg_size <= DATAGRAM_SIZE_LIMIT:
            raise IntakeError(f"max_input_msg_size must be within 1..{DATAGRAM_SIZE_LIMIT} bytes")
        if reader not in READERS:
            raise IntakeError(f"reader must be one of {', '.join(READERS)}, got {reader!r}")
        if reader == "process" and sys.platform != "linux":
            raise IntakeError('reader="process" needs Linux; use reader="loop"')
        if burst < 1:
            raise IntakeError("burst must be at least 1")
        self.path = Path(path)
        self.sink = sink
        self.discards = discards
        self.budget = budget
        self.counters = counters
        self.bursts = IntakeBursts(
            sink=sink,
            discards=discards,
            budget=budget,
            counters=counters,
            max_input_msg_size=max_input_msg_size,
            spool=spool,
        )
        self.mode = mode
        self.private_dir = private_dir  # the default path: its directory is created 0700 and verified
        self.reader = reader
        self.burst = burst
        self.clock = clock
        self._sock: socket.socket | None = None
        self._identity: tuple[int, int] | None = None  # (st_dev, st_ino) of our socket file
        self._loop: asyncio.AbstractEventLoop | None = None
        self._serving: asyncio.Future[None] | None = None
        self._process: ReaderProcess | None = None
        self._reading = False  # the in-loop reader is registered
        self._topics = self.bursts.topics  # the decoded topic names (bounded)
        self._accepting = False
        self.feed = self.bursts.feed  # a burst of datagrams received at a monotonic time → messages or discards

    @property
    def max_input_msg_size(self) -> int:
        """The longest datagram accepted, in bytes (longer ones are discarded as LONG_MSG)."""
        return self.bursts.max_input_msg_size

    @max_input_msg_size.setter
    def max_input_msg_size(self, size: int) -> None:
        self.bursts.max_input_msg_size = size
        self.bursts.forget_layouts()  # a layout is known valid within the limit it was learned under

    @property
    def datagrams(self) -> int:
        """Datagrams processed so far."""
        return self.bursts.datagrams

    @property
    def wakeups(self) -> int:
        """Bursts processed so far (datagrams / wakeups = the mean burst)."""
        return self.bursts.wakeups

    # -- socket lifecycle ------------------------------------------------------------------------------------------

    def open(self) -> None:
        """Create the socket at ``path`` (replacing a stale socket file) and apply ``mode``.

        The socket's file description stays blocking (the reader process relies on it); this process reads it with
        ``MSG_DONTWAIT`` only."""
        if self._sock is not None:
            raise IntakeError("the input socket is already open")
        self.check_path()
        self._remove_stale()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.bind(os.fsencode(self.path))
            if self.mode is not None:
                os.chmod(self.path, self.mode)
            st = os.stat(self.path)
        except OSError as e:
            sock.close()
            raise IntakeError(f"cannot create the input socket {str(self.path)!r}: {e.strerror or e}") from e
        self._sock = sock
        self._identity = (st.st_dev, st.st_ino)
        self._accepting = True
        qlen = _max_dgram_qlen()
        log.info(
            "input socket %s: the kernel queues %s datagrams (net.unix.max_dgram_qlen=%s; docs/client.md)",
            self.path,
            "?" if qlen is None else qlen + 1,
            qlen,
        )

    def check_path(self) -> None:
        """Can the socket be created at ``path``? Its private directory verified (``private_dir``), no live socket
        there (:class:`~bruce.proxy.intake.socket_path.SocketPathError` otherwise). Also done by :meth:`open`."""
        if self.private_dir:
            ensure_private_dir(str(self.path.parent))
        check_not_live(str(self.path))

    def _remove_stale(self) -> None:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return
        except OSError as e:
            raise IntakeError(f"cannot inspect the input socket path {str(self.path)!r}: {e.strerror or e}") from e
        if not stat.S_ISSOCK(st.st_mode):
            raise IntakeError(
                f"input socket path {str(self.path)!r} exists and is not a socket; remove it or pick another"
            )
        try:
            os.unlink(self.path)
        except OSError as e:
            raise IntakeError(
                f"cannot replace the stale input socket {str(self.path)!r}: {e.strerror} (it belongs to uid "
                f"{st.st_uid}); remove it as its owner or pick another --receive_socket_name"
            ) from e

    def _unlink_ours(self) -> None:
        if self._identity is None:
            return
        try:
            st = os.lstat(self.path)
            if (st.st_dev, st.st_ino) == self._identity:
                os.unlink(self.path)
        except FileNotFoundError:
            pass
        self._identity = None

    @property
    def fileno(self) -> int:
        if self._sock is None:
            raise IntakeError("the input socket is not open")
        return self._sock.fileno()

    @property
    def accepting(self) -> bool:
        return self._accepting

    def stop_accepting(self) -> None:
        """Refuse new datagrams: unlink the path (new clients get ENOENT) and shut the socket for reading (connected
        clients get EPIPE). Datagrams the kernel already accepted stay queued for :meth:`drain`."""
        if self._sock is None or not self._accepting:
            return
        self._accepting = False
        self._stop_loop_reader()  # a socket shut for reading polls readable forever
        self._unlink_ours()
        self._sock.shutdown(socket.SHUT_RD)

    async def drain(self, timeout: float = DRAIN_TIMEOUT_S) -> int:
        """Stop accepting (if not yet), then process every datagram the kernel had accepted; returns how many.

        With the reader process: wait (up to ``timeout``) until it forwarded the rest and exited, then read whatever
        is still queued directly (only if it had to be killed)."""
        self.stop_accepting()
        before = self.datagrams
        if self._process is not None and not await self._process.wait_finished(timeout):
            log.warning("the intake reader process did not finish within %.1f s and was killed", timeout)
        while self._read_burst(self.burst):
            pass
        return self.datagrams - before

    def close(self) -> None:
        """Stop reading, close the socket and unlink the path. Datagrams still queued are lost: drain() first."""
        self._stop_loop_reader()
        if self._process is not None:
            self._process.close()
        if self._serving is not None and not self._serving.done():
            self._serving.set_result(None)
        self._unlink_ours()
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._accepting = False

    def __enter__(self) -> DatagramIntake:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- event loop integration ------------------------------------------------------------------------------------

    async def serve(self) -> None:
        """Read datagrams as they arrive until :meth:`close`; raises what broke reading (or the sink)."""
        if self._serving is not None:
            raise IntakeError("serve() runs once per intake")
        if self._sock is None:
            self.open()
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._serving = loop.create_future()
        try:
            if self.reader == "process":
                self._process = ReaderProcess(self, loop, self._fail)
                self._process.start()
            else:
                loop.add_reader(self.fileno, self._on_readable)
                self._reading = True
            await self._serving
        finally:
            self._stop_loop_reader()
            if self._process is not None:
                self._process.close()
            self._loop = None

    def _stop_loop_reader(self) -> None:
        if self._reading and self._loop is not None and self._sock is not None:
            self._loop.remove_reader(self._sock.fileno())
        self._reading = False

    def _fail(self, error: BaseException) -> None:
        """Stop reading and make ``serve()`` raise ``error`` (never left to the loop's exception handler)."""
        self._stop_loop_reader()
        if self._serving is not None and not self._serving.done():
            self._serving.set_exception(error)
        else:
            log.error("intake failed after it stopped serving", exc_info=error)

    def _on_readable(self) -> None:
        try:
            self._read_burst(self.burst)
        except BaseException as e:
            self._fail(e)

    # -- the hot path ----------------------------------------------------------------------------------------------

    def _read_burst(self, limit: int) -> int:
        """Read up to ``limit`` queued datagrams without blocking, then process them; returns how many were read.

        Reading the whole burst before processing it empties the kernel queue as early as possible, so blocked
        clients resume while the burst is processed."""
        sock = self._sock
        if sock is None:
            return 0
        recv = sock.recv
        bufsize = self.max_input_msg_size + 1
        dontwait = socket.MSG_DONTWAIT
        batch: list[bytes] = []
        append = batch.append
        for _ in range(limit):
            try:
                append(recv(bufsize, dontwait))
            except BlockingIOError:
                break
        if batch:
            self.feed(batch, self.clock())
        return len(batch)
