"""The configuration's one error, :class:`~bruce.producer.ConfigError` (the producer's settings and the daemon's
share it), and the rules of its messages.

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

from bruce.producer import ConfigError

__all__ = ["CLIP", "ConfigError", "Path", "clip"]

Path = tuple[str | int, ...]
"""A format-neutral location: section and key names (TOML spelling), named-item names, list indexes."""

CLIP = 60
"""The most characters of a value, name or key an error quotes."""


def clip(text: str, limit: int = CLIP) -> str:
    """``text``, cut to ``limit`` characters (the last one ``…``) when it is longer."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
