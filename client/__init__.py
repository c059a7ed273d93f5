"""bruce.client — how applications talk to the bruce daemon: :class:`BruceClient` writes datagrams to its UNIX
socket (docs/client.md), and the ``to_bruce`` command (:mod:`bruce.client.to_bruce`) does it from a shell.

Rule: depends on :mod:`bruce.wire` only (the datagram format, errors and Kafka's topic-name rule), so an
application needs nothing of the daemon or the producer to send (tests/test_layering.py checks it).
"""

from __future__ import annotations

from .client import (
    DEFAULT_MAX_DATAGRAM_SIZE,
    SOCKET_NAME,
    BruceClient,
    DaemonUnavailableError,
    MessageTooLargeError,
    SocketFullError,
    TopicTooLargeError,
    default_socket_path,
    now_ms,
)

__all__ = [
    "DEFAULT_MAX_DATAGRAM_SIZE",
    "SOCKET_NAME",
    "BruceClient",
    "DaemonUnavailableError",
    "MessageTooLargeError",
    "SocketFullError",
    "TopicTooLargeError",
    "default_socket_path",
    "now_ms",
]
