"""The producer's settings table: each setting's kind, range and other names, and the one reader of its values.

Rules:
- :data:`SETTINGS` has one :class:`Setting` per :class:`~bruce.producer.ProducerConfig` field (its name is the
  field's), saying what values it takes; but ``bootstrap_servers`` (read by :mod:`bruce.producer.config`, which knows
  the listener prefixes) and ``security`` (:mod:`bruce.producer.config.security`'s table). :func:`read` turns a value
  given any way (a Python value, a text from a command line, a TOML or XML file or a Spark option) into the field's
  value, or raises :class:`ConfigError` naming the setting. Every way in goes through it, so every way in accepts and
  refuses the same values.
- Texts are read as librdkafka reads its string properties: integers in decimal (``"5"``), booleans as ``true`` or
  ``false`` (any case), ``acks`` also as ``all``. A float, a bool where a number is wanted, ``None`` (except for the
  settings whose default is ``None``), bytes or any other type is refused.
- :data:`NAMES` maps every accepted dotted name — librdkafka's (``linger.ms``), its aliases and the Java client's
  where they mean the same thing (``queue.buffering.max.ms``, ``delivery.timeout.ms``, ``compression.type``) — to the
  field. Security properties are :mod:`bruce.producer.config.security`'s table.
- An error never shows a value of a secret setting (:func:`is_secret`): a name containing ``password``, ``secret``
  or ``key`` material is shown redacted, whatever the value's shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from bruce.wire import Generation

from ..errors import ConfigError
from .security import REDACTED

INT32_MAX = 2**31 - 1
PROTOCOLS = tuple(g.value for g in Generation)  # auto, v0, modern
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
# librdkafka's partitioners (:mod:`bruce.producer.metadata.partitioner` implements them)
PARTITIONERS = ("murmur2_random", "murmur2", "consistent", "consistent_random", "fnv1a", "fnv1a_random", "random")
MAX_IN_FLIGHT = 5  # idempotent batches per producer and partition the broker remembers for deduplication
_INTEGER = re.compile(r"[+-]?[0-9]+")
_SECRET_WORDS = ("password", "secret", "key.pem", "private", "token", "credential")


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting: ``kind`` is ``int``, ``bool``, ``optional_bool`` (None = auto), ``choice`` or ``text``."""

    name: str
    kind: str
    low: int = 0
    high: int = INT32_MAX
    choices: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()

    @property
    def dotted(self) -> str:
        return self.name.replace("_", ".")


def _int(name: str, low: int, high: int = INT32_MAX, *aliases: str) -> Setting:
    return Setting(name, "int", low, high, aliases=aliases)


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        Setting("client_id", "text", high=32767),
        Setting("protocol", "choice", choices=PROTOCOLS),
        _int("acks", -1, 32767, "request.required.acks"),
        _int("replication_timeout_ms", 0),
        _int("request_timeout_ms", 1),
        _int("produce_request_data_limit", 0),
        _int("message_max_bytes", 1),
        Setting("empty_as_null", "bool"),
        Setting("compression_codec", "choice", choices=CODECS, aliases=("compression.type",)),
        _int("max_in_flight_per_broker", 1),
        Setting("enable_idempotence", "optional_bool"),
        _int("max_in_flight_requests_per_connection", 1, 1_000_000, "max.in.flight"),
        _int("linger_ms", 0, INT32_MAX, "queue.buffering.max.ms"),
        _int("batch_num_messages", 1),
        _int("batch_size", 1),
        _int("queue_buffering_max_messages", 1),
        _int("queue_buffering_max_kbytes", 1),
        _int("max_failed_delivery_attempts", 0),
        _int("retry_backoff_ms", 0),
        _int("socket_timeout_ms", 1),
        _int("connect_timeout_ms", 1, INT32_MAX, "socket.connection.setup.timeout.ms"),
        _int("reconnect_backoff_ms", 1),
        _int("reconnect_backoff_max_ms", 1),
        _int("min_pause_delay_ms", 0),
        _int("pause_rate_limit_initial_ms", 1),
        _int("pause_rate_limit_max_double", 0, 30),
        _int("dispatcher_restart_max_delay_ms", 0),
        _int("metadata_refresh_interval_ms", 1, INT32_MAX, "topic.metadata.refresh.interval.ms"),
        _int("metadata_min_interval_ms", 1),
        _int("metadata_retry_backoff_max_ms", 1),
        Setting("topic_autocreate", "bool"),
        _int("topic_create_timeout_ms", 1),
        _int("shutdown_max_delay_ms", 0),
        _int("message_timeout_ms", 0, INT32_MAX, "delivery.timeout.ms"),
        Setting("partitioner", "choice", choices=PARTITIONERS),
        Setting("transactional_id", "optional_text", high=32767),
        _int("transaction_timeout_ms", 1),
        Setting("state_path", "optional_text", high=4096),
        _int("state_sync_ms", 0),
        Setting("state_abandon", "bool"),
    )
}
NAMES: dict[str, str] = {s.dotted: s.name for s in SETTINGS.values()} | {
    alias: s.name for s in SETTINGS.values() for alias in s.aliases
}


def is_secret(name: str) -> bool:
    """A setting whose value must never be shown: its name speaks of a password, a secret or key material."""
    lowered = name.lower().replace("_", ".")
    return any(word in lowered for word in _SECRET_WORDS) or lowered == "ssl.key"


def shown(name: str, value: Any) -> str:
    """``value`` as an error may show it: redacted for a secret setting."""
    return REDACTED if is_secret(name) else repr(value)


def read(setting: Setting, value: Any, label: str | None = None) -> Any:
    """``value`` as ``setting`` takes it; a :class:`ConfigError` naming ``label`` (default: the field) if refused."""
    label = label or setting.name
    kind = setting.kind
    if isinstance(value, str) and kind in ("int", "bool", "optional_bool"):
        value = _from_text(setting, value.strip())
    if kind == "int":
        if type(value) is not int:
            raise ConfigError(f"{label}: {shown(label, value)} is not a whole number ({_range(setting)})")
        if not setting.low <= value <= setting.high:
            raise ConfigError(f"{label}: {value} is out of range ({_range(setting)})")
        return value
    if kind == "bool" or (kind == "optional_bool" and value is not None):
        if not isinstance(value, bool):
            raise ConfigError(f"{label}: {shown(label, value)} must be true or false")
        return value
    if kind == "choice":
        if not isinstance(value, str) or value.strip().lower() not in setting.choices:
            raise ConfigError(f"{label}: {shown(label, value)} is not one of {', '.join(setting.choices)}")
        return value.strip().lower()
    if kind == "optional_text" and value is None:
        return None
    if kind == "optional_text" and value == "":
        raise ConfigError(f"{label}: must not be empty (leave it unset instead)")
    if kind in ("text", "optional_text"):
        if not isinstance(value, str):
            raise ConfigError(f"{label}: {shown(label, value)} must be a string")
        if len(value.encode("utf-8", "surrogateescape")) > setting.high:
            raise ConfigError(f"{label}: is longer than {setting.high} bytes")
        return value
    return value  # optional_bool given None


def _from_text(setting: Setting, text: str) -> Any:
    """A text as librdkafka reads it for ``setting``'s kind; left as is when it reads as nothing (refused later)."""
    if setting.kind == "int":
        if setting.name == "acks" and text.lower() == "all":
            return -1
        return int(text) if _INTEGER.fullmatch(text) else text
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def _range(setting: Setting) -> str:
    if setting.name == "acks":
        return "-1 or all (every in-sync replica), 0 (none) or a replica count up to 32767"
    return f"an integer from {setting.low} to {setting.high}"
