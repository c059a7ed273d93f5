"""bruce.proxy.status — the daemon's status interface: Bruce's plain/JSON pages, an HTML front page and Prometheus
metrics, served by aiohttp inside the daemon's event loop (see docs/status.md).

The daemon implements :class:`StatusSource` and runs::

    server = StatusServer(source)
    await server.start("127.0.0.1", 9090)
    ...
    await server.stop()
"""

from __future__ import annotations

from .history import RateHistory, RateSample
from .server import DEFAULT_HOST, DEFAULT_PORT, StatusBindError, StatusServer, check_status_port
from .source import (
    BootstrapState,
    BrokerState,
    CounterSet,
    Gauge,
    MetadataTimes,
    QueueStats,
    ServerInfo,
    StatusSource,
    TopicQueue,
)

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "BootstrapState",
    "BrokerState",
    "CounterSet",
    "Gauge",
    "MetadataTimes",
    "QueueStats",
    "RateHistory",
    "RateSample",
    "ServerInfo",
    "StatusBindError",
    "StatusServer",
    "StatusSource",
    "TopicQueue",
    "check_status_port",
]
