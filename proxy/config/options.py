"""The ``bruce`` command-line options: Bruce's (docs/bruce-compatibility.md#options) with Bruce's spelling, defaults and
checks, plus bruce-kafka's own, in one frozen, validated :class:`Options`.

Rules:
- The option table *is* :class:`Options`: each field declared with :func:`option` or :func:`switch` is the option
  ``--<field name>`` (a ``-`` may stand for any ``_``: ``--status-port`` = ``--status_port``). Adding an option is
  adding one field; its help line, parsing and default come from that declaration. Checks that relate two options
  live in :meth:`Options._problems`.
- Reading ``argv`` and ``--help`` are ``command_line.py``'s; this module is the table and the checks.
- Deviations from Bruce, each documented in docs/configuration.md: ``--config_path``, ``--msg_buffer_max`` and
  ``--receive_socket_name`` are optional; the status server binds ``--status_host`` (loopback by default); a few
  values Bruce accepts but cannot work with are refused (a 0 KiB message budget, a 0-minute metadata refresh, a
  0-second socket timeout, socket paths over 107 bytes, datagrams over 16 MiB, file modes above 07777, more than
  30 pause doublings).
- Every problem is a :class:`ConfigError` naming the option (``--required_acks: ...``), also for options built in code.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from bruce.producer import PROTOCOLS

from .errors import ConfigError
from .listeners import ListenerConfig
from .model import Broker
from .option_values import (
    Reader,
    broker_list,
    choice,
    default_debug_dir,
    default_receive_socket_name,
    file_mode,
    host_names,
    integer,
    kafka_property,
    path,
    plog_listeners,
    text,
)

INT32_MAX = 2**31 - 1
MAX_DATAGRAM = 16 * 1024 * 1024  # Bruce's datagram size test fails above this
MAX_SOCKET_PATH = 107  # bytes: sun_path holds 108 with the terminating NUL
LOG_LEVELS = {"LOG_ERR": 40, "LOG_WARNING": 30, "LOG_NOTICE": 25, "LOG_INFO": 20, "LOG_DEBUG": 10}
"""Bruce's log levels and the :mod:`logging` level each one maps to (NOTICE sits between INFO and WARNING)."""
NOTICE = LOG_LEVELS["LOG_NOTICE"]  # the logging level of Bruce's LOG_NOTICE, the daemon's default


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """How one option is read and shown in ``--help``; ``read`` is ``None`` for a switch."""

    name: str
    metavar: str
    help: str
    group: str
    read: Reader | None
    default: Any


def option(
    default: Any, metavar: str, help: str, group: str, read: Reader, *, factory: Callable[[], Any] | None = None
) -> Any:
    """Declare an option that takes a value (``--help`` shows the default unless it is ``None``, empty or computed)."""
    spec = {"metavar": metavar, "help": help, "group": group, "read": read}
    if factory is not None:
        return field(default_factory=factory, metadata=spec)
    return field(default=default, metadata=spec)


def switch(help: str, group: str) -> Any:
    """Declare a switch: off unless given."""
    return field(default=False, metadata={"metavar": "", "help": help, "group": group, "read": None})


# -- the options ---------------------------------------------------------------------------------

FILES = "Configuration"
INPUT = "Input"
KAFKA = "Kafka"
STATUS = "Status interface"
DISCARDS = "Discard reporting and logging"
DEBUG = "Message debugging"
PROCESS = "Logging and process"
LEGACY = "Legacy formats"
SPOOL = "Durable spool"


