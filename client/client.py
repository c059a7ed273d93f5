"""The Python client library: write messages to the bruce daemon's UNIX datagram socket.

Rules:
- One datagram per message, built by :mod:`bruce.wire.datagram` (AnyPartition: the daemon picks the partition;
  PartitionKey: partition = key mod partitions). The timestamp defaults to now, in epoch milliseconds.
- Blocking by default: when the daemon's socket queue is full, ``send`` waits (the daemon reads it within
  microseconds). A ``timeout`` (seconds; per client, or per send) bounds that wait: when the queue is still full at
  the end, :class:`SocketFullError` is raised and nothing is sent. ``blocking=False`` is ``timeout=0``: a full queue
  raises at once. The caller decides whether to drop, retry or buffer. A bounded send uses ``MSG_DONTWAIT`` and waits
  for room with ``poll``; an unbounded one is a plain blocking ``send``.
- Limits are checked before anything is sent: an empty or over-long topic (over 32767 bytes) and a datagram over
  ``max_datagram_size`` (the daemon's ``max_input_msg_size``, 65536 by default) raise :class:`TopicTooLargeError` /
  :class:`MessageTooLargeError` (both ``UsageError``). A datagram larger than the kernel's default send buffer allows
  makes the client raise ``SO_SNDBUF`` once (the daemon's ``allow_large_unix_datagrams`` case); if the kernel still
  refuses it, :class:`MessageTooLargeError`.
- Without a socket path, the daemon's default one (:func:`default_socket_path`, shared with the daemon and
  ``to_bruce``).
- The socket is connected once. If the daemon restarted (a new socket at the same path) the client reconnects once
  and resends; if no daemon is listening, :class:`DaemonUnavailableError`.
- A client is not thread-safe: use one per thread (they are cheap).
"""

from __future__ import annotations

import errno
import math
import os
import select
import socket
import time

from bruce.wire import TOPIC_MAX, BruceError, UsageError, build_any_partition, build_partition_key

SOCKET_NAME = "bruce.socket"
DEFAULT_MAX_DATAGRAM_SIZE = 65536  # the daemon's default max_input_msg_size
MAX_POLL_MS = 60_000  # one wait for room; a longer timeout polls again

_GONE = (errno.ENOENT, errno.ECONNREFUSED, errno.EPIPE, errno.ENOTCONN, errno.EDESTADDRREQ)
_FULL = (errno.EAGAIN, errno.EWOULDBLOCK, errno.ENOBUFS)


