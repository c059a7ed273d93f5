"""Readers for command-line option values. Each takes the text after ``--name`` and returns the value, or raises
``ValueError`` with the problem in words (the parser adds the option's name).

Rules: integers are decimal with an optional sign, like Bruce's (TCLAP) reading; surrounding whitespace is ignored;
a range is part of each reader so that ``--help`` and the error say the same thing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from bruce.client import default_socket_path
from bruce.producer import REDACTED, SECRETS, SECURITY_PROPERTIES, Secret, is_secret
from bruce.wire import BruceError

from .listeners import ListenerConfig, listeners_from_option
from .model import DEFAULT_BROKER_PORT, PRODUCER_PROPERTIES, Broker

MAX_NUMBER = 2**63 - 1

Reader = Callable[[str], Any]


def integer(minimum: int = 0, maximum: int = MAX_NUMBER) -> Reader:
    """A decimal integer from ``minimum`` to ``maximum``."""

    def read(text: str) -> int:
        stripped = text.strip()
        if not re.fullmatch(r"[+-]?[0-9]+", stripped):
            raise ValueError(f'"{text}" is not a whole number')
        value = int(stripped)
        if not minimum <= value <= maximum:
            raise ValueError(f"{value} is out of range: expected {minimum} to {maximum}")
        return value

    return read


def text(*, allow_empty: bool = True) -> Reader:
    """Any text (a path, a name); ``allow_empty=False`` refuses an empty or blank one."""

    def read(value: str) -> str:
        if not allow_empty and not value.strip():
            raise ValueError("must not be empty")
        return value

    return read


def path(*, allow_empty: bool = False) -> Reader:
    """A file system path: not blank (unless ``allow_empty``), no NUL byte."""

    def read(value: str) -> str:
        if "\0" in value:
            raise ValueError("a path cannot contain a NUL character")
        if not allow_empty and not value.strip():
            raise ValueError("must not be empty")
        return value

    return read


def choice(*values: str) -> Reader:
    """Exactly one of ``values`` (case matters, as in Bruce)."""

    def read(value: str) -> str:
        if value not in values:
            raise ValueError(f'"{value}" is not one of: {", ".join(values)}')
        return value

    return read


def file_mode(value: str) -> int:
    """Permission bits as C's ``strtol(value, 0)`` reads them (``0660`` octal, ``0x1b0`` hex, ``432``); ≤ 07777."""
    stripped = value.strip()
    if re.fullmatch(r"0[xX][0-9a-fA-F]+", stripped):
        mode = int(stripped, 16)
    elif re.fullmatch(r"0[0-7]*", stripped):
        mode = int(stripped, 8)
    elif re.fullmatch(r"[1-9][0-9]*", stripped):
        mode = int(stripped)
    else:
        raise ValueError(f'"{value}" is not a file mode: write it in octal with a leading 0, e.g. 0660')
    if mode > 0o7777:
        raise ValueError(f'"{stripped}" is not a file mode: the largest is 07777')
    return mode


def host_names(value: str) -> tuple[str, ...]:
    """``name,name,...``: host names (no port, no spaces inside a name)."""
    names = tuple(part.strip() for part in value.split(","))
    for name in names:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            raise ValueError(f'"{name}" is not a host name (letters, digits, "-", "_" and ".", no port)')
    return names


def broker_list(value: str) -> tuple[Broker, ...]:
    """``host[:port],host[:port],...``; IPv6 hosts in brackets (``[::1]:9092``); the port defaults to 9092."""
    brokers = []
    for item in (part.strip() for part in value.split(",")):
        host, port = item, str(DEFAULT_BROKER_PORT)
        if item.startswith("["):
            host, _, rest = item[1:].partition("]")
            if rest:
                if not rest.startswith(":"):
                    raise ValueError(f'"{item}" is not [host]:port')
                port = rest[1:]
        elif item.count(":") == 1:
            host, port = item.split(":")
        if not host:
            raise ValueError(f'"{item}" names no host: expected host or host:port, separated by commas')
        if not re.fullmatch(r"[0-9]+", port) or not 1 <= int(port) <= 65535:
            raise ValueError(f'"{item}": the port must be a number from 1 to 65535')
        brokers.append(Broker(host, int(port)))
    return tuple(brokers)


def kafka_property(value: str) -> tuple[tuple[str, Any], ...]:
    """``NAME=VALUE``: a librdkafka security property or one of the producer properties the daemon takes (a secret is
    kept as a redacted :class:`Secret`). An error never shows the value of a secret, however it was written."""
    name, sep, setting = value.partition("=")
    name = name.strip()
    if not sep or (name not in SECURITY_PROPERTIES and name not in PRODUCER_PROPERTIES):
        known = ", ".join(sorted(SECURITY_PROPERTIES))
        hint = f"a security property ({known}) or {', '.join(PRODUCER_PROPERTIES)}"
        if not sep:  # the whole argument may be a secret written with the wrong separator: never echo it
            raise ValueError(f"the value has no '=': expected NAME=VALUE with {hint}")
        shown = repr(name) if re.fullmatch(r"[A-Za-z0-9._-]+", name) and not is_secret(name) else REDACTED
        raise ValueError(f"{shown} is not {hint}")
    if name in SECRETS:
        try:
            return ((name, Secret.parse(name, setting)),)
        except BruceError as error:
            raise ValueError(str(error)) from None
    return ((name, setting),)


def plog_listeners(protocol: str) -> Reader:
    """``[HOST:]PORT[:TOPIC],...``: plog listeners of ``protocol`` with default settings (docs/plog.md)."""

    def read(value: str) -> tuple[ListenerConfig, ...]:
        return listeners_from_option(protocol, value)

    return read


def default_receive_socket_name() -> str:
    """``$XDG_RUNTIME_DIR/bruce.socket`` when that variable is set, else ``/tmp/bruce-<uid>/bruce.socket`` (a private
    directory the daemon creates and verifies: :mod:`bruce.proxy.intake.socket_path`)."""
    return default_socket_path()


def default_debug_dir() -> str:
    """``$XDG_STATE_HOME/bruce/debug`` when that variable holds an absolute path, else ``~/.local/state/bruce/debug``:
    a directory the user running bruce owns (Bruce's default, ``/home/bruce/debug``, is another user's home)."""
    state = os.environ.get("XDG_STATE_HOME", "")
    if not os.path.isabs(state):
        state = os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "bruce", "debug")
