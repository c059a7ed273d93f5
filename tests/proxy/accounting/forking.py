"""Run a scenario in a forked child: for failures that need process-wide settings (a file-size limit) or a user
without root's powers (permission bits mean nothing to root)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable

NOBODY = 65534


def run_forked(fn: Callable[[], dict], *, unprivileged: bool = False) -> dict:
    """Run ``fn`` in a forked child (as ``nobody`` when ``unprivileged`` and we are root); return its JSON result."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child never returns into pytest
        status = 1
        try:
            os.close(r)
            if unprivileged and os.getuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            os.write(w, json.dumps(fn()).encode())
            status = 0
        except BaseException as e:
            os.write(w, json.dumps({"error": repr(e)}).encode())
        finally:
            os._exit(status)
    os.close(w)
    with os.fdopen(r, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    result = json.loads(data)
    assert status == 0, result
    return result
