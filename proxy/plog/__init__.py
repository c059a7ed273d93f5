"""plog input: Airbnb plog's UDP and TCP protocol as an input of the daemon (see docs/plog.md).

The daemon implements :class:`PlogSink`, builds one listener per :class:`ListenerConfig` with :func:`make_listener`,
awaits ``start()`` at startup and ``stop()`` at shutdown (before flushing its batches).
"""

from __future__ import annotations

from .config import ListenerConfig, PlogConfigError, listeners_from_section
from .listeners import Listener, TcpListener, UdpListener, make_listener
from .sink import PlogSink

__all__ = [
    "Listener",
    "ListenerConfig",
    "PlogConfigError",
    "PlogSink",
    "TcpListener",
    "UdpListener",
    "listeners_from_section",
    "make_listener",
]
