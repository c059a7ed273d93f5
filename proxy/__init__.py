"""bruce.proxy — the bruce daemon, one subpackage per concern (docs/architecture.md).

- ``intake``: the input socket and its reader process, datagrams into messages, the memory budget.
- ``routing``: routing checks, rate limits, batching, compression policy, packed storage of held messages.
- ``accounting``: every message's fate settled once; discard reports, the discard log, message debug logs.
- ``spool``: the durable on-disk spool.
- ``status``: the status pages, /metrics, and ``bruce-check`` (the Nagios-style check of those pages).
- ``plog``: plog's UDP/TCP listeners.
- ``config``: options, the config file, the producer's settings from them.
- ``daemon``: the composition root that wires the others together, and the ``bruce`` command.

Rule: the subsystems never import ``daemon``; ``daemon`` imports them all (tests/test_layering.py checks it).
Exported for other packages, loaded on first use: :func:`free_port` (spark's local cluster), and the spool's readers
(``bruce-wire spool``): :func:`scan_segment` (a segment file's records), :func:`parse_done` (a done file's bitmap).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the type of what __getattr__ loads
    from .config.ports import free_port
    from .spool.format import parse_done
    from .spool.scan import scan_segment

__all__ = ["free_port", "parse_done", "scan_segment"]
_EXPORTS = {"free_port": "config.ports", "parse_done": "spool.format", "scan_segment": "spool.scan"}


def __getattr__(name: str) -> object:
    """Load an exported name on first use: importing a subsystem (the intake's reader process imports almost nothing)
    does not load the others."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value
