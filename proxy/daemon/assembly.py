"""How the daemon's parts are set up from its :class:`~bruce.proxy.config.Options` and
:class:`~bruce.proxy.config.Config`: the legacy output rewrite, the plog listeners, the timer task's tick (the
producer's settings are :func:`bruce.proxy.config.producer_config`). Pure functions: nothing here opens, starts or
reads anything.
"""

from __future__ import annotations

from collections.abc import Callable

from ..config import Config, ConfigError, Options
from ..plog.config import ListenerConfig, PlogConfigError, check_unique
from ..routing.message import Message

MAX_TICK_S = 0.05  # the timer task's longest sleep (see Daemon._timers)


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


def plog_listeners(options: Options, config: Config) -> tuple[ListenerConfig, ...]:
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
