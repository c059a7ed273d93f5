"""The producer's configuration: :class:`ProducerConfig`, the one table that reads and checks every setting, and the
security settings (TLS and SASL) with the client TLS context.

Modules: ``producer_config`` (:class:`ProducerConfig`, ``host:port`` parsing), ``setting_table`` (each setting's kind,
range and names; :func:`read`, the one reader of values), ``security`` (:class:`SecurityConfig`, :class:`Secret`,
:func:`client_context`).
Rule: the lowest wing of :mod:`bruce.producer`: imports only the top-level vocabulary (``errors``), see
docs/architecture.md#the-floors-of-bruceproducer.
"""

from __future__ import annotations

from .producer_config import CODECS, ProducerConfig, parse_host_port, servers
from .security import PLAINTEXT, REDACTED, SECRETS, Secret, SecurityConfig, client_context
from .security import PROPERTIES as SECURITY_PROPERTIES
from .setting_table import MAX_IN_FLIGHT, PARTITIONERS, PROTOCOLS, SETTINGS, is_secret
from .setting_table import NAMES as SETTING_NAMES
from .setting_table import read as read_setting

__all__ = [
    "CODECS",
    "MAX_IN_FLIGHT",
    "PARTITIONERS",
    "PLAINTEXT",
    "PROTOCOLS",
    "REDACTED",
    "SECRETS",
    "SECURITY_PROPERTIES",
    "SETTINGS",
    "SETTING_NAMES",
    "ProducerConfig",
    "Secret",
    "SecurityConfig",
    "client_context",
    "is_secret",
    "parse_host_port",
    "read_setting",
    "servers",
]
