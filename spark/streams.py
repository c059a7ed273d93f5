"""Starting a streaming query that reads with ``format("bruce")``, again when Spark's start-up of its Python source
times out.

Rules:
- Spark runs a Python streaming source in a Python process of its own, started with the query, and gives it a fixed
  10 s to connect back (``PythonWorkerFactory.createSimpleWorker``; no setting changes it). On a loaded machine the
  process's imports can take longer: the query then fails at once with "Python worker failed to connect back" (caused
  by "Timed out while waiting for the Python worker to connect back"), before any offset is read.
- :func:`start_stream` starts the query and waits (at most ``wait_s``) until its source is up — its first offsets read
  (a progress report, or a status past "Getting offsets") — or the query ended. If it ended on that time-out, nothing
  was read: the query is started again from its checkpoint, after a pause that grows with each attempt, at most
  ``attempts`` times in all. Any other outcome is handed back as it is (the caller sees any other failure).
"""

from __future__ import annotations

import time
from typing import Any

CONNECT_BACK = "Python worker failed to connect back"  # how Spark's time-out reaches the query's exception
_STARTING = ("Initializing sources", "Getting offsets")  # status messages before the source has answered


def _source_up_or_ended(query: Any, deadline: float) -> None:
    while query.isActive and time.monotonic() < deadline:
        if query.recentProgress or not str(query.status.get("message", "")).startswith(_STARTING):
            return
        time.sleep(0.1)


def start_stream(writer: Any, *, attempts: int = 4, wait_s: float = 120.0) -> Any:
    """``writer.start()`` (a ``DataStreamWriter``), started again when the source's start-up timed out (see the module
    rules); returns the running (or ended) ``StreamingQuery``."""
    for attempt in range(1, attempts + 1):
        query = writer.start()
        _source_up_or_ended(query, time.monotonic() + wait_s)
        error = None if query.isActive else query.exception()
        if error is None or CONNECT_BACK not in str(error) or attempt == attempts:
            return query
        time.sleep(attempt)  # let the load pass
    raise AssertionError("unreachable")
