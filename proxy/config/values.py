"""Scalar values of the config files, parsed the way Bruce parses them; shared by the XML and TOML loaders.

Rules (Bruce's ``conf.cc``):
- Surrounding whitespace is ignored. A number is decimal digits with an optional leading ``+``; where the ``k``
  suffix is allowed (either case, whitespace before it allowed), it multiplies by 1024. Where it is not allowed it is
  an error that says so, never silently ignored.
- A keyword (``disable``, ``unlimited``) is matched without regard to case and parses to ``None``.
- Booleans are ``true`` / ``false`` in any case. Names are trimmed.
- TOML gives typed values: an integer is taken as is (never a bool or a float), a string is parsed like an XML
  attribute. Negative numbers and numbers above 2**63 - 1 are rejected.
- Range rules that depend on the setting (0 not allowed, at most 100, ...) are the model's checks, not these.
- Errors are :class:`ConfigError` with the problem only; the caller adds the location.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TypeVar

from .errors import ConfigError

MAX_NUMBER = 2**63 - 1
_DIGITS = re.compile(r"\+?[0-9]+")

E = TypeVar("E")


def show(raw: object) -> str:
    """A raw value as the user wrote it, quoted if it is text."""
    if isinstance(raw, str):
        return json.dumps(raw)
    if isinstance(raw, bool):
        return "true" if raw else "false"
    return str(raw)


def accepted_forms(*, allow_k: bool, keyword: str | None) -> str:
    forms = ["a whole number"]
    if allow_k:
        forms.append('a number with the k suffix such as "256k" (256 * 1024)')
    if keyword:
        forms.append(f'"{keyword}"')
    return forms[0] if len(forms) == 1 else ", ".join(forms[:-1]) + " or " + forms[-1]


def parse_number(raw: object, *, allow_k: bool, keyword: str | None = None) -> int | None:
    """A non-negative integer, ``None`` for ``keyword``. ``allow_k``: accept the ``k`` suffix (* 1024)."""
    expected = accepted_forms(allow_k=allow_k, keyword=keyword)
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        raise ConfigError(f"{show(raw)} is not valid here: expected {expected}")
    if isinstance(raw, int):
        return _in_range(raw, show(raw))
    text = raw.strip()
    if keyword is not None and text.lower() == keyword:
        return None
    if not text:
        raise ConfigError(f"the value is empty: expected {expected}")
    multiplier = 1
    if text[-1] in "kK":
        if not allow_k:
            raise ConfigError(
                f"{show(raw)}: the k suffix (* 1024) is not allowed here; write the whole number"
                + (f' or "{keyword}"' if keyword else "")
            )
        text = text[:-1].rstrip()
        multiplier = 1024
    if not _DIGITS.fullmatch(text):
        raise ConfigError(f"{show(raw)} is not valid here: expected {expected}")
    return _in_range(int(text) * multiplier, show(raw))


def _in_range(value: int, shown: str) -> int:
    if value < 0:
        raise ConfigError(f"{shown} is negative: expected a number of at least 0")
    if value > MAX_NUMBER:
        raise ConfigError(f"{shown} is too large: the largest accepted number is {MAX_NUMBER}")
    return value


def parse_bool(raw: object) -> bool:
    """``true`` / ``false`` (any case, trimmed), or a TOML boolean."""
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str):
        text = raw.strip().lower()
        if text in ("true", "false"):
            return text == "true"
    raise ConfigError(f'{show(raw)} is not valid here: expected "true" or "false"')


def parse_name(raw: object) -> str:
    """A name (of a named config, a topic, a host): a string, trimmed."""
    if not isinstance(raw, str):
        raise ConfigError(f"{show(raw)} is not valid here: expected a name in quotes")
    return raw.strip()


def parse_choice(raw: object, choices: Mapping[str, E], *, ignore_case: bool) -> E:
    """One of ``choices`` (keys are the spellings; trimmed; case-insensitive if ``ignore_case``)."""
    if isinstance(raw, str):
        text = raw.strip()
        for spelling, value in choices.items():
            if text == spelling or (ignore_case and text.lower() == spelling.lower()):
                return value
    allowed = ", ".join(f'"{spelling}"' for spelling in choices)
    raise ConfigError(f"{show(raw)} is not valid here: expected one of {allowed}")
