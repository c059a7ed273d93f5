"""plog input: Airbnb plog's UDP and TCP protocol as an input of the daemon (see docs/plog.md).

A listener (:func:`make_listener`, one per :class:`ListenerConfig`) hands what it reads to a :class:`PlogSink`;
:class:`bruce.proxy.daemon.plog_inputs.PlogInputs` is the daemon's sink and runs its listeners (``start()`` at startup,
``stop()`` at shutdown, before the batches are flushed). ``inputs`` is not imported here: the configuration reads
:mod:`.config` without pulling in the daemon's parts.
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
