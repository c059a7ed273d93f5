"""The configuration's one error: :class:`ConfigError`.

Rules:
- Every rejected setting — a config file (XML or TOML), a command-line option, a value built in code — raises
  :class:`ConfigError`, and nothing else, before the daemon starts.
- The message is one sentence a person can act on: where (the file and line, then the element path such as
  ``batching/namedConfigs/config[name="low_latency"]/time`` or the option such as ``--required_acks``), then what is
  wrong and what is accepted instead.
- An error is one line: text quoted from the file (a value, a name, a key) is cut to :data:`CLIP` characters
  (:func:`clip`), and control characters (a newline in a name) are written ``\\uXXXX``, whatever the file holds.
- ``path`` is the format-neutral location of a semantic problem (a tuple of keys); the file loaders use it to name the
  place in their own syntax. Library misuse stays :class:`bruce.wire.errors.UsageError`.
"""

from __future__ import annotations

import re

from bruce.wire import BruceError

Path = tuple[str | int, ...]
"""A format-neutral location: section and key names (TOML spelling), named-item names, list indexes."""


class ConfigError(BruceError):
    """A configuration file or command line the daemon cannot start with."""

    reason = "BAD_CONFIG"

    def __init__(
        self,
        problem: str,
        *,
        source: str | None = None,
        where: str | None = None,
        line: int | None = None,
        path: Path | None = None,
    ) -> None:
        self.problem = problem
        self.source = source
        self.where = where
        self.line = line
        self.path = path
        super().__init__(_compose(problem, source, where, line))

    def located(self, *, source: str | None, where: str | None, line: int | None = None) -> ConfigError:
        """The same problem, placed in a file (the loaders call this on problems found by the model's checks)."""
        return ConfigError(self.problem, source=source, where=where, line=line, path=self.path)


def _compose(problem: str, source: str | None, where: str | None, line: int | None) -> str:
    place = ""
    if source is not None:
        place = source if line is None else f"{source}, line {line}"
    elif line is not None:
        place = f"line {line}"
    if where:
        place = f"{place}: {where}" if place else where
    message = f"{place}: {problem}" if place else problem
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04X}", message)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


CLIP = 60
"""The most characters of a value, name or key an error quotes."""


def clip(text: str, limit: int = CLIP) -> str:
    """``text``, cut to ``limit`` characters (the last one ``…``) when it is longer."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
