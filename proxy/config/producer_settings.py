"""The producer's settings from the daemon's :class:`Options` and :class:`Config` (Bruce's names on both sides).

Rules: pure functions, nothing opened or started. Topic creation is the router's (it holds a new topic's messages
meanwhile), so the producer's own is off. ``--enable_idempotence`` turned on explicitly needs ``--required_acks -1``
and not the 0.8 protocol; each refusal is a :class:`ConfigError` naming the option.
"""

from __future__ import annotations

from bruce.producer import SETTING_NAMES as NAMES
from bruce.producer import ProducerConfig

from .errors import ConfigError
from .model import Config
from .options import Options

WHERE = "--enable_idempotence"


def producer_config(options: Options, config: Config) -> ProducerConfig:
    """The producer settings the command line and config file give (Bruce's names on both sides). Topic creation is
    the router's (it holds the topic's messages meanwhile), so the producer's own is off."""
    return ProducerConfig(
        bootstrap_servers=tuple(broker.address for broker in config.initial_brokers),
        client_id=options.client_id,
        protocol=options.kafka_protocol,
        acks=options.required_acks,
        replication_timeout_ms=options.replication_timeout,
        produce_request_data_limit=config.batching.produce_request_data_limit,
        message_max_bytes=max(1, config.batching.message_max_bytes),
        max_failed_delivery_attempts=options.max_failed_delivery_attempts,
        socket_timeout_ms=options.kafka_socket_timeout_ms,
        min_pause_delay_ms=options.min_pause_delay,
        pause_rate_limit_initial_ms=max(1, options.pause_rate_limit_initial),
        pause_rate_limit_max_double=options.pause_rate_limit_max_double,
        dispatcher_restart_max_delay_ms=options.dispatcher_restart_max_delay,
        metadata_refresh_interval_ms=options.metadata_refresh_interval_ms,
        topic_autocreate=False,
        topic_create_timeout_ms=options.topic_create_timeout,
        shutdown_max_delay_ms=options.shutdown_max_delay,
        message_timeout_ms=options.message_timeout_ms,  # 0 by default: Bruce's attempt limits only
        empty_as_null=True,  # Bruce parity: a datagram cannot say "null", so an empty key or value means absent
        security=config.kafka,
        enable_idempotence=enable_idempotence(options, config),
        **{NAMES[name]: value for name, value in config.producer_properties},
    )


def enable_idempotence(options: Options, config: Config) -> bool | None:
    """``--enable_idempotence``, or with ``auto`` the config file's ``[kafka]`` "enable.idempotence" (None: on when
    the brokers take it and ``--required_acks`` is -1). Turned on explicitly, it needs acks -1 and not the 0.8
    protocol."""
    wanted = {"auto": config.enable_idempotence, "true": True, "false": False}[options.enable_idempotence]
    if wanted and options.required_acks != -1:
        raise ConfigError(
            f"needs --required_acks -1, not {options.required_acks}: a write fewer replicas acknowledged can be lost "
            "in a leader change, which breaks the idempotent producer's sequence",
            where=WHERE,
        )
    if wanted and options.kafka_protocol == "v0":
        raise ConfigError("the 0.8 protocol (--kafka_protocol v0) has no idempotent produce", where=WHERE)
    return wanted
