"""The ``kafka.*`` options: a read's :class:`ClientConfig`, the security settings of reads and writes, and a direct
write's producer settings.

Rules:
- A read takes the settings of :class:`ClientConfig` (``kafka.client.id``, timeouts, fetch sizes, retries; Spark's
  ``kafkaConsumer.pollTimeoutMs`` and ``fetchOffset.*`` are aliases, which must agree with them) and ignores
  ``kafka.group.id`` (no consumer group is joined); any other ``kafka.*`` setting of a read is an error.
- A direct write takes every :class:`~bruce.producer.ProducerConfig` field as ``kafka.<name with dots>``, typed by
  the field's default (``acks=all`` is -1); an unknown one is an error.
- ``kafka.<librdkafka security property>`` (``security.protocol``, ``sasl.*``, ``ssl.*``) apply to reads and writes
  alike, through :class:`~bruce.producer.SecurityConfig` (secrets stay redacted in errors).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from bruce.producer import ProducerConfig, SecurityConfig
from bruce.producer.config import PROTOCOLS
from bruce.producer.security import PLAINTEXT
from bruce.producer.security import PROPERTIES as SECURITY_PROPERTIES
from bruce.wire.errors import BruceError

from .option_values import KAFKA, LABELS, OptionError, int_value, servers_option


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """How the reader talks to Kafka (``kafka.*`` options of a read)."""

    bootstrap_servers: tuple[str, ...]
    client_id: str = "bruce-spark"
    protocol: str = "auto"  # auto | v0 | modern (as bruce.producer)
    connect_timeout_ms: int = 10_000
    request_timeout_ms: int = 30_000
    max_partition_fetch_bytes: int = 1 << 20  # per Fetch; a larger first batch still arrives whole (v3+)
    fetch_max_wait_ms: int = 100  # only matters at the log end
    retries: int = 5  # failed requests (transport, leader change) retried per read, then the read fails
    retry_backoff_ms: int = 100
    security: SecurityConfig = PLAINTEXT  # kafka.security.protocol, kafka.sasl.*, kafka.ssl.*


_CLIENT_SETTINGS = {
    "kafka.client.id": "client_id",
    "kafka.protocol": "protocol",
    "kafka.connect.timeout.ms": "connect_timeout_ms",
    "kafka.request.timeout.ms": "request_timeout_ms",
    "kafka.max.partition.fetch.bytes": "max_partition_fetch_bytes",
    "kafka.fetch.max.wait.ms": "fetch_max_wait_ms",
    "kafka.retries": "retries",
    "kafka.retry.backoff.ms": "retry_backoff_ms",
}


_SPARK_CLIENT_ALIASES = {  # Spark's names for the same client settings
    "kafkaconsumer.polltimeoutms": "kafka.request.timeout.ms",
    "fetchoffset.numretries": "kafka.retries",
    "fetchoffset.retryintervalms": "kafka.retry.backoff.ms",
}
_IGNORED_READ_SETTINGS = {"kafka.group.id"}  # no consumer group is joined: offsets live in Spark's checkpoint


def client_config(opts: dict[str, str]) -> ClientConfig:
    """A read's :class:`ClientConfig` from its ``kafka.*`` options (and Spark's aliases for them)."""
    values: dict[str, Any] = {
        "bootstrap_servers": servers_option(opts, required=True),
        "security": security_config(opts),
    }
    for alias, key in _SPARK_CLIENT_ALIASES.items():
        if alias in opts:
            if opts.get(key, opts[alias]) != opts[alias]:
                raise OptionError(f"{LABELS[alias]!r} and {key!r} are the same setting and disagree; give one")
            opts = {**opts, key: opts[alias]}
    for key, text in opts.items():
        if (
            not key.startswith(KAFKA)
            or key == "kafka.bootstrap.servers"
            or key in _IGNORED_READ_SETTINGS
            or key[len(KAFKA) :] in SECURITY
        ):
            continue
        field = _CLIENT_SETTINGS.get(key)
        if field is None:
            raise OptionError(f"unknown read setting {key!r} (known: {', '.join(sorted(_CLIENT_SETTINGS))})")
        if field == "client_id":
            values[field] = text
        elif field == "protocol":
            if text not in PROTOCOLS:
                raise OptionError(f"option {key!r}: {text!r} is not one of {', '.join(PROTOCOLS)}")
            values[field] = text
        else:
            values[field] = int_value(opts, key, None, low=0 if field in ("retries", "retry_backoff_ms") else 1)
    return ClientConfig(**values)


SECURITY = {name.lower() for name in SECURITY_PROPERTIES}  # Spark lower-cases option names


def security_config(opts: dict[str, str]) -> SecurityConfig:
    """``kafka.<librdkafka security property>`` options, for reads and writes (secrets stay redacted in errors)."""
    given = {key[len(KAFKA) :]: text for key, text in opts.items() if key.startswith(KAFKA)}
    try:
        return SecurityConfig.from_mapping({k: v for k, v in given.items() if k in SECURITY})
    except BruceError as e:
        raise OptionError(f"security settings (kafka.*): {e}") from None


def producer_value(key: str, name: str, text: str) -> Any:
    """A direct write's ``kafka.<key>`` as the :class:`ProducerConfig` field ``name`` takes it."""
    fields = {f.name: f for f in dataclasses.fields(ProducerConfig)}
    field = fields.get(name)
    if field is None or name == "bootstrap_servers":
        raise OptionError(f"unknown producer setting {key!r} (see docs/spark.md for the kafka.* settings)")
    if name == "transactional_id":  # a transactional producer sends only inside transactions, which a write never opens
        raise OptionError(f"option {key!r}: transactions are not available to Spark writes (a write never opens one)")
    default = field.default
    if isinstance(default, bool):
        if text.lower() not in ("true", "false"):
            raise OptionError(f"option {key!r}: {text!r} is not true or false")
        return text.lower() == "true"
    if isinstance(default, int):
        if name == "acks" and text.lower() == "all":
            return -1
        try:
            return int(text)
        except ValueError:
            raise OptionError(f"option {key!r}: {text!r} is not an integer") from None
    return text
