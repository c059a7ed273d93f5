"""Talking to one broker: a negotiated, authenticated connection, and what the producer keeps about reaching brokers.

Modules: ``framing`` (the sans-I/O core: frames, correlation ids, in-flight FIFO, frame cap), ``broker_connection``
(its asyncio shell: :func:`open_connection`, :class:`BrokerConnection`, timeouts, TLS, version negotiation, SASL),
``sasl`` (SaslHandshake + SaslAuthenticate, PLAIN and SCRAM), ``backoff`` (reconnect and pause backoffs),
``trouble`` (broker trouble in the log), ``health`` (what the status pages show of brokers and queues).
Rule: imports only the top-level vocabulary and :mod:`bruce.producer.config` (see
docs/architecture.md#the-floors-of-bruceproducer).
"""

from __future__ import annotations

from .backoff import ExponentialBackoff, PauseBackoff, jittered
from .broker_connection import BrokerConnection, Timeouts, open_connection, reauthenticate
from .health import (
    AUTH_FAILED,
    CONNECT_FAILED,
    CONNECTED,
    DISCONNECTED,
    IDLE,
    BootstrapState,
    BrokerHealth,
    BrokerState,
    TopicQueueStats,
)
from .sasl import AuthenticationFailed
from .trouble import BrokerTrouble

__all__ = [
    "AUTH_FAILED",
    "CONNECTED",
    "CONNECT_FAILED",
    "DISCONNECTED",
    "IDLE",
    "AuthenticationFailed",
    "BootstrapState",
    "BrokerConnection",
    "BrokerHealth",
    "BrokerState",
    "BrokerTrouble",
    "ExponentialBackoff",
    "PauseBackoff",
    "Timeouts",
    "TopicQueueStats",
    "jittered",
    "open_connection",
    "reauthenticate",
]
