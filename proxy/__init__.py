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
Exported for other packages: :func:`free_port` (spark's local cluster), loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bruce.wire import lazy_face

if TYPE_CHECKING:  # the face, loaded on first use: importing a subsystem does not load the others
    from .config.ports import free_port as free_port
    from .spool import parse_done as parse_done
    from .spool import scan_segment as scan_segment

__getattr__ = lazy_face(__name__, __file__)
