"""Kafka's rule for topic names, checked before a name reaches a broker.

Rules: a legal name is 1 to 249 characters, each an ASCII letter, digit, ``.``, ``_`` or ``-``, and is neither ``.``
nor ``..`` (Kafka refuses these itself: INVALID_TOPIC_EXCEPTION, code 17). :func:`topic_name_problem` says what is
wrong with a name in plain words, or None; the daemon discards such a message as BAD_TOPIC_NAME and ``to_bruce``
refuses it.
"""

from __future__ import annotations

import re

MAX_TOPIC_NAME = 249
LEGAL = "legal: letters, digits, '.', '_', '-'; 1 to 249 characters; not '.' or '..'"
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_ILLEGAL_CHAR = re.compile(r"[^a-zA-Z0-9._-]")


def topic_name_problem(name: str) -> str | None:
    """Why Kafka would refuse ``name`` as a topic name (without :data:`LEGAL`), or None when it is legal."""
    if _LEGAL_NAME.fullmatch(name) and name not in (".", ".."):
        return None
    if not name:
        return "empty"
    if name in (".", ".."):
        return "'.' and '..' are not topic names"
    bad = dict.fromkeys(_ILLEGAL_CHAR.findall(name))  # in order of appearance, each once
    if bad:
        shown = ", ".join(repr(c) for c in list(bad)[:10])
        return f"characters Kafka refuses: {shown}"
    return f"{len(name)} characters, more than Kafka's {MAX_TOPIC_NAME}"