def default_socket_path() -> str:
    """The daemon's default input socket: ``$XDG_RUNTIME_DIR/bruce.socket`` when that variable is set, else
    ``${TMPDIR:-/tmp}/bruce-<uid>/bruce.socket`` (the daemon creates and checks that directory)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = runtime if runtime else os.path.join(os.environ.get("TMPDIR") or "/tmp", f"bruce-{os.geteuid()}")
    return os.path.join(base, SOCKET_NAME)


class SocketFullError(BruceError):
    """The daemon's socket queue is full (EAGAIN) and stayed full for the send's timeout (none for a non-blocking
    client); the message was not sent."""

    reason = "SOCKET_FULL"


class DaemonUnavailableError(BruceError):
    """No daemon is listening at the socket path (not running, or shutting down); the message was not sent."""

    reason = "DAEMON_UNAVAILABLE"


class TopicTooLargeError(UsageError):
    """The topic is empty or longer than 32767 bytes (Bruce's BRUCE_TOPIC_TOO_LARGE)."""

    reason = "TOPIC_TOO_LARGE"


class MessageTooLargeError(UsageError):
    """The datagram is larger than the daemon accepts or the kernel can carry (Bruce's BRUCE_MSG_TOO_LARGE)."""

    reason = "MSG_TOO_LARGE"


def now_ms() -> int:
    """The current time in epoch milliseconds: the default message timestamp."""
    return time.time_ns() // 1_000_000


class BruceClient:
    """A connection to the daemon's input socket.

    >>> with BruceClient() as bruce:  # doctest: +SKIP
    ...     bruce.send_any_partition("clicks", b'{"page": "/"}')
    ...     bruce.send_partition_key("orders", 42, b"order 42 paid", key=b"42")

    ``socket_path``: the daemon's ``--receive_socket_name``; without it, the daemon's default
    (:func:`default_socket_path`, as ``to_bruce`` finds it).

    Non-blocking, dropping what does not fit::

        bruce = BruceClient(path, blocking=False)
        try:
            bruce.send_any_partition("metrics", line)
        except SocketFullError:
            dropped += 1

    ``timeout`` (seconds, or ``None`` to wait as long as it takes) bounds how long a send waits for room in a full
    socket queue before it raises :class:`SocketFullError`; every send method also takes ``timeout=`` for that send
    alone (``None``: the client's). ``blocking=False`` means ``timeout=0``.
    """

    def __init__(
        self,
        socket_path: str | os.PathLike[str] | None = None,
        *,
        blocking: bool = True,
        timeout: float | None = None,
        max_datagram_size: int | None = DEFAULT_MAX_DATAGRAM_SIZE,
    ) -> None:
        if not blocking and timeout:
            raise UsageError("a non-blocking client never waits: give blocking=False or a timeout, not both")
        self.socket_path = os.fsencode(default_socket_path() if socket_path is None else socket_path)
        self.blocking = blocking
        self.timeout = _checked_timeout(timeout if blocking else 0.0)
        self.max_datagram_size = max_datagram_size
        self._sock: socket.socket | None = None
        self._sndbuf_raised = False

    # -- messages --------------------------------------------------------------------------------------------------

    def send_any_partition(
        self,
        topic: str | bytes,
        value: bytes,
        key: bytes = b"",
        timestamp: int | None = None,
        *,
        timeout: float | None = None,
    ) -> None:
        """Send one message; the daemon chooses the partition. ``timestamp``: epoch ms (default now)."""
        self.send_datagram(
            build_any_partition(_topic(topic), value, key, timestamp=now_ms() if timestamp is None else timestamp),
            timeout=timeout,
        )

    def send_partition_key(
        self,
        topic: str | bytes,
        partition_key: int,
        value: bytes,
        key: bytes = b"",
        timestamp: int | None = None,
        *,
        timeout: float | None = None,
    ) -> None:
        """Send one message to partition ``partition_key mod partitions`` (``partition_key``: a signed or unsigned
        32-bit integer). ``key`` is the Kafka record key, independent of ``partition_key``."""
        if not -(2**31) <= partition_key < 2**32:
            raise UsageError(f"partition key {partition_key} does not fit in 32 bits")
        if partition_key >= 2**31:
            partition_key -= 2**32  # the same 32 bits, as the wire's signed int32
        self.send_datagram(
            build_partition_key(
                _topic(topic),
                value,
                key,
                partition_key=partition_key,
                timestamp=now_ms() if timestamp is None else timestamp,
            ),
            timeout=timeout,
        )

    def send_datagram(self, datagram: bytes, *, timeout: float | None = None) -> None:
        """Send one prepared datagram as is (the daemon validates it; malformed ones are discarded and counted).
        ``timeout``: the longest wait for room, for this send (``None``: the client's)."""
        if self.max_datagram_size is not None and len(datagram) > self.max_datagram_size:
            raise MessageTooLargeError(
                f"datagram of {len(datagram)} bytes is larger than max_datagram_size={self.max_datagram_size} (the "
                "daemon's max_input_msg_size); a larger one would be discarded as too long"
            )
        wait = self.timeout if timeout is None else _checked_timeout(timeout)
        deadline = None if wait is None else time.monotonic() + wait
        sock = self._sock or self._connect()
        try:
            _send(sock, datagram, deadline)
            return
        except OSError as e:
            if e.errno in _FULL:
                raise self._error(e, len(datagram), wait) from e
            if e.errno == errno.EMSGSIZE and not self._sndbuf_raised:
                self._raise_sndbuf(len(datagram))
            elif e.errno in _GONE:
                self.close()
            else:
                raise self._error(e, len(datagram)) from e
        try:  # once more, after raising SO_SNDBUF or reconnecting (the daemon may have restarted)
            _send(self._sock or self._connect(), datagram, deadline)
        except OSError as e:
            if e.errno in _GONE:
                self.close()
            raise self._error(e, len(datagram), wait) from e

    # -- the socket ------------------------------------------------------------------------------------------------

    def _connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.connect(self.socket_path)
        except OSError as e:
            sock.close()
            raise self._error(e, 0) from e
        self._sock = sock  # blocking: a bounded send passes MSG_DONTWAIT
        self._sndbuf_raised = False
        return sock

    def _raise_sndbuf(self, size: int) -> None:
        assert self._sock is not None
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 2 * size + 4096)
        self._sndbuf_raised = True

    def _error(self, e: OSError, size: int, wait: float | None = None) -> BruceError:
        if e.errno in _FULL:
            state = f"stayed full for {wait:g} s" if wait else "is full"
            return SocketFullError(f"the daemon's socket {self._path_str} {state}; the message was not sent")
        if e.errno in _GONE:
            return DaemonUnavailableError(
                f"no bruce daemon is listening at {self._path_str} ({e.strerror}); the message was not sent"
            )
        if e.errno == errno.EMSGSIZE:
            return MessageTooLargeError(
                f"the kernel refuses a UNIX datagram of {size} bytes even with a raised SO_SNDBUF "
                "(see net.core.wmem_max); send smaller messages"
            )
        return BruceError(f"cannot send to the bruce daemon at {self._path_str}: {e.strerror or e}", reason="SEND")

    @property
    def _path_str(self) -> str:
        return os.fsdecode(self.socket_path)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> BruceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _send(sock: socket.socket, datagram: bytes, deadline: float | None) -> None:
    """Send ``datagram``: blocking without a deadline; else waiting for room (``poll``) until ``deadline``, then the
    last EAGAIN is raised."""
    if deadline is None:
        sock.send(datagram)
        return
    while True:
        try:
            sock.send(datagram, socket.MSG_DONTWAIT)
            return
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
        poller = select.poll()
        poller.register(sock, select.POLLOUT)
        poller.poll(min(math.ceil(left * 1000), MAX_POLL_MS))


def _checked_timeout(timeout: float | None) -> float | None:
    """``timeout`` if it is seconds ≥ 0 (infinity counts as None: no bound), else :class:`UsageError`."""
    if timeout is not None and not timeout >= 0:
        raise UsageError(f"timeout must be seconds >= 0, or None to wait as long as it takes; got {timeout}")
    return None if timeout == math.inf else timeout


def _topic(topic: str | bytes) -> bytes:
    raw = topic.encode("utf-8") if isinstance(topic, str) else bytes(topic)
    if not 0 < len(raw) <= TOPIC_MAX:
        raise TopicTooLargeError(f"topic of {len(raw)} bytes: a topic has 1 to {TOPIC_MAX} bytes")
    return raw
