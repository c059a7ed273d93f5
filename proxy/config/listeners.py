"""Configuration of the plog listeners: one frozen :class:`ListenerConfig` per ``[[plog.listener]]`` table.

Rules:
- Every key is checked: an unknown key, a wrong type or an out-of-range value raises :class:`PlogConfigError` naming
  the table and key (``plog.listener[1].port: ...``). Nothing is silently ignored.
- Defaults are plog's: bind 127.0.0.1 (binding all interfaces is "a bad idea"), port 23456, lines up to 1 MiB,
  a 1 MiB reassembly buffer whose messages expire after 10 s, a 1 MiB socket receive buffer.
- ``topic`` is the listener's default topic. Like plog's ``default_topic``, it may be absent (or the string
  ``"null"``) on a UDP listener: then only multipart messages tagged ``kt:<topic>`` are delivered and the rest are
  counted as ``no_topic``. A TCP listener has no tags, so it needs a topic.
- TCP connections are bounded in number (``max_connections``, 256) and in time: one that sends nothing between lines
  for ``idle_timeout`` (60 s) is closed, and so is one whose started line does not end within ``line_timeout``
  (30 s; the cut-off line is discarded), so idle or trickling clients cannot hold the slots.
- ``enable_kill`` (default false) lets the ``KILL`` command stop the daemon (an orderly shutdown, not plog's crash).
- Two listeners may not share a protocol, address and port, nor a name (:func:`check_unique`; the daemon checks the
  file's listeners and the command line's together).
- The TCP listeners' ``max_connections`` together may use at most half of the process's file descriptors
  (:func:`check_descriptors`, checked at startup), so a flood of connections leaves room for Kafka.
- Tables are numbered from 1 in messages (``plog.listener[1]`` is the first), as everywhere in the configuration.
- The command line's short form (``--plog_udp`` / ``--plog_tcp``) is :func:`listeners_from_option`:
  ``[HOST:]PORT[:TOPIC]``, comma-separated, every other setting at its default.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from bruce.wire import UsageError

PROTOCOLS = ("udp", "tcp")


class PlogConfigError(UsageError):
    """A ``[[plog.listener]]`` table that cannot be used as written."""

    reason = "CONFIG"


@dataclass(frozen=True, slots=True)
class ListenerConfig:
    """One plog listener."""

    protocol: str  # "udp" or "tcp"
    port: int = 23456  # 0 = any free port (tests)
    topic: str | None = None  # default topic; None = only kt:-tagged messages (UDP)
    address: str = "127.0.0.1"
    name: str = ""  # for stats and discard reports; defaults to "plog-<protocol>-<port>"
    # UDP
    defrag_capacity: int = 1 << 20  # bytes of incomplete multipart messages held
    defrag_expiry: float = 10.0  # seconds after a message's last fragment before it is dropped
    receive_buffer: int = 1 << 20  # SO_RCVBUF; the kernel caps it at net.core.rmem_max
    enable_kill: bool = False
    # TCP
    max_line: int = 1 << 20  # bytes per line, newline excluded
    max_connections: int = 256
    idle_timeout: float = 60.0  # seconds a connection may send nothing (between lines) before it is closed
    line_timeout: float = 30.0  # seconds a started line may take to end before the connection is closed

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", f"plog-{self.protocol}-{self.port}")
        if self.topic == "null":
            object.__setattr__(self, "topic", None)
        _check(self)


def _fail(where: str, key: str, problem: str) -> PlogConfigError:
    return PlogConfigError(f"{where}.{key}: {problem}")


def _check(cfg: ListenerConfig, where: str = "plog.listener") -> None:
    if cfg.protocol not in PROTOCOLS:
        raise _fail(where, "protocol", f"must be one of {', '.join(PROTOCOLS)}, not {cfg.protocol!r}")
    if not isinstance(cfg.port, int) or isinstance(cfg.port, bool) or not 0 <= cfg.port <= 65535:
        raise _fail(where, "port", f"must be an integer in 0..65535, not {cfg.port!r}")
    if not isinstance(cfg.address, str) or not cfg.address:
        raise _fail(where, "address", f"must be a host address, not {cfg.address!r}")
    if cfg.topic is not None and (not isinstance(cfg.topic, str) or not cfg.topic):
        raise _fail(where, "topic", f"must be a non-empty string, not {cfg.topic!r}")
    if cfg.topic is None and cfg.protocol == "tcp":
        raise _fail(where, "topic", "a tcp listener needs a topic (its lines carry no kt: tag)")
    if not isinstance(cfg.name, str):
        raise _fail(where, "name", f"must be a string, not {cfg.name!r}")
    for key in ("defrag_capacity", "receive_buffer", "max_line", "max_connections"):
        value = getattr(cfg, key)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise _fail(where, key, f"must be a positive integer, not {value!r}")
    if cfg.defrag_capacity < 4096:
        raise _fail(where, "defrag_capacity", f"must be at least 4096 bytes, not {cfg.defrag_capacity}")
    expiry = cfg.defrag_expiry
    if not isinstance(expiry, int | float) or isinstance(expiry, bool) or not 0 < expiry <= 3600:
        raise _fail(where, "defrag_expiry", f"must be a number of seconds in (0, 3600], not {expiry!r}")
    for key in ("idle_timeout", "line_timeout"):
        value = getattr(cfg, key)
        if not isinstance(value, int | float) or isinstance(value, bool) or not 0 < value <= 86400:
            raise _fail(where, key, f"must be a number of seconds in (0, 86400], not {value!r}")
    if not isinstance(cfg.enable_kill, bool):
        raise _fail(where, "enable_kill", f"must be true or false, not {cfg.enable_kill!r}")


_KEYS = {f.name for f in fields(ListenerConfig)}


def listener_from_table(table: Mapping[str, Any], where: str = "plog.listener") -> ListenerConfig:
    """One listener from a TOML table (or any mapping)."""
    if not isinstance(table, Mapping):
        raise PlogConfigError(f"{where}: must be a table, not {type(table).__name__}")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise _fail(where, unknown[0], f"unknown key (known: {', '.join(sorted(_KEYS))})")
    if "protocol" not in table:
        raise _fail(where, "protocol", "missing (udp or tcp)")
    try:
        return ListenerConfig(**table)
    except PlogConfigError as e:
        raise PlogConfigError(str(e).replace("plog.listener.", f"{where}.", 1)) from None


def listeners_from_section(plog: Mapping[str, Any]) -> tuple[ListenerConfig, ...]:
    """Every listener of a ``[plog]`` section: ``{"listener": [table, ...]}`` (TOML's ``[[plog.listener]]``)."""
    if not isinstance(plog, Mapping):
        raise PlogConfigError(f"plog: must be a table, not {type(plog).__name__}")
    unknown = sorted(set(plog) - {"listener"})
    if unknown:
        raise PlogConfigError(f"plog.{unknown[0]}: unknown key (known: listener)")
    tables = plog.get("listener", [])
    if not isinstance(tables, Sequence) or isinstance(tables, str | bytes):
        raise PlogConfigError("plog.listener: must be an array of tables ([[plog.listener]])")
    configs = tuple(listener_from_table(t, f"plog.listener[{i + 1}]") for i, t in enumerate(tables))
    check_unique(configs, [f"plog.listener[{i + 1}]" for i in range(len(configs))])
    return configs


def check_unique(configs: Sequence[ListenerConfig], places: Sequence[str] | None = None) -> None:
    """No two listeners share a protocol, address and port (other than 0), nor a name. ``places`` names each config
    in the error (default: ``plog.listener[n]``)."""
    where = list(places) if places is not None else [f"plog.listener[{i + 1}]" for i in range(len(configs))]
    seen_names: set[str] = set()
    seen_binds: set[tuple[str, str, int]] = set()
    for place, cfg in zip(where, configs, strict=True):
        bind = (cfg.protocol, cfg.address, cfg.port)
        if cfg.port and bind in seen_binds:
            raise PlogConfigError(f"{place}: another listener already uses {cfg.protocol} {cfg.address}:{cfg.port}")
        if cfg.name in seen_names:
            raise PlogConfigError(f"{place}.name: {cfg.name!r} is already used by another listener")
        seen_binds.add(bind)
        seen_names.add(cfg.name)


def check_descriptors(configs: Sequence[ListenerConfig], nofile: int) -> None:
    """The TCP listeners' ``max_connections`` together may take at most half of ``nofile`` (the soft
    ``RLIMIT_NOFILE``): the rest stays for Kafka connections, the status server and files."""
    total = sum(cfg.max_connections for cfg in configs if cfg.protocol == "tcp")
    if 0 <= nofile < 2 * total:  # RLIM_INFINITY is -1
        raise PlogConfigError(
            f"plog tcp listeners: max_connections add up to {total}, more than half of the {nofile} file descriptors "
            "this process may open (RLIMIT_NOFILE); the rest must stay free for Kafka connections and files: raise "
            "the limit (ulimit -n, systemd LimitNOFILE=) or lower max_connections"
        )


_SHORT_FORM = re.compile(r"(?:(?P<host>\[[^\]]+\]|[^:\[\]]+):)??(?P<port>[0-9]+)(?::(?P<topic>[^:]*))?")


def listeners_from_option(protocol: str, text: str) -> tuple[ListenerConfig, ...]:
    """``--plog_udp`` / ``--plog_tcp``: ``[HOST:]PORT[:TOPIC],...`` → listeners (IPv6 hosts in brackets). Raises
    ``ValueError`` with the problem in words (the option parser adds the option's name)."""
    configs = []
    for item in (part.strip() for part in text.split(",")):
        match = _SHORT_FORM.fullmatch(item)
        if match is None:
            raise ValueError(f'"{item}" is not [HOST:]PORT[:TOPIC]')
        host = (match["host"] or "127.0.0.1").strip("[]")
        topic = match["topic"] or None
        try:
            configs.append(ListenerConfig(protocol=protocol, port=int(match["port"]), topic=topic, address=host))
        except PlogConfigError as e:
            raise ValueError(f'"{item}": {str(e).split(": ", 1)[1]}') from None
    return tuple(configs)
