"""How the daemon's parts are set up from its :class:`~bruce.proxy.config.Options` and
:class:`~bruce.proxy.config.Config`: the producer's settings, the legacy output rewrite, the plog listeners, the
timer task's tick. Pure functions: nothing here opens, starts or reads anything.
"""

from __future__ import annotations

from collections.abc import Callable

from bruce.producer.config import ProducerConfig
from bruce.producer.settings import NAMES

from .config import Config, ConfigError, Options
from .message import Message
from .plog.config import PlogConfigError, check_unique

WHERE = "--enable_idempotence"
MAX_TICK_S = 0.05  # the timer task's longest sleep (see Daemon._timers)


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


def legacy_output(route: Callable[[Message], None], *, omit_timestamp: bool) -> Callable[[Message], None]:
    """``--use_old_output_format``: each value becomes ``"<ts> <topic> <value>"`` (``"<topic> <value>"`` with
    ``--omit_timestamp``) before routing. The budget charge stays what was reserved."""

    def rewrite(msg: Message) -> None:
        topic = msg.topic.encode("utf-8", "surrogateescape")
        prefix = topic if omit_timestamp else b"%d %s" % (msg.timestamp, topic)
        msg.value = prefix + b" " + (msg.value or b"")
        msg.size = len(msg.key or b"") + len(msg.value)
        route(msg)

    return rewrite


def plog_listeners(options: Options, config: Config) -> tuple:
    """The config file's plog listeners, then the command line's; no two may share a port or a name."""
    listeners = (*config.plog_listeners, *options.plog_udp, *options.plog_tcp)
    places = [
        *(f"plog.listener[{i + 1}]" for i in range(len(config.plog_listeners))),
        *(["--plog_udp"] * len(options.plog_udp)),
        *(["--plog_tcp"] * len(options.plog_tcp)),
    ]
    try:
        check_unique(listeners, places)
    except PlogConfigError as error:
        raise ConfigError(str(error)) from None
    return listeners


def tick_for(config: Config) -> float:
    """The timer task's longest sleep: the shortest batch time of the config, at most :data:`MAX_TICK_S`."""
    times = [limits.time_ms for limits in config.batching.named_configs.values() if limits.time_ms]
    return min([MAX_TICK_S, *(t / 1000 for t in times)])
