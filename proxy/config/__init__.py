"""The daemon's configuration: Bruce's XML config file, the TOML equivalent, and the ``bruce`` command line.

Start here: :func:`configure` turns ``argv`` into ``(Options, Config)`` (or prints help, the version, a converted
config or an error and gives the exit status). :class:`Config` answers per topic with :meth:`Config.batching_for`,
:meth:`Config.compression_for` and :meth:`Config.rate_limit_for`. docs/configuration.md is the reference.
"""

from __future__ import annotations

from .command_line import ConvertConfig, ImmediateExit, parse_command_line
from .errors import ConfigError
from .listeners import ListenerConfig, PlogConfigError, check_descriptors, check_unique, listeners_from_section
from .model import (
    BatchingConfig,
    BatchingPolicy,
    BatchLimits,
    Broker,
    CombinedTopics,
    CompressionCodec,
    CompressionConfig,
    CompressionType,
    Config,
    FrozenMap,
    RateLimit,
    RateLimitingConfig,
    TopicAction,
    TopicBatching,
)
from .options import NOTICE, Options, option_specs
from .ports import KAFKA_PORT, free_port
from .producer_settings import producer_config
from .startup import EXIT_CONFIG, EXIT_USAGE, configure, default_config, load_config, load_config_file
from .toml_config import load_toml, to_toml
from .version import package_version
from .xml_config import load_xml

__all__ = [
    "EXIT_CONFIG",
    "EXIT_USAGE",
    "KAFKA_PORT",
    "NOTICE",
    "BatchLimits",
    "BatchingConfig",
    "BatchingPolicy",
    "Broker",
    "CombinedTopics",
    "CompressionCodec",
    "CompressionConfig",
    "CompressionType",
    "Config",
    "ConfigError",
    "ConvertConfig",
    "FrozenMap",
    "ImmediateExit",
    "ListenerConfig",
    "Options",
    "PlogConfigError",
    "RateLimit",
    "RateLimitingConfig",
    "TopicAction",
    "TopicBatching",
    "check_descriptors",
    "check_unique",
    "configure",
    "default_config",
    "free_port",
    "listeners_from_section",
    "load_config",
    "load_config_file",
    "load_toml",
    "load_xml",
    "option_specs",
    "package_version",
    "parse_command_line",
    "producer_config",
    "to_toml",
]
