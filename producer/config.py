"""Producer settings: one frozen, validated value.

Rules:
- Names follow librdkafka's (``linger.ms`` → ``linger_ms``) where one exists, and Bruce's command-line options
  (bruce-behaviour.md §15) for Bruce's own settings. Times are integer milliseconds, sizes bytes, unless the name says
  otherwise. Defaults are librdkafka's or Bruce's, whichever the setting comes from.
- Every value is checked at construction; a bad one raises :class:`ConfigError` naming the setting and what it accepts.
- :meth:`ProducerConfig.from_mapping` also accepts librdkafka's dotted names (``"linger.ms": 5``), the security ones
  (``"security.protocol"``, ``"sasl.*"``, ``"ssl.*"``) included: they form :attr:`ProducerConfig.security`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bruce.wire.versions import Generation

from .errors import ConfigError
from .idempotence import MAX_IN_FLIGHT
from .partitioner import PARTITIONERS
from .security import PLAINTEXT, SecurityConfig
from .security import PROPERTIES as SECURITY_PROPERTIES

PROTOCOLS = tuple(g.value for g in Generation)  # auto, v0, modern
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


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
    reconnect_backoff_max_ms: int = 500  # a down broker is probed at least this often while messages wait for it
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

    def __post_init__(self) -> None:
        servers = self.bootstrap_servers
        if isinstance(servers, str):
            servers = tuple(s.strip() for s in servers.split(",") if s.strip())
            object.__setattr__(self, "bootstrap_servers", servers)
        if not servers:
            raise ConfigError("bootstrap_servers: at least one host:port is required")
        for server in servers:
            parse_host_port(server)
        if self.protocol not in PROTOCOLS:
            raise ConfigError(f"protocol: {self.protocol!r} is not one of {', '.join(PROTOCOLS)}")
        if isinstance(self.security, Mapping):
            object.__setattr__(self, "security", SecurityConfig.from_mapping(self.security))
        if not isinstance(self.security, SecurityConfig):
            raise ConfigError("security: a SecurityConfig or a mapping of security properties")
        if self.state_path is not None and (not isinstance(self.state_path, str) or not self.state_path):
            raise ConfigError(f"state_path: {self.state_path!r} must be a directory path or None")
        if self.state_path is not None and not self.idempotence_wanted:
            raise ConfigError(
                "state_path: needs the idempotent producer (enable_idempotence not false, acks=-1, protocol not v0, "
                "at most 5 requests in flight): nothing would be kept"
            )
        if self.compression_codec not in CODECS:
            raise ConfigError(f"compression_codec: {self.compression_codec!r} is not one of {', '.join(CODECS)}")
        if self.partitioner not in PARTITIONERS:
            raise ConfigError(f"partitioner: {self.partitioner!r} is not one of {', '.join(PARTITIONERS)}")
        if not -1 <= self.acks <= 32767:
            raise ConfigError(f"acks: {self.acks} must be -1 (all replicas), 0 (none) or a replica count")
        if self.enable_idempotence is not None and not isinstance(self.enable_idempotence, bool):
            raise ConfigError(f"enable_idempotence: {self.enable_idempotence!r} must be true, false or None (auto)")
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
        for name in ("empty_as_null", "topic_autocreate"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name}: {getattr(self, name)!r} must be true or false")
        if not isinstance(self.client_id, str) or len(self.client_id.encode()) > 32767:
            raise ConfigError("client_id: a string of at most 32767 bytes")
        for name in ("produce_request_data_limit", "max_failed_delivery_attempts"):
            _require(self, name, 0)
        _require(self, "replication_timeout_ms", 0, 2**31 - 1)
        _require(self, "pause_rate_limit_max_double", 0, 30)
        for name in (
            "message_max_bytes",
            "max_in_flight_per_broker",
            "max_in_flight_requests_per_connection",
            "batch_num_messages",
            "batch_size",
            "queue_buffering_max_messages",
            "queue_buffering_max_kbytes",
            "request_timeout_ms",
            "socket_timeout_ms",
            "connect_timeout_ms",
            "reconnect_backoff_ms",
            "pause_rate_limit_initial_ms",
            "metadata_refresh_interval_ms",
            "metadata_min_interval_ms",
            "topic_create_timeout_ms",
        ):
            _require(self, name, 1)
        for name in (
            "linger_ms",
            "retry_backoff_ms",
            "min_pause_delay_ms",
            "dispatcher_restart_max_delay_ms",
            "shutdown_max_delay_ms",
        ):
            _require(self, name, 0)
        _require(self, "message_timeout_ms", 0, 2**31 - 1)
        _require(self, "reconnect_backoff_max_ms", self.reconnect_backoff_ms)
        _require(self, "metadata_retry_backoff_max_ms", self.metadata_min_interval_ms)

    @property
    def idempotence_wanted(self) -> bool:
        """Idempotence may be used: set, or left to the brokers (None) with acks=-1, the modern protocol possible and
        at most 5 requests in flight. Whether the brokers take it is known at the first connection."""
        if self.enable_idempotence is not None:
            return self.enable_idempotence
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
        """Build from a mapping whose keys are field names or librdkafka's dotted names."""
        known = {f.name for f in dataclasses.fields(cls)}
        kwargs: dict[str, Any] = {}
        security = {}
        for key, value in settings.items():
            if key in SECURITY_PROPERTIES:
                security[key] = value
                continue
            name = key.replace(".", "_")
            if name not in known:
                raise ConfigError(f"unknown producer setting {key!r}")
            kwargs[name] = tuple(value) if name == "bootstrap_servers" and isinstance(value, list) else value
        if security:
            kwargs["security"] = SecurityConfig.from_mapping(security)
        return cls(**kwargs)


def parse_host_port(text: str) -> tuple[str, int]:
    """``"host:port"`` → ``(host, port)``; the port must be 1-65535 and the host non-empty."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"bootstrap_servers: {text!r} is not host:port with a port in 1-65535")
    return host.strip("[]"), int(port)


def _require(config: ProducerConfig, name: str, low: int, high: int | None = None) -> None:
    value = getattr(config, name)
    if not isinstance(value, int) or isinstance(value, bool) or value < low or (high is not None and value > high):
        bound = f"an integer ≥ {low}" + (f" and ≤ {high}" if high is not None else "")
        raise ConfigError(f"{name}: {value!r} must be {bound}")
