"""plog input: Airbnb plog's UDP and TCP protocol as an input of the daemon (see docs/plog.md).

A listener (:func:`make_listener`, one per :class:`ListenerConfig`) hands what it reads to a :class:`PlogSink`;
:class:`bruce.proxy.daemon.plog_inputs.PlogInputs` is the daemon's sink and runs its listeners (``start()`` at startup,
``stop()`` at shutdown, before the batches are flushed). The listeners' settings are
:class:`bruce.proxy.config.ListenerConfig` (the configuration's floor, below this one).
"""

from __future__ import annotations

from .listeners import Listener, TcpListener, UdpListener, make_listener
from .sink import PlogSink

__all__ = [
    "Listener",
    "PlogSink",
    "TcpListener",
    "UdpListener",
    "make_listener",
]
