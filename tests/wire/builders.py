"""Running the wire builders on either implementation: the C encoders (bruce.wire.speedups, when built) or the
Python builders alone. With BRUCE_NO_EXTENSIONS=1 only the Python one is there."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from bruce.wire import messageset, recordbatch

PURE = bool(os.environ.get("BRUCE_NO_EXTENSIONS"))
IMPLEMENTATIONS = ["python"] if PURE else ["c", "python"]


@contextmanager
def builders(kind: str) -> Iterator[None]:
    """``kind`` "c": as installed (the C encoders in use); "python": the C encoders set aside while inside."""
    assert kind in IMPLEMENTATIONS
    if kind == "c":
        assert messageset._message_set_c is not None and recordbatch._records_c is not None
        yield
        return
    saved = messageset._message_set_c, recordbatch._records_c
    messageset._message_set_c = recordbatch._records_c = None
    try:
        yield
    finally:
        messageset._message_set_c, recordbatch._records_c = saved
