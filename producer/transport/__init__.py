"""Talking to one broker: a negotiated, authenticated connection, and what the producer keeps about reaching brokers.

Modules: ``framing`` (the sans-I/O core: frames, correlation ids, in-flight FIFO, frame cap), ``broker_connection``
(its asyncio shell: :func:`open_connection`, :class:`BrokerConnection`, timeouts, TLS, version negotiation, SASL),
``sasl`` (SaslHandshake + SaslAuthenticate, PLAIN and SCRAM), ``backoff`` (reconnect and pause backoffs),
``trouble`` (broker trouble in the log), ``health`` (a sender's connection state for the pages).
Rule: imports only the top-level vocabulary and :mod:`bruce.producer.config` (see
docs/architecture.md#the-floors-of-bruceproducer).
"""

from __future__ import annotations

from .backoff import ExponentialBackoff, PauseBackoff, jittered
from .broker_connection import BrokerConnection, Timeouts, open_connection, reauthenticate
from .health import AUTH_FAILED, CONNECT_FAILED, CONNECTED, DISCONNECTED, IDLE, BrokerHealth
from .sasl import AuthenticationFailed
from .trouble import BrokerTrouble

__all__ = [
    "AUTH_FAILED",
    "CONNECTED",
    "CONNECT_FAILED",
    "DISCONNECTED",
    "IDLE",
    "AuthenticationFailed",
    "BrokerConnection",
    "BrokerHealth",
    "BrokerTrouble",
    "ExponentialBackoff",
    "PauseBackoff",
    "Timeouts",
    "jittered",
    "open_connection",
    "reauthenticate",
]
