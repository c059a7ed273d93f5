"""The front door of the ``bruce`` command: command line → (:class:`Options`, :class:`Config`), or text and an exit.

Rules:
- The config file's format is its suffix (``.xml``, ``.toml``), else its content (``<`` first: XML).
- Without ``--config_path`` the built-in :func:`default_config` applies: Bruce's shipped configuration (combined
  topics batching, snappy above 128 bytes) with Bruce's documented 1-second batching delay and no rate limiting.
- The initial brokers are, first that applies: the embedded broker (``Options.use_embedded_broker``: 127.0.0.1 on a
  port picked here, 9092 when free, which the daemon then starts tansu on), ``--initial_brokers``, the config file's.
  A config file may leave its brokers out only when one of the first two names them.
- ``--kafka_property NAME=VALUE`` settings override the file's ``[kafka]`` (``<kafka>``) properties.
- The producer's own checks of the resulting settings run here too (SASL with ``--kafka_protocol v0``, ...): every
  refused setting ends the command with status 2 before anything starts.
- A config file is read whole, at most :data:`MAX_FILE_BYTES`.
- Every problem is printed as ``bruce: <ConfigError>`` on stderr and ends the command with status 2 (command line)
  or 1 (config file) before anything starts.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from bruce.wire import UsageError

from .build import kafka_security, split_producer
from .command_line import ConvertConfig, ImmediateExit, parse_command_line
from .errors import ConfigError
from .model import (
    IDEMPOTENCE,
    BatchingConfig,
    BatchLimits,
    Broker,
    CombinedTopics,
    CompressionCodec,
    CompressionConfig,
    CompressionType,
    Config,
    TopicAction,
    TopicBatching,
)
from .options import Options
from .ports import broker_port
from .producer_settings import producer_config
from .toml_config import load_toml, to_toml
from .xml_config import load_xml

EXIT_CONFIG = 1
EXIT_USAGE = 2
MAX_FILE_BYTES = 16 * 1024 * 1024


def configure(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> tuple[Options, Config] | int:
    """Parse the command line and load the configuration: ``(options, config)`` to run the daemon with, or the exit
    status after printing help, the version, a converted config, or the reason the daemon cannot start."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        request = parse_command_line(sys.argv[1:] if argv is None else argv)
        if isinstance(request, ImmediateExit):
            stdout.write(request.output)
            return request.status
        if isinstance(request, ConvertConfig):
            config = load_config_file(request.path)
            stdout.write(to_toml(config, comment=f"bruce-kafka configuration, from {Path(request.path).name}"))
            return 0
        config = load_config(request)
        options = with_spool_section(request, config)
        _check_producer_settings(options, config)
        return options, config
    except ConfigError as error:
        stderr.write(f"bruce: {error}\n")
        return EXIT_CONFIG if error.source is not None else EXIT_USAGE


def _check_producer_settings(options: Options, config: Config) -> None:
    """The producer's own checks of what the command line and config file give it (SASL with ``--kafka_protocol v0``,
    ...), so that the daemon refuses them at start like any other setting."""
    try:
        producer_config(options, config)
    except UsageError as error:
        if isinstance(error, ConfigError) and error.where is not None:
            raise  # placed already (the daemon's own checks of these settings)
        problem = str(error)
        if problem.startswith("protocol: "):
            raise ConfigError(problem.removeprefix("protocol: "), where="--kafka_protocol") from None
        raise ConfigError(problem) from None


def load_config(options: Options, *, embedded_port: int | None = None) -> Config:
    """The configuration ``options`` select (file or built-in), with its initial brokers resolved.

    When the embedded broker is used, the only initial broker is ``127.0.0.1:embedded_port`` (if none is given: 9092
    when free, else a free port); start the embedded broker on that port.
    """
    brokers = options.initial_brokers
    if options.use_embedded_broker:
        brokers = (Broker("127.0.0.1", embedded_port or broker_port()),)
    if options.config_path is None:
        config = default_config(brokers)
    else:
        config = load_config_file(options.config_path, initial_brokers=brokers)
    if options.kafka_property:
        try:
            properties, producer = split_producer(dict(options.kafka_property), ("kafka",))
            kafka = kafka_security(properties, config.kafka)
        except ConfigError as error:
            key = error.path[1:] if error.path else ()
            problem = f"{key[0]}: {error.problem}" if key else error.problem
            raise ConfigError(problem, where="--kafka_property") from None
        config = dataclasses.replace(
            config,
            kafka=kafka,
            enable_idempotence=producer.pop(IDEMPOTENCE, config.enable_idempotence),  # type: ignore[arg-type]  # a bool: read by the settings table
            producer_properties=tuple({**dict(config.producer_properties), **producer}.items()),
        )
    return config


def with_spool_section(options: Options, config: Config) -> Options:
    """``options`` with the config file's ``[spool]`` settings, for each ``--spool_*`` option the command line leaves
    at its default."""
    if not config.spool:
        return options
    defaults = Options.__dataclass_fields__
    changes: dict[str, Any] = {
        f"spool_{key}": value
        for key, value in config.spool
        if getattr(options, f"spool_{key}") == defaults[f"spool_{key}"].default
    }
    return dataclasses.replace(options, **changes)


def load_config_file(path: str | Path, *, initial_brokers: Sequence[Broker] = ()) -> Config:
    """Read and validate a config file, XML or TOML; ``initial_brokers``, when given, replace the file's."""
    data = _read_bounded(path)
    source = str(path)
    suffix = Path(path).suffix.lower()
    if suffix == ".toml":
        return load_toml(data, source=source, initial_brokers=initial_brokers)
    if suffix == ".xml" or data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<"):
        return load_xml(data, source=source, initial_brokers=initial_brokers)
    return load_toml(data, source=source, initial_brokers=initial_brokers)


def _read_bounded(path: str | Path) -> bytes:
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except (OSError, ValueError) as error:  # ValueError: a NUL in the path
        reason = getattr(error, "strerror", None) or error
        raise ConfigError(f"cannot read the config file: {reason}", source=str(path)) from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"the config file is larger than {MAX_FILE_BYTES} bytes", source=str(path))
    return data


def default_config(initial_brokers: Sequence[Broker]) -> Config:
    """The configuration used without ``--config_path`` (see the module rules)."""
    return Config(
        batching=BatchingConfig(
            named_configs={"default_latency": BatchLimits(time_ms=1000, messages=None, bytes=256 * 1024)},
            produce_request_data_limit=1024 * 1024,
            message_max_bytes=1_000_000,
            combined_topics=CombinedTopics(enabled=True, config="default_latency"),
            default_topic=TopicBatching(TopicAction.COMBINED_TOPICS),
        ),
        compression=CompressionConfig(
            named_configs={
                "snappy_config": CompressionCodec(CompressionType.SNAPPY, min_size=128),
                "no_compression": CompressionCodec(CompressionType.NONE),
            },
            size_threshold_percent=75,
            default_topic="snappy_config",
        ),
        initial_brokers=tuple(initial_brokers),
    )
