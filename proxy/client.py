"""The Python client library: write messages to the bruce daemon's UNIX datagram socket.

Rules:
- One datagram per message, built by :mod:`bruce.wire.datagram` (AnyPartition: the daemon picks the partition;
  PartitionKey: partition = key mod partitions). The timestamp defaults to now, in epoch milliseconds.
- Blocking by default: when the daemon's socket queue is full, ``send`` waits (the daemon reads it within
  microseconds). With ``blocking=False`` a full queue raises :class:`SocketFullError` at once and nothing is sent: the
  caller decides whether to drop, retry or buffer.
- Limits are checked before anything is sent: an empty or over-long topic (over 32767 bytes) and a datagram over
  ``max_datagram_size`` (the daemon's ``max_input_msg_size``, 65536 by default) raise :class:`TopicTooLargeError` /
  :class:`MessageTooLargeError` (both ``UsageError``). A datagram larger than the kernel's default send buffer allows
  makes the client raise ``SO_SNDBUF`` once (the daemon's ``allow_large_unix_datagrams`` case); if the kernel still
  refuses it, :class:`MessageTooLargeError`.
- The socket is connected once. If the daemon restarted (a new socket at the same path) the client reconnects once
  and resends; if no daemon is listening, :class:`DaemonUnavailableError`.
- A client is not thread-safe: use one per thread (they are cheap).
"""

from __future__ import annotations

import errno
import os
import socket
import time

from bruce.wire.datagram import TOPIC_MAX, build_any_partition, build_partition_key
from bruce.wire.errors import BruceError, UsageError

DEFAULT_MAX_DATAGRAM_SIZE = 65536  # the daemon's default max_input_msg_size

_GONE = (errno.ENOENT, errno.ECONNREFUSED, errno.EPIPE, errno.ENOTCONN, errno.EDESTADDRREQ)
_FULL = (errno.EAGAIN, errno.EWOULDBLOCK, errno.ENOBUFS)


class SocketFullError(BruceError):
    """Non-blocking send: the daemon's socket queue is full (EAGAIN); the message was not sent."""

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

    >>> with BruceClient("/var/run/bruce/bruce.socket") as bruce:  # doctest: +SKIP
    ...     bruce.send_any_partition("clicks", b'{"page": "/"}')
    ...     bruce.send_partition_key("orders", 42, b"order 42 paid", key=b"42")

    Non-blocking, dropping what does not fit::

        bruce = BruceClient(path, blocking=False)
        try:
            bruce.send_any_partition("metrics", line)
        except SocketFullError:
            dropped += 1
    """

    def __init__(
        self,
        socket_path: str | os.PathLike[str],
        *,
        blocking: bool = True,
        max_datagram_size: int | None = DEFAULT_MAX_DATAGRAM_SIZE,
    ) -> None:
        self.socket_path = os.fsencode(socket_path)
        self.blocking = blocking
        self.max_datagram_size = max_datagram_size
        self._sock: socket.socket | None = None
        self._sndbuf_raised = False

    # -- messages --------------------------------------------------------------------------------------------------

    def send_any_partition(
        self, topic: str | bytes, value: bytes, key: bytes = b"", timestamp: int | None = None
    ) -> None:
        """Send one message; the daemon chooses the partition. ``timestamp``: epoch ms (default now)."""
        self.send_datagram(
            build_any_partition(_topic(topic), value, key, timestamp=now_ms() if timestamp is None else timestamp)
        )

    def send_partition_key(
        self, topic: str | bytes, partition_key: int, value: bytes, key: bytes = b"", timestamp: int | None = None
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
            )
        )

    def send_datagram(self, datagram: bytes) -> None:
        """Send one prepared datagram as is (the daemon validates it; malformed ones are discarded and counted)."""
        if self.max_datagram_size is not None and len(datagram) > self.max_datagram_size:
            raise MessageTooLargeError(
                f"datagram of {len(datagram)} bytes is larger than max_datagram_size={self.max_datagram_size} (the "
                "daemon's max_input_msg_size); a larger one would be discarded as too long"
            )
        sock = self._sock or self._connect()
        try:
            sock.send(datagram)
            return
        except OSError as e:
            if e.errno in _FULL:
                raise SocketFullError(f"the daemon's socket {self._path_str} is full; the message was not sent") from e
            if e.errno == errno.EMSGSIZE and not self._sndbuf_raised:
                self._raise_sndbuf(len(datagram))
            elif e.errno in _GONE:
                self.close()
            else:
                raise self._error(e, len(datagram)) from e
        try:  # once more, after raising SO_SNDBUF or reconnecting (the daemon may have restarted)
            (self._sock or self._connect()).send(datagram)
        except OSError as e:
            if e.errno in _GONE:
                self.close()
            raise self._error(e, len(datagram)) from e

    # -- the socket ------------------------------------------------------------------------------------------------

    def _connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.connect(self.socket_path)
        except OSError as e:
            sock.close()
            raise self._error(e, 0) from e
        sock.setblocking(self.blocking)
        self._sock = sock
        self._sndbuf_raised = False
        return sock

    def _raise_sndbuf(self, size: int) -> None:
        assert self._sock is not None
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 2 * size + 4096)
        self._sndbuf_raised = True

    def _error(self, e: OSError, size: int) -> BruceError:
        if e.errno in _FULL:
            return SocketFullError(f"the daemon's socket {self._path_str} is full; the message was not sent")
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


def _topic(topic: str | bytes) -> bytes:
    raw = topic.encode("utf-8") if isinstance(topic, str) else bytes(topic)
    if not 0 < len(raw) <= TOPIC_MAX:
        raise TopicTooLargeError(f"topic of {len(raw)} bytes: a topic has 1 to {TOPIC_MAX} bytes")
    return raw
