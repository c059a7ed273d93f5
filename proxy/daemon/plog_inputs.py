"""The plog listeners as one input of the daemon: the daemon's :class:`~bruce.proxy.plog.sink.PlogSink`, the
listeners' lifecycle and their counters.

Rules:
- :meth:`PlogInputs.submit` makes a daemon :class:`~bruce.proxy.messages.message.Message` exactly as the datagram intake
  does: its charge (key + value + overhead) is reserved in the same :class:`~bruce.proxy.messages.budget.MessageBudget`,
  it counts ``MsgCreate`` and goes to ``sink`` (the router). A message that does not fit is discarded as
  NO_MEM through ``outcomes.on_discard``. The timestamp is the receive time (plog's producer stamps records on send);
  a message without ``pk:`` has a null key, as in plog. With the durable spool (``spool``, once open) each message is
  appended before it is routed, as the datagram intake's bursts are (SPOOL_FULL when the full spool discards), and
  held on disk only when the budget has no room (or others are held so), as the intake does.
- :meth:`PlogInputs.reject` settles what a listener dropped itself: MALFORMED and LONG_MSG as unparsed input
  (``outcomes.on_unparsed``: count and recent prefixes on ``/discards``), BAD_TOPIC with its topic.
- Accounting: ``received`` counts every submitted and rejected message; the daemon registers it with
  ``outcomes.add_input``, so ``received = delivered + discarded + in flight`` covers plog input too.
- Backpressure for TCP: :meth:`budget_available` says whether a message of a size fits now (or never could: then it
  is submitted and discarded, not waited for). A paused connection's callback runs once its size fits: the budget's
  own resume level (7/8 full) wakes the waiters, and while the budget is below that level yet the message still does
  not fit, a timer checks again every :data:`RECHECK_S`. Callbacks always run from the loop, never inside a call.
- Lifecycle: :meth:`start` binds every listener, in order; a listener that cannot bind (port in use, bad address)
  stops the ones already started and raises :class:`PlogStartError` naming it. :meth:`serve` runs in the daemon's
  task group while the listeners run: it raises the error a listener reported through :meth:`fail` (so a failed
  listener stops the daemon) and returns once they are stopped. :meth:`stop` is the orderly stop (what the kernel and
  the connections still hold is read and submitted), then refuses; :meth:`refuse` (after a crash) makes every later
  submission a SERVER_SHUTDOWN discard, so nothing reaches a router that no longer routes.
- Status: :meth:`counter_set` gives each listener's counters labelled ``listener=<name>`` (``PlogUdpSimpleMessages``,
  ..., plus ``PlogReceived`` and ``PlogRejected``); :meth:`gauges` the reassembly buffers and open connections.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

from bruce.producer import Counters, DiscardReason, Labels
from bruce.wire import BruceError

from ..accounting import Outcomes
from ..config import ListenerConfig
from ..intake import MessageSink
from ..messages import MESSAGE_OVERHEAD, HeldMessage, MessageBudget
from ..plog import Listener, TcpListener, UdpListener, make_listener
from ..spool import SPOOL_FULL, SpoolMessage, SpoolSlot
from ..status import Gauge

log = logging.getLogger("bruce.proxy.plog")

NOTICE = 25  # the log level of Bruce's LOG_NOTICE, the daemon's default
RECHECK_S = 0.01  # how often paused connections are re-checked while the budget is below its resume level

_NO_MEM = DiscardReason.NO_MEM
_SPOOL_FULL = DiscardReason.SPOOL_FULL
_SHUTDOWN = DiscardReason.SERVER_SHUTDOWN


class PlogStartError(BruceError):
    """A plog listener could not start (the message names it and what to change)."""

    reason = "PLOG_START"


class PlogInputs:
    """Every plog listener of the daemon, and the sink they share. See the module rules."""

    def __init__(
        self,
        configs: Sequence[ListenerConfig],
        *,
        sink: MessageSink,
        budget: MessageBudget,
        outcomes: Outcomes,
        counters: Counters,
        spool: SpoolSlot | None = None,
        on_kill: Callable[[], object] | None = None,
    ) -> None:
        self.sink = sink
        self.budget = budget
        self.outcomes = outcomes
        self.spool_slot = spool or SpoolSlot()
        self.counters = counters
        self.listeners: tuple[Listener, ...] = tuple(make_listener(c, self, on_kill=on_kill) for c in configs)
        self.received = 0  # messages submitted or rejected, all listeners
        self._received: dict[str, int] = {c.name: 0 for c in configs}
        self._rejected: dict[str, int] = {c.name: 0 for c in configs}
        self._refusing = False
        self._failure: asyncio.Future[None] | None = None  # set by start(): a listener's error, or done at stop()
        self._waiters: dict[Callable[[], object], int] = {}  # paused connections → the charge they wait for
        self._armed = False
        self._timer: asyncio.TimerHandle | None = None
        self._labels: dict[str, Labels] = {c.name: (("listener", c.name),) for c in configs}

    # -- lifecycle -----------------------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Bind and start every listener (see the module rules)."""
        self._failure = asyncio.get_running_loop().create_future()
        started: list[Listener] = []
        for listener in self.listeners:
            cfg = listener.config
            try:
                await listener.start()
            except OSError as error:
                for done in started:
                    await done.stop()
                raise PlogStartError(
                    f"plog listener {cfg.name}: cannot listen on {cfg.protocol} {cfg.address}:{cfg.port}: "
                    f"{error.strerror or error}; another process may use the port (pick another in "
                    "[[plog.listener]] or --plog_udp / --plog_tcp)"
                ) from error
            started.append(listener)
        if started:
            described = (
                f"{x.config.protocol} {x.address[0]}:{x.address[1]} → {x.config.topic or '(kt: tags)'}" for x in started
            )
            log.log(NOTICE, "plog listeners: %s", ", ".join(described))

    async def serve(self) -> None:
        """While the listeners run: raise the error a listener reported (see :meth:`fail`); return once stopped."""
        if self._failure is not None:
            await self._failure

    async def stop(self) -> None:
        """Orderly stop: every listener submits what it still holds and closes; then later submissions are refused.
        Stopping again (after a failure part-way) stops whatever still runs."""
        for listener in self.listeners:
            await listener.stop()
        if self._failure is not None and not self._failure.done():
            self._failure.set_result(None)
        self.refuse()

    def refuse(self) -> None:
        """From now on every submission is discarded as SERVER_SHUTDOWN (the router no longer takes messages)."""
        self._refusing = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.budget.cancel_notify(self._wake)
        self._armed = False
        waiters, self._waiters = list(self._waiters), {}
        if waiters:
            loop = asyncio.get_running_loop()
            for callback in waiters:  # paused connections read on and have their lines discarded
                loop.call_soon(callback)

    # -- the sink (PlogSink) -------------------------------------------------------------------------------------------

    def submit(self, topic: str, key: bytes | None, value: bytes, *, partition_key: int | None, listener: str) -> bool:
        self.received += 1
        self._received[listener] += 1
        now_ms = time.time_ns() // 1_000_000
        if self._refusing:
            self.outcomes.on_discard(_SHUTDOWN, topic, key or b"", value, now_ms)
            return False
        msg = HeldMessage(topic, key, value, now_ms, partition_key, time.monotonic())  # keyless plog records: null key
        spool = self.spool_slot.spool
        if spool is not None:
            raw = topic.encode("utf-8", "surrogateescape")
            msg.spool_seq = seq = spool.append([SpoolMessage(raw, partition_key, key, value, now_ms)])
            if seq == SPOOL_FULL:
                self.outcomes.on_discard(_SPOOL_FULL, topic, key or b"", value, now_ms)
                return False
            if seq < 0:
                msg.spool_seq = -1
            elif spool.cursor.start is not None or not self.budget.try_reserve(msg.charge):
                spool.cursor.hold(seq)  # held on disk only, routed in order later (bruce.proxy.daemon.spooling)
                return True
        if msg.spool_seq < 0 and not self.budget.try_reserve(msg.charge):  # (a spooled one is reserved already)
            self.outcomes.on_discard(_NO_MEM, topic, key or b"", value, now_ms)
            return False
        self.counters.inc("MsgCreate")
        self.sink.route(msg)
        return True

    def reject(self, reason: DiscardReason, data: bytes, *, topic: str | None, listener: str) -> None:
        self.received += 1
        self._received[listener] += 1
        self._rejected[listener] += 1
        if topic is None:
            self.outcomes.on_unparsed(reason, data)
        else:
            self.outcomes.on_discard(reason, topic, b"", data, time.time_ns() // 1_000_000)

    def budget_available(self, size: int) -> bool:
        budget = self.budget
        charge = size + MESSAGE_OVERHEAD
        return self._refusing or charge > budget.capacity or budget.has_room(charge)

    def notify_when_free(self, callback: Callable[[], object], size: int) -> None:
        self._waiters[callback] = size + MESSAGE_OVERHEAD
        self._arm()

    def cancel_notify(self, callback: Callable[[], object]) -> None:
        self._waiters.pop(callback, None)

    def fail(self, error: Exception, *, listener: str) -> None:
        error.add_note(f"in plog listener {listener}")
        failure = self._failure
        if failure is None or failure.done():
            log.error("plog listener %s failed after the daemon stopped serving it", listener, exc_info=error)
            return
        failure.set_exception(error)

    def _arm(self) -> None:
        """Wake the waiters when the budget next frees: at its resume level, or by timer when already below it."""
        if self._armed or not self._waiters or self._refusing:
            return
        self._armed = True
        budget = self.budget
        if budget.used <= budget.resume_level:
            self._timer = asyncio.get_running_loop().call_later(RECHECK_S, self._wake)
        else:
            budget.notify_when_free(self._wake)

    def _wake(self) -> None:
        self._armed = False
        self._timer = None
        budget = self.budget
        free = budget.capacity - budget.used
        ready = [cb for cb, charge in self._waiters.items() if charge <= free or charge > budget.capacity]
        if ready:
            loop = asyncio.get_running_loop()
            for callback in ready:
                del self._waiters[callback]
                loop.call_soon(callback)
        self._arm()

    # -- status --------------------------------------------------------------------------------------------------------

    def counter_set(self) -> PlogCounters:
        return PlogCounters(self)

    def gauges(self) -> Iterable[Gauge]:
        out = []
        for listener in self.listeners:
            labels = self._labels[listener.name]
            if isinstance(listener, UdpListener):
                out += [
                    Gauge(
                        "PlogPendingMessages",
                        "Incomplete multipart messages in a plog listener's reassembly buffer.",
                        len(listener.defrag),
                        labels,
                    ),
                    Gauge(
                        "PlogPendingBytes",
                        "Bytes charged in a plog listener's reassembly buffer.",
                        listener.defrag.used,
                        labels,
                    ),
                ]
            elif isinstance(listener, TcpListener):
                out.append(
                    Gauge(
                        "PlogOpenConnections",
                        "Open TCP connections of a plog listener.",
                        len(listener.connections),
                        labels,
                    )
                )
        return out


class PlogCounters:
    """Every listener's counters as a counter set (location ``bruce.proxy.plog``), labelled ``listener=<name>``."""

    __slots__ = ("_inputs",)

    def __init__(self, inputs: PlogInputs) -> None:
        self._inputs = inputs

    def items(self) -> Iterator[tuple[str, Labels, int]]:
        inputs = self._inputs
        for listener in inputs.listeners:
            name = listener.name
            labels = inputs._labels[name]
            yield "PlogReceived", labels, inputs._received[name]
            yield "PlogRejected", labels, inputs._rejected[name]
            for counter, value in listener.stats.counters():
                yield counter, labels, value
