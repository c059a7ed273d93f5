"""Reading the ``bruce`` command line into :class:`Options`, and ``--help`` / ``--version``.

Rules:
- ``--name VALUE`` or ``--name=VALUE``; ``-`` may stand for ``_`` in a name; a switch takes no value. An option given
  twice (except :data:`REPEATABLE` ones), an unknown option (answered with the closest known one) or a stray word is
  an error naming it.
- A value may start with ``-`` (``--required_acks -1``): the word after an option that takes a value is its value.
- ``-h``/``--help`` and ``--version`` anywhere win and return :class:`ImmediateExit`; ``--convert_config FILE``,
  given alone, returns a :class:`ConvertConfig` request. ``startup.configure`` carries both out.
- An error points at the help of the command the user typed: :func:`program_name` (``./run.sh`` sets
  ``BRUCE_PROGRAM``; otherwise ``bruce``).
"""

from __future__ import annotations

import difflib
import os
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError
from .options import Options, option_specs
from .version import package_version


@dataclass(frozen=True, slots=True)
class ImmediateExit:
    """The command line asked for text, not for a daemon: write ``output`` to stdout as is, exit with ``status``."""

    output: str
    status: int = 0


@dataclass(frozen=True, slots=True)
class ConvertConfig:
    """``--convert_config FILE``: print FILE's configuration as TOML and exit."""

    path: str


ACTIONS = ("help", "version", "convert_config")
REPEATABLE = ("kafka_property",)  # options that may be given more than once (their values add up)


def program_name() -> str:
    """The command the user typed to run bruce, for pointers to its help: ``$BRUCE_PROGRAM`` or ``bruce``."""
    return os.environ.get("BRUCE_PROGRAM") or "bruce"


def parse_command_line(argv: Sequence[str]) -> Options | ImmediateExit | ConvertConfig:
    """Parse ``argv`` (without the program name). Raises :class:`ConfigError` naming the option on any problem."""
    args = list(argv)
    names = [_option_name(arg) for arg in args]
    if "-h" in args or "help" in names:
        return ImmediateExit(help_text())
    if "version" in names:
        return ImmediateExit(version_text())
    if "convert_config" in names:
        return _convert_request(args)
    specs = option_specs()
    values: dict[str, Any] = {}
    index = 0
    while index < len(args):
        arg, name = args[index], names[index]
        index += 1
        if name is None:
            raise ConfigError(f'unexpected argument "{arg}": every option starts with -- (see {program_name()} --help)')
        spec = specs.get(name)
        if spec is None:
            close = difflib.get_close_matches(name, [*specs, *ACTIONS], n=1)
            hint = f"; did you mean --{close[0]}?" if close else ""
            raise ConfigError(f"unknown option --{name}{hint} (see {program_name()} --help)")
        if name in values and name not in REPEATABLE:
            raise ConfigError("is given twice", where=f"--{name}")
        _, has_value, value = arg.partition("=")
        if spec.read is None:
            if has_value:
                raise ConfigError("is a switch and takes no value", where=f"--{name}")
            values[name] = True
            continue
        if not has_value:
            if index >= len(args):
                raise ConfigError(f"needs a value: --{name} {spec.metavar}", where=f"--{name}")
            value = args[index]
            index += 1
        try:
            values[name] = values.get(name, ()) + spec.read(value) if name in REPEATABLE else spec.read(value)
        except ValueError as error:
            raise ConfigError(str(error), where=f"--{name}") from None
    if values.get("discard_log_path") == "":
        values["discard_log_path"] = None  # Bruce: an empty path means no discard log
    return Options(**values)


def _option_name(arg: str) -> str | None:
    """``--status-port=1`` → ``status_port``; ``None`` if ``arg`` is not an option."""
    if not arg.startswith("--") or len(arg) == 2:
        return None
    return arg[2:].partition("=")[0].replace("-", "_")


def _convert_request(args: list[str]) -> ConvertConfig:
    if len(args) == 1 and "=" in args[0]:
        return ConvertConfig(args[0].partition("=")[2])
    if len(args) == 2 and _option_name(args[0]) == "convert_config":
        return ConvertConfig(args[1])
    raise ConfigError("takes one file and no other option: bruce --convert_config FILE", where="--convert_config")


# -- help ----------------------------------------------------------------------------------------

_DESCRIPTION = (
    "Kafka producer daemon. Clients send messages as datagrams to a local UNIX socket and move on; bruce routes, "
    "batches, compresses and delivers them to Kafka and accounts for every message it could not deliver."
)


def version_text() -> str:
    return f"bruce (bruce-kafka) {package_version()}\n"


def help_text(width: int = 100) -> str:
    """``--help``: every option by group, with its default."""
    wrap = textwrap.TextWrapper(width=width, initial_indent=" " * 8, subsequent_indent=" " * 8)
    lines = ["usage: bruce [OPTION]...", "", *textwrap.wrap(_DESCRIPTION, width)]
    group = None
    for spec in option_specs().values():
        if spec.group != group:
            group = spec.group
            lines += ["", f"{group}:"]
        lines.append(f"  --{spec.name}" + (f" {spec.metavar}" if spec.metavar else ""))
        shown = spec.default not in (None, "", ()) and spec.read is not None
        lines += wrap.wrap(spec.help + (f" (default: {spec.default})" if shown else ""))
    lines += [
        "",
        "Other:",
        "  -h, --help",
        *wrap.wrap("Show this text and exit."),
        "  --version",
        *wrap.wrap("Show the version and exit."),
        "  --convert_config FILE",
        *wrap.wrap("Print FILE (Bruce's XML config) as the equivalent TOML config and exit."),
        "",
        *textwrap.wrap(
            "Every option may also be written with - for _ (--status-port) and as --name=VALUE. "
            "docs/configuration.md describes each option and the config file formats.",
            width,
        ),
    ]
    return "\n".join(lines) + "\n"
