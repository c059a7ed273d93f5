"""Loopback ports: the one the embedded broker gets, picked when the configuration is loaded.

Rules: 127.0.0.1 only. ``bruce``'s embedded broker takes Kafka's usual port :data:`KAFKA_PORT` when it is free (so
examples naming ``127.0.0.1:9092`` run as written), else a free port; a port is only "free a moment ago".
"""

from __future__ import annotations

import socket

KAFKA_PORT = 9092
"""Kafka's usual port: the embedded broker of ``bruce`` listens there when it is free."""


def port_is_free(port: int) -> bool:
    """Whether a listener could bind 127.0.0.1:``port`` now (as tansu binds: a port in TIME_WAIT counts as free)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def broker_port() -> int:
    """The port for ``bruce``'s embedded broker: :data:`KAFKA_PORT` when free, else a free one."""
    return KAFKA_PORT if port_is_free(KAFKA_PORT) else free_port()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
