"""The systemd notification protocol (sd_notify), spoken by the daemon itself when ``$NOTIFY_SOCKET`` is set.

Rules:
- A notification is one datagram of ``KEY=value`` lines on an ``AF_UNIX`` datagram socket: ``$NOTIFY_SOCKET`` is a
  path, or an abstract name when it starts with ``@`` (the ``@`` stands for a leading NUL byte). Without
  ``$NOTIFY_SOCKET`` nothing is sent (:func:`from_environment` returns None) and nothing else changes.
- ``READY=1`` once, when the input socket is open and the first metadata has arrived (the unit's ``Type=notify``
  start is then complete); ``STATUS=`` with the accounting totals and connected brokers every
  :data:`STATUS_EVERY` seconds when it changed; ``STOPPING=1`` when the orderly shutdown begins; ``WATCHDOG=1``
  every half ``$WATCHDOG_USEC`` when it is set (and ``$WATCHDOG_PID``, if set, is this process), from the start, so
  a daemon whose event loop stalls is restarted by systemd. A ``$WATCHDOG_USEC`` under :data:`WATCHDOG_FLOOR_USEC`
  (1 s) is raised to it, said in one warning: the pings never come faster than one every half second.
- Never blocks and never fails the daemon: the socket is non-blocking, a send that fails is logged once (then every
  :data:`LOG_EVERY_S` at most) and dropped.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping

log = logging.getLogger(__name__)

STATUS_EVERY = 5.0  # seconds between two STATUS= updates (only sent when the text changed)
LOG_EVERY_S = 300.0
WATCHDOG_FLOOR_USEC = 1_000_000
"""The shortest watchdog timeout honoured: a ping every 0.5 s at most (a shorter ``WatchdogSec=`` would spin)."""


class Notifier:
    """Sends notifications to one ``$NOTIFY_SOCKET`` address (see the module rules)."""

    def __init__(self, address: str, watchdog_usec: int | None = None) -> None:
        self.address = "\0" + address[1:] if address.startswith("@") else address
        if watchdog_usec and watchdog_usec < WATCHDOG_FLOOR_USEC:
            log.warning(
                "WATCHDOG_USEC=%d (WatchdogSec=) is under %g s: pinging systemd's watchdog every %g s instead; "
                "set WatchdogSec= to at least %g s in the unit",
                watchdog_usec,
                WATCHDOG_FLOOR_USEC / 1e6,
                WATCHDOG_FLOOR_USEC / 2e6,
                WATCHDOG_FLOOR_USEC / 1e6,
            )
            watchdog_usec = WATCHDOG_FLOOR_USEC
        self.watchdog_usec = watchdog_usec
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK)
        self._last_error = -LOG_EVERY_S

    @property
    def watchdog_interval(self) -> float | None:
        """Seconds between two ``WATCHDOG=1`` (half of ``$WATCHDOG_USEC``), or None without a watchdog."""
        return self.watchdog_usec / 2e6 if self.watchdog_usec else None

    def send(self, **fields: str | int) -> bool:
        """One notification: ``send(READY=1, STATUS="...")``. False (logged, rate-limited) when it was not sent."""
        text = "\n".join(f"{key}={value}" for key, value in fields.items())
        try:
            self._sock.sendto(text.encode(), self.address)
            return True
        except OSError as e:
            now = time.monotonic()
            if now - self._last_error >= LOG_EVERY_S:
                self._last_error = now
                log.warning("cannot notify systemd at %s: %s", os.environ.get("NOTIFY_SOCKET", self.address), e)
            return False

    def close(self) -> None:
        self._sock.close()


def from_environment(env: Mapping[str, str] | None = None) -> Notifier | None:
    """The notifier ``$NOTIFY_SOCKET`` asks for (with ``$WATCHDOG_USEC``), or None when it is not set."""
    env = os.environ if env is None else env
    address = env.get("NOTIFY_SOCKET", "")
    if not address or address[0] not in "/@":
        if address:
            log.warning("NOTIFY_SOCKET=%r is neither a path nor an abstract name: not notifying systemd", address)
        return None
    usec: int | None = None
    pid = env.get("WATCHDOG_PID")
    if env.get("WATCHDOG_USEC", "").isdigit() and (pid is None or pid == str(os.getpid())):
        usec = int(env["WATCHDOG_USEC"]) or None
    return Notifier(address, usec)


async def supervise(notifier: Notifier, metadata: asyncio.Event, status: Callable[[], str]) -> None:
    """Ping the watchdog from the start, say ``READY=1`` once ``metadata`` is set, keep ``STATUS=`` current; runs
    until cancelled (the daemon's task group)."""
    watchdog = notifier.watchdog_interval
    tick = min(watchdog, STATUS_EVERY) if watchdog else STATUS_EVERY
    ready = False
    shown = ""
    next_status = 0.0
    while True:
        if watchdog:
            notifier.send(WATCHDOG=1)
        now = time.monotonic()
        if not ready and metadata.is_set():
            ready = True
            shown = status()
            notifier.send(READY=1, STATUS=shown)
            next_status = now + STATUS_EVERY
        elif now >= next_status:
            next_status = now + STATUS_EVERY
            text = status()
            if text != shown:
                shown = text
                notifier.send(STATUS=text)
        if ready:
            await asyncio.sleep(tick)
        else:
            try:
                async with asyncio.timeout(tick):
                    await metadata.wait()
            except TimeoutError:
                pass
