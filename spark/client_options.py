"""The ``kafka.*`` options: a read's :class:`ClientConfig`, the security settings of reads and writes, and a direct
write's producer settings.

Rules:
- A read takes the settings of :class:`ClientConfig` (``kafka.client.id``, timeouts, fetch sizes, retries,
  ``kafka.isolation.level``; Spark's ``kafkaConsumer.pollTimeoutMs`` and ``fetchOffset.*`` are aliases, which must
  agree with them). Java consumer settings that mean nothing here (no consumer group, no poll loop, metadata fetched
  per call) are checked as numbers and ignored (:data:`IGNORED_READ_SETTINGS`, docs/spark.md says why for each); any
  other ``kafka.*`` setting of a read is an error.
- A direct write takes every :class:`~bruce.producer.ProducerConfig` setting as ``kafka.<dotted name>`` (or an alias
  of it), read by the producer's settings table (:mod:`bruce.producer.config.setting_table`; ``acks=all`` is -1), and
  the Java producer's names that Spark users pass (:data:`JAVA_PRODUCER_NAMES`: ``max.request.size``, ``retries``,
  ``buffer.memory``, ...); an unknown one is an error.
- ``kafka.<librdkafka security property>`` (``security.protocol``, ``sasl.*``, ``ssl.*``) apply to reads and writes
  alike, through :class:`~bruce.producer.SecurityConfig` (secrets stay redacted in errors).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bruce.producer import PLAINTEXT, PROTOCOLS, SECURITY_PROPERTIES, SecurityConfig
from bruce.wire import BruceError

from .option_values import KAFKA, LABELS, OptionError, int_value, servers_option


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """How the reader talks to Kafka (``kafka.*`` options of a read)."""

    bootstrap_servers: tuple[str, ...]
    client_id: str = "bruce-spark"
    protocol: str = "auto"  # auto | v0 | modern (as bruce.producer)
    connect_timeout_ms: int = 10_000
    request_timeout_ms: int = 120_000  # Spark's kafkaConsumer.pollTimeoutMs default (spark.network.timeout)
    max_partition_fetch_bytes: int = 1 << 20  # per Fetch; a larger first batch still arrives whole (v3+)
    fetch_max_bytes: int = 50 << 20  # per Fetch answer (Java's default), never below the partition's bytes
    fetch_min_bytes: int = 1  # the broker waits (up to fetch.max.wait.ms) for this much
    fetch_max_wait_ms: int = 100  # only matters at the log end
    isolation: str = "read_uncommitted"  # kafka.isolation.level: read_committed leaves aborted transactions out
    retries: int = 3  # Spark's fetchOffset.numRetries: failed requests retried per read, then the read fails
    retry_backoff_ms: int = 100
    security: SecurityConfig = PLAINTEXT  # kafka.security.protocol, kafka.sasl.*, kafka.ssl.*


_CLIENT_SETTINGS = {
    "kafka.client.id": "client_id",
    "kafka.protocol": "protocol",
    "kafka.connect.timeout.ms": "connect_timeout_ms",
    "kafka.request.timeout.ms": "request_timeout_ms",
    "kafka.max.partition.fetch.bytes": "max_partition_fetch_bytes",
    "kafka.fetch.max.wait.ms": "fetch_max_wait_ms",
    "kafka.fetch.max.bytes": "fetch_max_bytes",
    "kafka.fetch.min.bytes": "fetch_min_bytes",
    "kafka.isolation.level": "isolation",
    "kafka.retries": "retries",
    "kafka.retry.backoff.ms": "retry_backoff_ms",
}


_SPARK_CLIENT_ALIASES = {  # Spark's names for the same client settings
    "kafkaconsumer.polltimeoutms": "kafka.request.timeout.ms",
    "fetchoffset.numretries": "kafka.retries",
    "fetchoffset.retryintervalms": "kafka.retry.backoff.ms",
}
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
IGNORED_READ_SETTINGS = {  # Java consumer settings Spark users pass that mean nothing here; numbers are checked
    "kafka.group.id": False,  # no consumer group is joined: offsets live in Spark's checkpoint
    "kafka.session.timeout.ms": True,  # no group, no session
    "kafka.max.poll.records": True,  # no poll loop: a task reads its range Fetch by Fetch
    "kafka.receive.buffer.bytes": True,  # the operating system sizes the socket buffer
    "kafka.default.api.timeout.ms": True,  # every request is bounded by request.timeout.ms and retries instead
    "kafka.metadata.max.age.ms": True,  # metadata is fetched when a query is planned and after any failure
}


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
        if not key.startswith(KAFKA) or key == "kafka.bootstrap.servers" or key[len(KAFKA) :] in SECURITY:
            continue
        if key in IGNORED_READ_SETTINGS:
            if IGNORED_READ_SETTINGS[key]:
                int_value(opts, key, None, low=-1)  # -1: Java's "the OS default" for receive.buffer.bytes
            continue
        field = _CLIENT_SETTINGS.get(key)
        if field is None:
            raise OptionError(f"unknown read setting {key!r} (known: {', '.join(sorted(_CLIENT_SETTINGS))})")
        if field == "client_id":
            values[field] = text
        elif field in ("protocol", "isolation"):
            choices = PROTOCOLS if field == "protocol" else ISOLATION_LEVELS
            if text.strip().lower() not in choices:
                raise OptionError(f"option {key!r}: {text!r} is not one of {', '.join(choices)}")
            values[field] = text.strip().lower()
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


# The Java producer's names Spark users pass, as librdkafka's (bruce.producer's) name and a conversion of the value
JAVA_PRODUCER_NAMES: dict[str, tuple[str, Any]] = {
    "kafka.compression.type": ("kafka.compression.codec", str),
    "kafka.max.request.size": ("kafka.message.max.bytes", str),  # librdkafka's message.max.bytes caps a request
    "kafka.retries": ("kafka.max.failed.delivery.attempts", str),  # failed attempts allowed before a discard
    "kafka.delivery.timeout.ms": ("kafka.message.timeout.ms", str),  # librdkafka's alias for the same setting
    "kafka.buffer.memory": ("kafka.queue.buffering.max.kbytes", lambda n: str(-(-int(n) // 1024))),  # bytes → KiB
}


def java_producer_names(opts: dict[str, str]) -> dict[str, str]:
    """``opts`` with the Java producer's names turned into bruce.producer's (see :data:`JAVA_PRODUCER_NAMES`); a
    setting given under both names must agree."""
    out = dict(opts)
    for java, (name, convert) in JAVA_PRODUCER_NAMES.items():
        if java not in out:
            continue
        text = out.pop(java)
        try:
            value = convert(text.strip())
        except ValueError:
            raise OptionError(f"option {java!r}: {text!r} is not an integer") from None
        if out.get(name, value) != value:
            raise OptionError(f"{java!r} and {name!r} are the same setting and disagree; give one")
        out[name] = value
    return out
