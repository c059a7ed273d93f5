"""How the daemon's parts are set up from its :class:`~bruce.proxy.config.Options` and
:class:`~bruce.proxy.config.Config`: the legacy output rewrite (a stage before the router), the plog listeners, the
timer task's tick (the producer's settings are :func:`bruce.proxy.config.producer_config`). Nothing here opens,
starts or reads anything.
"""

from __future__ import annotations

from ..config import Config, ConfigError, ListenerConfig, Options, PlogConfigError, check_unique
from ..intake import MessageSink
from ..messages import HeldMessage

MAX_TICK_S = 0.05  # the timer task's longest sleep (see Daemon._timers)


class LegacyOutput:
    """``--use_old_output_format``: each value becomes ``"<ts> <topic> <value>"`` (``"<topic> <value>"`` with
    ``--omit_timestamp``) before the router sees it; the inputs' :class:`~bruce.proxy.intake.MessageSink` in its
    place. The budget charge stays what was reserved."""

    def __init__(self, router: MessageSink, *, omit_timestamp: bool) -> None:
        self.router = router
        self.omit_timestamp = omit_timestamp

    def route(self, msg: HeldMessage) -> None:
        topic = msg.topic.encode("utf-8", "surrogateescape")
        prefix = topic if self.omit_timestamp else b"%d %s" % (msg.timestamp, topic)
        msg.value = prefix + b" " + (msg.value or b"")
        msg.size = len(msg.key or b"") + len(msg.value)
        self.router.route(msg)

    def route_many(self, messages: list[HeldMessage]) -> None:
        """Each in turn; if routing one raises, ``messages`` keeps only those after it."""
        handed = 0
        try:
            for msg in messages:
                handed += 1
                self.route(msg)
        except BaseException:
            del messages[:handed]
            raise


def plog_listeners(options: Options, config: Config) -> tuple[ListenerConfig, ...]:
    """The config file's plog listeners, then the command line's (:func:`check_plog_listeners` at preflight)."""
    return (*config.plog_listeners, *options.plog_udp, *options.plog_tcp)


def check_plog_listeners(options: Options, config: Config) -> None:
    """No two plog listeners share a port or a name: a :class:`ConfigError` naming the second one's place."""
    places = [
        *(f"plog.listener[{i + 1}]" for i in range(len(config.plog_listeners))),
        *(["--plog_udp"] * len(options.plog_udp)),
        *(["--plog_tcp"] * len(options.plog_tcp)),
    ]
    try:
        check_unique(plog_listeners(options, config), places)
    except PlogConfigError as error:
        raise ConfigError(str(error)) from None


def tick_for(config: Config) -> float:
    """The timer task's longest sleep: the shortest batch time of the config, at most :data:`MAX_TICK_S`."""
    times = [limits.time_ms for limits in config.batching.named_configs.values() if limits.time_ms]
    return min([MAX_TICK_S, *(t / 1000 for t in times)])
