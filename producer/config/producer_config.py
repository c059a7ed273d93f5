"""Producer settings: one frozen, validated value.

Rules:
- Names follow librdkafka's (``linger.ms`` → ``linger_ms``) where one exists, and Bruce's command-line options
  (docs/bruce-compatibility.md#options) for Bruce's own settings. Times are integer milliseconds, sizes bytes, unless
  the name says otherwise. Defaults are librdkafka's or Bruce's, whichever the setting comes from.
- Every value is read and checked at construction by the settings table (:mod:`bruce.producer.config.setting_table`); a
  bad one raises :class:`ConfigError` naming the setting and what it accepts.
- :meth:`ProducerConfig.from_mapping` also accepts librdkafka's dotted names (``"linger.ms": 5``), the security ones
  (``"security.protocol"``, ``"sasl.*"``, ``"ssl.*"``) included: they form :attr:`ProducerConfig.security`.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from .security import PLAINTEXT, SecurityConfig
from .security import PROPERTIES as SECURITY_PROPERTIES
from .setting_table import CODECS, MAX_IN_FLIGHT, NAMES, PROTOCOLS, SETTINGS, read

__all__ = ["CODECS", "PROTOCOLS", "ProducerConfig", "parse_host_port", "servers"]


@dataclass(frozen=True, slots=True)
class ProducerConfig:
    """Everything the producer needs to know; see docs/producer.md for each setting's meaning."""

    bootstrap_servers: tuple[str, ...] = ("127.0.0.1:9092",)  # "host:port"; Bruce's <initialBrokers>
    client_id: str = ""  # "" → "bruce" on the wire (Bruce's KAFKA-3088 workaround)
    protocol: str = "auto"  # auto: ApiVersions, v0 fallback when the broker closes on it | v0 | modern
    # Produce requests
    acks: int = -1  # Bruce --required_acks
    replication_timeout_ms: int = 10_000  # Bruce --replication_timeout: the broker's wait for replicas
    request_timeout_ms: int = 30_000  # our wait for a produce or metadata response
    produce_request_data_limit: int = 1024 * 1024  # Σ key+value per request; first message always; 0 ⇒ 1 message
    message_max_bytes: int = 1_000_000  # the broker's message.max.bytes: caps a record batch, a compressed set (Bruce)
    empty_as_null: bool = False  # write an empty key or value as null (Bruce's rule; the daemon sets it)
    compression_codec: str = "none"  # the library path's codec; the daemon supplies a per-topic policy instead
    max_in_flight_per_broker: int = 1  # at-least-once path: never more than one in-flight batch per partition
    # Idempotence (KIP-98, librdkafka's names): None = on when every broker can take it and acks=-1 (docs/producer.md)
    enable_idempotence: bool | None = None
    max_in_flight_requests_per_connection: int = 5  # idempotent path: requests per connection, and per partition
    # Transactions (librdkafka's names): a transactional id makes the producer transactional (docs/producer.md)
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60_000
    # Accumulation (library path)
    linger_ms: int = 5
    batch_num_messages: int = 10_000
    batch_size: int = 1_000_000
    queue_buffering_max_messages: int = 100_000  # send() raises QueueFull beyond this
    queue_buffering_max_kbytes: int = 1_048_576  # Σ key+value held, in KiB
    # Failures (Bruce's settings)
    max_failed_delivery_attempts: int = 5
    retry_backoff_ms: int = 100  # before a resend on the modern path (v0 path: Bruce resends at once)
    socket_timeout_ms: int = 60_000  # Bruce --kafka_socket_timeout: no progress this long while busy ⇒ failure
    connect_timeout_ms: int = 10_000
    reconnect_backoff_ms: int = 100
    reconnect_backoff_max_ms: int = 10_000  # librdkafka's: refused or failed connects back off up to this
    min_pause_delay_ms: int = 5_000
    pause_rate_limit_initial_ms: int = 5_000
    pause_rate_limit_max_double: int = 4
    dispatcher_restart_max_delay_ms: int = 5_000  # after a pause: how long in-flight ACKs are still awaited
    # Metadata
    metadata_refresh_interval_ms: int = 15 * 60_000  # ±20% jitter
    metadata_min_interval_ms: int = 1_000  # on-demand refreshes closer than this are merged
    metadata_retry_backoff_max_ms: int = 30_000  # failed fetches back off up to this
    topic_autocreate: bool = False
    topic_create_timeout_ms: int = 30_000  # a topic being created: how long its messages wait for it in metadata
    # Shutdown
    shutdown_max_delay_ms: int = 30_000  # close() deadline when none is given
    # Delivery timeout (librdkafka's message.timeout.ms): a message not delivered this long after the producer took it
    # fails with MESSAGE_TIMEOUT; 0 = no limit (the daemon's default: Bruce's attempt limits only)
    message_timeout_ms: int = 300_000
    # Security: TLS and SASL, librdkafka's properties (see docs/security.md)
    security: SecurityConfig = PLAINTEXT
    # Partitioning of keyed send()s (librdkafka's names): Java's murmur2 placement, as Kafka's own clients, Spark,
    # Flink and Kafka Streams place keys; null keys go to any partition (docs/producer.md says why)
    partitioner: str = "murmur2_random"
    # Exactly once across restarts (docs/producer.md): the directory of the idempotent batches' journal (state.path)
    state_path: str | None = None
    # How the journal reaches the disk: 0 = each batch's record synced before the batch is sent; n = synced in the
    # background every n ms (docs/producer.md, "Exactly once across restarts")
    state_sync_ms: int = 100
    # A state path that belongs to another cluster: False = start() refuses (StateMismatch); True = the earlier
    # producer's unsettled batches are given up, counted JournalAbandoned (docs/producer.md)
    state_abandon: bool = False

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for name, setting in SETTINGS.items():  # every value read by the one table: types, texts, ranges
            set_(self, name, read(setting, getattr(self, name)))
        if isinstance(self.security, Mapping):
            set_(self, "security", SecurityConfig.from_mapping(self.security))
        if not isinstance(self.security, SecurityConfig):
            raise ConfigError("security: a SecurityConfig or a mapping of security properties")
        set_(self, "bootstrap_servers", servers(self.bootstrap_servers, self.security.security_protocol))
        if self.security.sasl and self.protocol == "v0":
            raise ConfigError(
                f"protocol: the 0.8 protocol (v0) has no SASL; security.protocol={self.security.security_protocol} "
                "needs auto or modern (Kafka 1.0+)"
            )
        if self.state_path is not None and not self.idempotence_wanted:
            raise ConfigError(
                "state_path: needs the idempotent producer (enable_idempotence not false, acks=-1, protocol not v0, "
                "at most 5 requests in flight): nothing would be kept"
            )
        if self.enable_idempotence and self.acks != -1:
            raise ConfigError(
                f"enable_idempotence: needs acks=-1 (all in-sync replicas), not acks={self.acks}: a write acknowledged "
                "by fewer replicas can be lost in a leader change, which breaks the partition's sequence"
            )
        if self.enable_idempotence and self.protocol == "v0":
            raise ConfigError("enable_idempotence: the 0.8 protocol (protocol='v0') has no idempotent produce")
        if self.enable_idempotence and not 1 <= self.max_in_flight_requests_per_connection <= MAX_IN_FLIGHT:
            raise ConfigError(
                f"max_in_flight_requests_per_connection: {self.max_in_flight_requests_per_connection!r} must be 1 to "
                f"{MAX_IN_FLIGHT} with enable_idempotence (the broker remembers {MAX_IN_FLIGHT} batches per partition)"
            )
        for low, high in (
            ("reconnect_backoff_ms", "reconnect_backoff_max_ms"),
            ("metadata_min_interval_ms", "metadata_retry_backoff_max_ms"),
        ):
            if getattr(self, high) < getattr(self, low):
                raise ConfigError(f"{high}: {getattr(self, high)} must be at least {low} ({getattr(self, low)})")
        if self.transactional_id is not None and (
            self.enable_idempotence is False or self.acks != -1 or self.protocol == "v0"
        ):
            raise ConfigError(
                "transactional_id: a transactional producer is idempotent: it needs acks=-1, the modern protocol "
                "and enable_idempotence left on"
            )

    @property
    def idempotence_wanted(self) -> bool:
        """Idempotence may be used: set, or left to the brokers (None) with acks=-1, the modern protocol possible and
        at most 5 requests in flight. Whether the brokers take it is known at the first connection."""
        if self.enable_idempotence is not None or self.transactional_id is not None:
            return self.enable_idempotence is not False
        return self.acks == -1 and self.protocol != "v0" and self.max_in_flight_requests_per_connection <= MAX_IN_FLIGHT

    @property
    def wire_client_id(self) -> str:
        """The client id sent to brokers: empty becomes "bruce"."""
        return self.client_id or "bruce"

    @property
    def brokers(self) -> tuple[tuple[str, int], ...]:
        return tuple(parse_host_port(s) for s in self.bootstrap_servers)

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any]) -> ProducerConfig:
        """Build from a mapping whose keys are field names, librdkafka's dotted names or their aliases
        (:data:`bruce.producer.config.setting_table.NAMES`); values may be texts, as librdkafka takes them."""
        kwargs: dict[str, Any] = {}
        security = {}
        for key, value in settings.items():
            if not isinstance(key, str):
                raise ConfigError(f"{key!r}: a setting's name must be a string")
            if key in SECURITY_PROPERTIES:
                security[key] = value
                continue
            name = NAMES.get(key) or (key if key in SETTINGS or key in ("bootstrap_servers", "security") else None)
            if key in ("bootstrap.servers", "metadata.broker.list"):
                name = "bootstrap_servers"
            if name is None:
                close = difflib.get_close_matches(key, [*NAMES, *SECURITY_PROPERTIES], n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(f"unknown producer setting {key!r}{hint}")
            if name in kwargs:
                raise ConfigError(f"{key}: given twice (under two of its names)")
            if name in SETTINGS:
                value = read(SETTINGS[name], value, key)
            kwargs[name] = value
        if security:
            kwargs["security"] = SecurityConfig.from_mapping(security)
        return cls(**kwargs)


def servers(value: Any, security_protocol: str = "PLAINTEXT") -> tuple[str, ...]:
    """``bootstrap_servers`` as given (a comma-separated text, or a list or tuple of texts) → checked ``host:port``
    entries. A listener prefix (``SASL_SSL://host:port``) is dropped when it agrees with ``security_protocol``."""
    if isinstance(value, str):
        value = [s for s in value.split(",") if s.strip()]
    if not isinstance(value, list | tuple) or not all(isinstance(s, str) for s in value):
        raise ConfigError(f"bootstrap_servers: {value!r} is not host:port texts (a comma-separated string or a list)")
    out = []
    for server in value:
        server = server.strip()
        scheme, sep, rest = server.partition("://")
        if sep:
            if scheme.upper() != security_protocol:
                raise ConfigError(
                    f"bootstrap_servers: {server!r} names the {scheme} listener but security.protocol is "
                    f"{security_protocol}: give host:port, and security.protocol for how to connect"
                )
            server = rest
        parse_host_port(server)
        out.append(server)
    if not out:
        raise ConfigError("bootstrap_servers: at least one host:port is required")
    return tuple(out)


def parse_host_port(text: str) -> tuple[str, int]:
    """``"host:port"`` → ``(host, port)``; the port must be 1-65535 and the host non-empty."""
    if not isinstance(text, str):
        raise ConfigError(f"bootstrap_servers: {text!r} is not host:port text")
    host, sep, port = text.rpartition(":")
    if not sep or not host or "/" in host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"bootstrap_servers: {text!r} is not host:port with a port in 1-65535")
    return host.strip("[]"), int(port)