@dataclass(frozen=True, slots=True)
class Options:
    """The parsed command line. Units are Bruce's (KiB, ms, s, min); properties give the converted values."""

    # Configuration
    config_path: str | None = option(
        None,
        "PATH",
        "Config file: Bruce's XML or the TOML equivalent (by suffix .xml/.toml, else by content). "
        "Default: the built-in configuration.",
        FILES,
        path(),
    )
    initial_brokers: tuple[Broker, ...] = option(
        (), "HOST[:PORT],...", "Initial brokers; replace the config file's <initialBrokers>.", FILES, broker_list
    )
    embedded_broker: bool = switch(
        "Start an embedded broker (tansu) on 127.0.0.1:9092 (a free loopback port if 9092 is taken) and use it as "
        "the only initial broker. Implied when neither --config_path nor --initial_brokers is given.",
        FILES,
    )
    # Input
    receive_socket_name: str = option(
        None,
        "PATH",
        "UNIX datagram socket that clients send messages to (default: $XDG_RUNTIME_DIR/bruce.socket, else "
        "/tmp/bruce-<uid>/bruce.socket in a private directory the daemon creates and checks).",
        INPUT,
        path(),
        factory=default_receive_socket_name,
    )
    receive_socket_mode: int | None = option(
        None,
        "MODE",
        "Permission bits of the input socket, octal with a leading 0 (e.g. 0660). Default: the umask decides.",
        INPUT,
        file_mode,
    )
    msg_buffer_max: int = option(
        262144,
        "MAX_KB",
        "Memory budget in KiB for messages held by the daemon; beyond it new messages are discarded (NO_MEM).",
        INPUT,
        integer(1, 2**53),
    )
    max_input_msg_size: int = option(
        65536,
        "MAX_BYTES",
        "Largest accepted input datagram, in bytes (the whole datagram).",
        INPUT,
        integer(1, MAX_DATAGRAM),
    )
    allow_large_unix_datagrams: bool = switch(
        "Allow a --max_input_msg_size that needs clients to raise SO_SNDBUF.", INPUT
    )
    plog_udp: tuple[ListenerConfig, ...] = option(
        (),
        "[HOST:]PORT[:TOPIC],...",
        "plog UDP listeners (unboxed and multipart messages, commands), each with its default topic; without a "
        "topic only kt:-tagged messages are sent. HOST defaults to 127.0.0.1. Other settings: [[plog.listener]] "
        "in a TOML config (docs/plog.md).",
        INPUT,
        plog_listeners("udp"),
    )
    plog_tcp: tuple[ListenerConfig, ...] = option(
        (),
        "[HOST:]PORT:TOPIC,...",
        "plog TCP listeners (one message per line) with their topic; HOST defaults to 127.0.0.1.",
        INPUT,
        plog_listeners("tcp"),
    )
    # Kafka
    kafka_protocol: str = option(
        "auto",
        "auto|v0|modern",
        "Kafka protocol generation: auto negotiates per broker (ApiVersions, falling back "
        "to the 0.8 protocol); v0 forces Bruce's 0.8 protocol; modern forces ApiVersions, Produce v3+.",
        KAFKA,
        choice(*PROTOCOLS),
    )
    protocol_version: int = option(
        0, "VERSION", "Bruce's protocol version; only 0 is accepted (see --kafka_protocol).", KAFKA, integer()
    )
    client_id: str = option("", "CLIENT_ID", 'Client id in requests; empty sends "bruce".', KAFKA, text())
    kafka_property: tuple[tuple[str, Any], ...] = option(
        (),
        "NAME=VALUE",
        "A librdkafka security property (security.protocol, sasl.*, ssl.*; docs/security.md), enable.idempotence, "
        "reconnect.backoff.ms or reconnect.backoff.max.ms; repeatable; overrides the config file's [kafka] table. "
        "Give secrets as file:/path or env:VAR, never literally here.",
        KAFKA,
        kafka_property,
    )
    enable_idempotence: str = option(
        "auto",
        "auto|true|false",
        "The idempotent producer (no duplicates on retry, 5 requests in flight per partition): auto turns it on when "
        "the brokers take it (Kafka 0.11+) and --required_acks is -1; true requires that; false is Bruce's "
        'at-least-once. auto defers to the config file\'s [kafka] "enable.idempotence".',
        KAFKA,
        choice("auto", "true", "false"),
    )
    required_acks: int = option(
        -1,
        "REQUIRED_ACKS",
        "Acknowledgements to wait for: -1 all in-sync replicas, 0 none, N replicas.",
        KAFKA,
        integer(-1, 32767),
    )
    replication_timeout: int = option(
        10000,
        "TIMEOUT",
        "How long, in ms, the broker waits for replicas before answering.",
        KAFKA,
        integer(0, INT32_MAX),
    )
    max_failed_delivery_attempts: int = option(
        5, "MAX_ATTEMPTS", "Failed deliveries allowed per message before it is discarded.", KAFKA, integer(0, INT32_MAX)
    )
    kafka_socket_timeout: int = option(
        60,
        "TIMEOUT_SECONDS",
        "Seconds without progress on a busy broker connection before it counts as failed.",
        KAFKA,
        integer(1),
    )
    metadata_refresh_interval: int = option(
        15, "INTERVAL_MINUTES", "Minutes between metadata refreshes (±20% at random).", KAFKA, integer(1)
    )
    skip_compare_metadata_on_refresh: bool = switch(
        "Accepted for Bruce's command lines; every refresh is applied whether or not the metadata changed.", KAFKA
    )
    pause_rate_limit_initial: int = option(
        5000, "DELAY_MS", "First backoff in ms before fetching metadata again after a Kafka error.", KAFKA, integer()
    )
    pause_rate_limit_max_double: int = option(
        4, "MAX_DOUBLE", "How many times the backoff may double on repeated errors.", KAFKA, integer(0, 30)
    )
    min_pause_delay: int = option(
        5000, "MIN_DELAY_MS", "Least delay in ms before fetching metadata after a Kafka error.", KAFKA, integer()
    )
    dispatcher_restart_max_delay: int = option(
        5000, "MAX_DELAY_MS", "After a pause, how long in ms acknowledgements are still awaited.", KAFKA, integer()
    )
    shutdown_max_delay: int = option(
        30000, "MAX_DELAY_MS", "On shutdown, how long in ms to keep delivering held messages.", KAFKA, integer()
    )
    topic_autocreate: bool = switch("Create unknown topics (the brokers must allow it).", KAFKA)
    message_timeout_ms: int = option(
        0,
        "TIMEOUT_MS",
        "Discard a message not delivered this many ms after the daemon handed it to the producer (MESSAGE_TIMEOUT; "
        "librdkafka's message.timeout.ms). 0: no limit, Bruce's rule (only --max_failed_delivery_attempts).",
        KAFKA,
        integer(0, INT32_MAX),
    )
    topic_create_timeout: int = option(
        30000,
        "TIMEOUT_MS",
        "How long in ms messages of a topic being created wait for it; then TOPIC_CREATE_TIMEOUT.",
        KAFKA,
        integer(1),
    )
    # Status interface
    status_host: str = option(
        "127.0.0.1",
        "HOST",
        "Address the status server binds; 0.0.0.0 serves every interface (Bruce's default).",
        STATUS,
        text(allow_empty=False),
    )
    status_port: int = option(9090, "PORT", "Status server port; 0 picks a free one.", STATUS, integer(0, 65535))
    status_loopback_only: bool = switch("Bind the status server to 127.0.0.1 (already the default).", STATUS)
    status_allowed_hosts: tuple[str, ...] = option(
        (),
        "NAME,...",
        "More host names the status pages may be asked by (the Host header); IP addresses, localhost and this host's "
        "name are always accepted (docs/status.md#who-may-ask).",
        STATUS,
        host_names,
    )
    no_metrics: bool = switch("Do not serve Prometheus metrics at /metrics.", STATUS)
    # Discards
    discard_report_interval: int = option(
        600, "INTERVAL_SECONDS", "Length in seconds of a discard report period.", DISCARDS, integer(1)
    )
    discard_report_bad_msg_prefix_size: int = option(
        256, "MAX_BYTES", "Bytes of a bad message kept in the discard report.", DISCARDS, integer()
    )
    no_log_discard: bool = switch(
        "Do not write discard warnings to the log (the status pages, counters and discard log still have them).",
        DISCARDS,
    )
    discard_log_path: str | None = option(
        None,
        "PATH",
        "Absolute path of a file that logs every discard. Default: no file.",
        DISCARDS,
        path(allow_empty=True),
    )
    discard_log_max_file_size: int = option(
        1024,
        "MAX_KB",
        "Size in KiB at which the discard log is rotated to PATH.<epoch ms>.",
        DISCARDS,
        integer(1, 2**53),
    )
    discard_log_max_archive_size: int = option(
        8192, "MAX_KB", "Total KiB of rotated discard logs kept; the oldest are deleted.", DISCARDS, integer(0, 2**53)
    )
    discard_log_bad_msg_prefix_size: int = option(
        256,
        "MAX_BYTES",
        "Bytes of a discarded message's key and value written to the discard log.",
        DISCARDS,
        integer(),
    )
    # Message debugging
    debug_dir: str = option(
        None,
        "DIR",
        "Absolute directory for the message debug files, created (mode 0700) when debugging is turned on (default: "
        "$XDG_STATE_HOME/bruce/debug, else ~/.local/state/bruce/debug).",
        DEBUG,
        path(allow_empty=True),
        factory=default_debug_dir,
    )
    msg_debug_time_limit: int = option(
        3600, "LIMIT_SECONDS", "Message debugging turns itself off after this many seconds.", DEBUG, integer(1)
    )
    msg_debug_byte_limit: int = option(
        2 * 1024**3, "MAX_BYTES", "Message debugging turns itself off after writing this many bytes.", DEBUG, integer(1)
    )
    # Durable spool
    spool_dir: str | None = option(
        None,
        "DIR",
        "Write every accepted message to segment files in DIR before routing it and replay them at start (a crash "
        "loses nothing written; docs/spool.md). Default: no spool (Bruce's memory-only behaviour).",
        SPOOL,
        path(allow_empty=True),
    )
    spool_fsync_ms: int = option(
        100,
        "MS",
        "With --spool_dir: sync the spool and its batch journal at most this often; what a power loss may lose. "
        "0: sync each burst before it is routed and each batch's journal record before the batch is sent.",
        SPOOL,
        integer(0, 3_600_000),
    )
    spool_max_bytes: int = option(
        1024**3, "MAX_BYTES", "With --spool_dir: the most bytes the spool's segment files may take.", SPOOL, integer(1)
    )
    spool_full_policy: str = option(
        "memory",
        "POLICY",
        "With --spool_dir, when the spool is full: memory (hold new messages in memory only) or discard (discard "
        "them as SPOOL_FULL).",
        SPOOL,
        choice("memory", "discard"),
    )
    spool_segment_bytes: int = option(
        16 * 1024**2, "MAX_BYTES", "With --spool_dir: the size at which a segment file rolls.", SPOOL, integer(4096)
    )
    # Logging and process
    log_level: str = option(
        "LOG_NOTICE", "LEVEL", "One of " + ", ".join(LOG_LEVELS) + ".", PROCESS, choice(*LOG_LEVELS)
    )
    log_echo: bool = switch("Accepted for Bruce's command lines; the log always goes to standard error.", PROCESS)
    daemon: bool = switch("Run in the background; the parent prints the daemon's PID.", PROCESS)
    # Legacy formats
    use_old_input_format: bool = switch(
        'Not supported (Bruce\'s pre-release "topic<space>body" datagrams): bruce refuses to start with it.', LEGACY
    )
    use_old_output_format: bool = switch('Send values as "<timestamp> <topic> <value>".', LEGACY)
    omit_timestamp: bool = switch("With --use_old_output_format: leave out the timestamp.", LEGACY)

    def __post_init__(self) -> None:
        for name, problem in self._problems():
            raise ConfigError(problem, where=f"--{name}")

    # -- derived values ---------------------------------------------------------------------------

    @property
    def use_embedded_broker(self) -> bool:
        """Start the embedded broker: asked for, or nothing else names a broker."""
        return self.embedded_broker or (self.config_path is None and not self.initial_brokers)

    @property
    def status_bind_host(self) -> str:
        return "127.0.0.1" if self.status_loopback_only else self.status_host

    @property
    def log_level_number(self) -> int:
        """``--log_level`` as a :mod:`logging` level."""
        return LOG_LEVELS[self.log_level]

    @property
    def msg_buffer_max_bytes(self) -> int:
        return self.msg_buffer_max * 1024

    @property
    def kafka_socket_timeout_ms(self) -> int:
        return self.kafka_socket_timeout * 1000

    @property
    def metadata_refresh_interval_ms(self) -> int:
        return self.metadata_refresh_interval * 60_000

    @property
    def discard_log_max_file_size_bytes(self) -> int:
        return self.discard_log_max_file_size * 1024

    @property
    def discard_log_max_archive_size_bytes(self) -> int:
        return self.discard_log_max_archive_size * 1024

    # -- checks -----------------------------------------------------------------------------------

    def _problems(self) -> Iterator[tuple[str, str]]:
        for spec in option_specs().values():  # options built in code get the same value checks as parsed ones
            value = getattr(self, spec.name)
            if spec.read is None or value is None or isinstance(value, bool | tuple):
                continue
            try:
                spec.read(str(value))
            except ValueError as error:
                yield spec.name, str(error)
        if self.protocol_version != 0:
            yield "protocol_version", f"{self.protocol_version} is not supported: Bruce's only protocol version is 0"
        if not self.debug_dir.startswith("/"):
            yield "debug_dir", f'"{self.debug_dir}" is not an absolute path (it must start with /)'
        if len(os.fsencode(self.receive_socket_name)) > MAX_SOCKET_PATH:
            yield "receive_socket_name", f"is longer than the {MAX_SOCKET_PATH} bytes a UNIX socket path can have"
        if self.discard_log_path:
            yield from self._discard_log_problems(self.discard_log_path)
        if self.status_loopback_only and not _is_loopback(self.status_host):
            yield "status_loopback_only", f"conflicts with --status_host {self.status_host}: give one of them"
        if self.embedded_broker and self.initial_brokers:
            yield "embedded_broker", "conflicts with --initial_brokers: give one of them"

    def _discard_log_problems(self, path: str) -> Iterator[tuple[str, str]]:
        if not path.startswith("/"):
            yield "discard_log_path", f'"{path}" is not an absolute path (it must start with /)'
        elif path.endswith("/"):
            yield "discard_log_path", f'"{path}" ends with /: it must name a file, not a directory'
        elif self.discard_log_max_file_size * 1024 < 2 * self.max_input_msg_size:
            least = -(-2 * self.max_input_msg_size // 1024)
            yield (
                "discard_log_max_file_size",
                (
                    f"{self.discard_log_max_file_size} KiB is too small for a discard log: it must hold twice the "
                    f"largest message (--max_input_msg_size {self.max_input_msg_size}), so at least {least}"
                ),
            )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def option_specs() -> dict[str, OptionSpec]:
    """Every option of :class:`Options`, in declaration order, by name."""
    return {
        f.name: OptionSpec(
            f.name,
            f.metadata["metavar"],
            f.metadata["help"],
            f.metadata["group"],
            f.metadata["read"],
            None if f.default is dataclasses.MISSING else f.default,
        )
        for f in dataclasses.fields(Options)
        if "help" in f.metadata
    }
