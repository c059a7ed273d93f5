"""The daemon's input: Bruce's UNIX datagram socket, read promptly, each datagram turned into a message or a discard.

Rules:
- The socket: a stale socket file at the path is unlinked before ``bind``; a live one (another process answers) and
  anything else at the path are errors, never deleted; with ``private_dir`` (the default path) its directory is
  created 0700 and verified first (:mod:`bruce.proxy.socket_path`). The mode is applied with ``chmod`` when
  configured (else the umask rules); the path is unlinked on stop and on close, only while it is still our socket.
- Reading: the kernel queues only ~11 datagrams for all clients together (``net.unix.max_dgram_qlen`` + 1; SO_RCVBUF
  does not change it), so clients block (or get EAGAIN) whenever the reader is away for longer than ~11 datagrams'
  worth of traffic. ``bench/intake_bench.py`` compared reading in the loop (stock asyncio, uvloop), a reader thread
  and a reader process; on 2 CPUs with two flat-out senders (100-byte values) it measured, per datagram: uvloop in
  the loop 3.0-3.4 µs of CPU, 250-330k datagrams/s; the reader process 3.0-3.2 µs in all but only 1.4-1.5 µs in the
  loop, 340-400k/s, and when the loop is busy 5 ms in every 10, 290-330k/s against 215k/s with the clients off-CPU
  half as long. At a moderate paced rate (100k/s) the reader process costs more in all (both sides wake for a few
  datagrams each time). Stock asyncio costs ~20% more than uvloop; a reader thread is the slowest (the GIL hands it
  the CPU only between the loop's slices). So ``reader="process"`` (:mod:`bruce.proxy.intake_process`) is the
  default on Linux: clients wait only for the reader process's ``recv`` loop, never for the event loop. The loop
  reader (``add_reader``, then bursts of non-blocking reads) remains for other systems and for low-rate hosts that
  prefer the least CPU. docs/client.md tells operators when to raise ``net.unix.max_dgram_qlen``.
- One ``recv`` of ``max_input_msg_size + 1`` bytes per datagram: a datagram of exactly the limit is accepted, one byte
  more arrives truncated to limit + 1 and is discarded as LONG_MSG (too long), never as malformed (Bruce's off-by-one,
  fixed).
- Each datagram is parsed by :func:`bruce.wire.datagram.parse_datagram` (in the loop, whichever the reader: see
  :mod:`bruce.proxy.intake_reader` for why); failures are discarded as MALFORMED, API_KEY(n) or VERSION(n); a message
  whose charge does not fit the :class:`~bruce.proxy.budget.MessageBudget` is discarded as NO_MEM. Every outcome
  reaches the :class:`IntakeSink` exactly once, in the datagrams' order, and is counted with Bruce's ``InputAgent*``
  names, once per burst rather than per datagram.
- Cheap per datagram: a burst (one wake-up's datagrams) is parsed into messages first; when it has no discard and
  fits the budget whole, its charge is reserved in one step (then every message of it fits) and its messages are
  handed over; otherwise they are reserved one by one, so NO_MEM falls on exactly the messages a reservation per
  message would refuse. tests/proxy/intake/test_intake_bursts.py checks that equivalence.
- With the durable spool (``spool``), each burst's valid messages are appended to it in one call after parsing and
  before the budget sees them; each gets its sequence (``spool_seq``). A burst the spool refuses (full, with the
  discard policy) is discarded as SPOOL_FULL; one it does not hold (full with the memory policy, degraded) goes on
  memory-only. A spooled message that finds no room in the budget (or arrives while others are) is held on disk
  only (``spool.cursor.hold``: :mod:`bruce.proxy.spooling` routes it later) instead of NO_MEM.
- Shutdown: :meth:`DatagramIntake.stop_accepting` unlinks the path (new clients get ENOENT) and shuts the socket for
  reading (connected clients get EPIPE; blocked ones get EPIPE as soon as there is room), then
  :meth:`DatagramIntake.drain` processes everything the kernel had already accepted. So every ``send`` that succeeded
  is read and accounted for (Bruce loses these silently).
- An exception while reading (or from the sink) stops reading and is raised by :meth:`DatagramIntake.serve`: it is a
  bug or a broken socket, and the daemon's task group must see it. The datagrams of the burst after the one the sink
  failed on still get a fate: their discards are reported as they are, their messages discarded as SERVER_SHUTDOWN
  (the daemon is stopping); the one the sink failed on holds its reservation (its fate is unknown).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import stat
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from time import monotonic
from typing import Protocol

from bruce.producer.counters import Counters
from bruce.producer.reasons import DiscardReason
from bruce.wire.datagram import parse_datagram
from bruce.wire.errors import MalformedInput, UnsupportedApiKey, UnsupportedVersion

from .budget import MessageBudget
from .intake_process import ReaderProcess
from .message import Message
from .socket_path import SocketPathError, check_not_live, ensure_private_dir
from .spool import SPOOL_FULL, Spool, SpoolMessage

log = logging.getLogger(__name__)

DEFAULT_MAX_INPUT_MSG_SIZE = 65536  # --max_input_msg_size: the whole datagram, in bytes
DATAGRAM_SIZE_LIMIT = 16 * 1024 * 1024  # Bruce's hard limit for --max_input_msg_size
DEFAULT_BURST = 256  # datagrams read per wake-up before yielding to the rest of the loop
DRAIN_TIMEOUT_S = 5.0  # how long drain() waits for the reader process to forward what it holds
TOPIC_CACHE_SIZE = 4096  # distinct topic names kept decoded (cleared when full)
READERS = ("process", "loop")
DEFAULT_READER = "process" if sys.platform == "linux" else "loop"

# A datagram discarded before it became a message: its position in the burst, reason, detail, counter, bytes.
_Unparsed = tuple[int, DiscardReason, int | None, str, bytes]


class IntakeError(SocketPathError):
    """The input socket cannot be set up as configured (the message says what to change)."""


class IntakeSink(Protocol):
    """Where the intake hands every datagram's outcome (implemented by the daemon). Called in the event loop; the two
    discard methods have the signatures of ``DiscardTracker.record`` and ``DiscardTracker.record_unparsed``."""

    def on_message(self, msg: Message) -> None:
        """A valid message, its charge already reserved in the budget: its fate is now the daemon's."""

    def on_discard(self, reason: DiscardReason, topic: str, key: bytes, value: bytes, client_ts: int) -> None:
        """A datagram that parsed was discarded (NO_MEM: the budget is full)."""

    def on_unparsed(self, reason: DiscardReason, datagram: bytes, *, detail: int | None = None) -> None:
        """A datagram that did not parse: MALFORMED, API_KEY (``detail`` = the API key), VERSION (``detail`` = the
        version) or LONG_MSG (longer than the limit; ``datagram`` holds its first limit + 1 bytes)."""


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
            "(clients must raise SO_SNDBUF; bruce.proxy.client does it) or lower max_input_msg_size"
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
    """Bruce's input socket: bind it, read it (see ``reader``), hand each datagram's outcome to ``sink``.

    ``reader="process"`` (the default on Linux) reads through a child process (:mod:`bruce.proxy.intake_process`);
    ``reader="loop"`` reads in the event loop itself (``add_reader``).

    Lifecycle: ``open()`` → ``await serve()`` (returns after ``close()``); shutdown is ``stop_accepting()``, then
    ``await drain()``, then ``close()``. ``open`` / ``close`` also work as a context manager.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        sink: IntakeSink,
        budget: MessageBudget,
        counters: Counters,
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
        self.budget = budget
        self.counters = counters
        self.mode = mode
        self.private_dir = private_dir  # the default path: its directory is created 0700 and verified
        self.max_input_msg_size = max_input_msg_size
        self.reader = reader
        self.burst = burst
        self.clock = clock
        self.datagrams = 0  # datagrams processed so far
        self.wakeups = 0  # bursts processed so far (datagrams / wakeups = mean burst)
        self._sock: socket.socket | None = None
        self._identity: tuple[int, int] | None = None  # (st_dev, st_ino) of our socket file
        self._loop: asyncio.AbstractEventLoop | None = None
        self._serving: asyncio.Future[None] | None = None
        self._process: ReaderProcess | None = None
        self._reading = False  # the in-loop reader is registered
        self._topics: dict[bytes, str] = {}
        self._accepting = False
        self.spool: Spool | None = None  # the durable spool, when it is on (set by the daemon)

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
        there (:class:`~bruce.proxy.socket_path.SocketPathError` otherwise). Also done by :meth:`open`."""
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

    def feed(self, datagrams: Iterable[bytes], now: float) -> int:
        """Process datagrams (each as received, up to ``max_input_msg_size + 1`` bytes) received at monotonic time
        ``now``: every one becomes a message for ``sink.on_message`` or a discard, in order. Returns the messages
        created.

        The burst is parsed first; when it has no discard and all of it fits the budget (then every message fits),
        its charge is reserved in one step and its messages are handed over. Otherwise each message is reserved in
        turn, so exactly those that do not fit are discarded as NO_MEM."""
        max_size = self.max_input_msg_size
        topic_for = self._topics.get
        messages: list[Message] = []
        append = messages.append
        unparsed: list[_Unparsed] = []
        spool = self.spool
        spooled: list[SpoolMessage] = []
        charges = 0
        for data in datagrams:
            if len(data) > max_size:
                unparsed.append((len(messages), DiscardReason.LONG_MSG, None, "InputAgentDiscardMsgTooLong", data))
                continue
            try:
                _, raw_topic, timestamp, key, value, partition_key = parse_datagram(data)
            except MalformedInput as e:
                unparsed.append((len(messages), *_classify(e), data))
                continue
            topic = topic_for(raw_topic)
            if topic is None:
                topic = self._topic_name(raw_topic)
            msg = Message(topic, key, value, timestamp, partition_key, now)
            charges += msg.charge
            append(msg)
            if spool is not None:
                spooled.append((raw_topic, partition_key, key, value, timestamp))  # a SpoolMessage's fields
        self.wakeups += 1
        self.datagrams += len(messages) + len(unparsed)
        refused = None
        if spooled:
            refused = self._spool(spool, spooled, messages)  # type: ignore[arg-type]
        if (
            refused is not None
            or unparsed
            or (spool is not None and spool.cursor.start is not None)  # behind: held on disk only, in order
            or not self.budget.try_reserve_many(charges, len(messages))
        ):
            return self._admit_in_order(messages, unparsed, refused)
        self._count_created(len(messages))
        deliver = self.sink.on_message
        try:
            for msg in messages:
                deliver(msg)
        except BaseException:  # the sink failed (serve() raises it): settle the messages it never saw
            rest = messages[next(i for i, m in enumerate(messages) if m is msg) + 1 :]
            if rest:
                self.budget.release(sum(m.charge for m in rest), len(rest))
                self._discard_unrouted(rest)
            raise
        return len(messages)

    @staticmethod
    def _spool(spool: Spool, spooled: list[SpoolMessage], messages: list[Message]) -> DiscardReason | None:
        """Append a burst to the spool and give its messages their sequences; SPOOL_FULL if it refused them."""
        first = spool.append(spooled)
        if first == SPOOL_FULL:
            return DiscardReason.SPOOL_FULL
        if first >= 0:
            for seq, msg in enumerate(messages, first):
                msg.spool_seq = seq
        return None

    def _admit_in_order(
        self, messages: list[Message], unparsed: list[_Unparsed], refused: DiscardReason | None = None
    ) -> int:
        """The slow path: the discards reported and the messages between them reserved one by one, in order
        (``refused``: every message is discarded for that reason)."""
        reserve = self.budget.try_reserve
        sink = self.sink
        cursor = self.spool.cursor if self.spool is not None else None
        created = handed = reported = on_disk = 0  # messages created, held on disk only; fates given
        try:
            for position in [*(u[0] for u in unparsed), len(messages)]:
                for msg in messages[handed:position]:
                    handed += 1
                    if refused is not None:
                        sink.on_discard(refused, msg.topic, msg.key, msg.value, msg.timestamp)
                    elif (
                        cursor is not None
                        and msg.spool_seq >= 0
                        and (cursor.start is not None or not reserve(msg.charge))
                    ):
                        on_disk += 1  # no room, or others are on disk: held there only (bruce.proxy.spooling)
                        cursor.hold(msg.spool_seq)
                    elif msg.spool_seq >= 0 or reserve(msg.charge):  # a spooled one here is reserved already
                        created += 1
                        sink.on_message(msg)
                    else:
                        self.counters.inc("InputAgentDiscardMsgNoMem")
                        sink.on_discard(DiscardReason.NO_MEM, msg.topic, msg.key, msg.value, msg.timestamp)
                if reported < len(unparsed):
                    _, reason, detail, counter, data = unparsed[reported]
                    reported += 1
                    self.counters.inc(counter)
                    sink.on_unparsed(reason, data, detail=detail)
        except BaseException:  # the sink failed (serve() raises it): settle what it never saw
            self._discard_unrouted(messages[handed:])
            for _, reason, detail, counter, data in unparsed[reported:]:
                self.counters.inc(counter)
                sink.on_unparsed(reason, data, detail=detail)
            raise
        finally:
            self._count_created(created)
            if on_disk:
                self.counters.inc("InputAgentGotOkMsg", on_disk)
        return created

    def _discard_unrouted(self, messages: list[Message]) -> None:
        """After the sink failed: messages that never reached it are discarded (the daemon is stopping)."""
        for msg in messages:
            self.sink.on_discard(DiscardReason.SERVER_SHUTDOWN, msg.topic, msg.key, msg.value, msg.timestamp)

    def _count_created(self, n: int) -> None:
        if n:
            self.counters.inc("InputAgentGotOkMsg", n)
            self.counters.inc("MsgCreate", n)

    def _topic_name(self, raw: bytes) -> str:
        """The shared ``str`` for a topic's bytes (bounded cache). Bytes that are not UTF-8 keep their bytes through
        ``surrogateescape``; no Kafka topic has such a name, so the router discards them as BAD_TOPIC."""
        if len(self._topics) >= TOPIC_CACHE_SIZE:
            self._topics.clear()
        name = self._topics[raw] = raw.decode("utf-8", "surrogateescape")
        return name


def _classify(error: MalformedInput) -> tuple[DiscardReason, int | None, str]:
    """A parse failure as (reason, detail, counter): Bruce's outcome class and ``InputAgent*`` counter for it."""
    if isinstance(error, UnsupportedApiKey):
        return DiscardReason.API_KEY, error.api_key, "InputAgentDiscardMsgUnsupportedApiKey"
    if isinstance(error, UnsupportedVersion):
        if error.api_key is None:
            counter = "InputAgentDiscardMsgUnsupportedVersion"  # a legacy-format datagram
        elif error.api_key == 256:
            counter = "InputAgentDiscardAnyPartitionMsgUnsupportedApiVersion"
        else:
            counter = "InputAgentDiscardPartitionKeyMsgUnsupportedApiVersion"
        return DiscardReason.VERSION, error.version, counter
    return DiscardReason.MALFORMED, None, "InputAgentDiscardMsgMalformed"
