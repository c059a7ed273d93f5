"""The message timeout's tick (``message_timeout_ms``, librdkafka's ``message.timeout.ms``; 0 = none, no tick).

Rules:
- One task per producer wakes every tenth of the timeout (10 ms to 1 s) and hands the dispatcher the cutoff:
  :meth:`~bruce.producer.dispatch.dispatcher.Dispatcher.expire` discards as MESSAGE_TIMEOUT what was queued at or before
  it.
- Messages get the tick's clock reading as their queue time (``Dispatcher.stamp``: no clock read per message); the
  stamps given out are kept, oldest first, only as long as the timeout (about timeout / tick of them: bounded).
- No message fails early, however late a tick wakes: a batch stamped ``s`` expires once the tick after ``s`` is
  ``message_timeout_ms`` old.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque

from .dispatcher import Dispatcher


async def expire_loop(d: Dispatcher, loop: asyncio.AbstractEventLoop, timeout_ms: int) -> None:
    """The message timeout's tick. Messages get the tick's clock reading as their queue time
    (:attr:`Dispatcher.stamp`); a batch stamped ``s`` is discarded once the tick after ``s`` is
    ``message_timeout_ms`` old, so no message fails early, however late a tick wakes."""
    timeout = timeout_ms / 1000
    tick = min(1.0, max(0.01, timeout / 10))
    detail = f"not delivered within message_timeout_ms ({timeout_ms} ms)"
    stamps = deque([d.stamp])  # stamps given out, oldest first (at most about timeout / tick of them)
    cutoff = -math.inf
    while True:
        await asyncio.sleep(tick)
        d.stamp = now = loop.time()
        stamps.append(now)
        while len(stamps) > 1 and stamps[1] <= now - timeout:
            cutoff = stamps.popleft()
        if cutoff > -math.inf:
            d.expire(cutoff, detail)
