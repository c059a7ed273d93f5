"""The daemon's stop: :class:`Shutdown`, owned by :class:`~bruce.proxy.daemon.daemon.Daemon`, and what it closes.

Rules:
- Given the daemon's parts when the daemon is built (inputs, router, batcher, producer, status server, logs, the
  accounting, the force event, the running topic creations, how to close the spool) and the disk backlog when the
  spool opens; it holds no state of its own and runs in the daemon's task, in the event loop's thread.
- The orderly shutdown follows docs/architecture.md#p7-shutdown-order, in order: stop accepting input → drain what the
  kernel still holds (the datagram socket, then the plog listeners) → route what the inputs hold on disk only, as room
  comes back → flush (the router's messages wait for the first metadata and their topic's creation) → wait for ACKs →
  count what is left as SERVER_SHUTDOWN → close the broker connections → stop the status server → close the daemon's own
  parts, the spool last. Every wait ends at ``shutdown_max_delay`` after the request, or at once on a forced stop (a
  second request); draining and accounting still happen.
- After a crash (:meth:`Shutdown.settle_held`): input is refused, the router's messages are SERVER_SHUTDOWN,
  the batcher's go to the producer, whose shutdown discards what it cannot deliver. With the spool, a spooled
  message left so (and what is held on disk only) is *kept*, not discarded: it stays in the spool for the next start
  (:mod:`bruce.proxy.accounting.outcomes`), said in the log and in the exit summary. A further failure while stopping is
  logged, never hides the first one (:func:`logged`).
- A stop that waits to deliver held messages says so in one line: how long it may take, why (Kafka unreachable, which
  brokers), and that a second Ctrl-C (or SIGTERM) stops at once; then its progress every :data:`PROGRESS_S` and how
  it ended (all delivered, or how many were not and what became of them).
- The exit summary logs every message's fate; an accounting that does not balance is logged as an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bruce.producer import DiscardReason, Producer

from ..accounting import DiscardLog, MessageDebugLog, Outcomes
from ..config import NOTICE, Options
from ..intake import DatagramIntake
from ..messages import HeldMessage
from ..routing import Batcher, Router
from ..status import StatusServer
from .plog_inputs import PlogInputs
from .spooling import DiskBacklog

log = logging.getLogger("bruce.proxy.daemon.daemon")

PROGRESS_S = 5.0  # while a stop waits to deliver held messages: how often the log says how it goes


@dataclass(frozen=True, slots=True)
class _Progress:
    """A stop's wait for held messages: when it began, the delivered count then, the task logging its progress."""

    started: float
    delivered_before: int
    task: asyncio.Task[None]


def kafka_trouble(producer: Producer[HeldMessage]) -> str:
    """Why held messages may be waiting, for the stop's log lines: ``": Kafka is unreachable (...)"`` while no
    broker has answered, or which brokers have lost their connection; ``""`` when nothing is known to be wrong."""
    if producer.cluster() is None:
        errors = [f"{b.address}: {b.last_error}" for b in producer.bootstrap_states() if b.last_error]
        return ": Kafka is unreachable, no broker has answered yet" + (f" ({'; '.join(errors[:3])})" if errors else "")
    down = [b for b in producer.broker_states() if b.state not in ("connected", "idle")]
    if not down:
        return ""
    named = "; ".join(f"{b.host}:{b.port}: {b.last_error or b.state}" for b in down[:3])
    return f": {len(down)} of {len(producer.broker_states())} brokers unreachable ({named})"


class Shutdown:
    """How the daemon stops, orderly or after a failure (see the module's rules)."""

    def __init__(
        self,
        options: Options,
        *,
        intake: DatagramIntake,
        plog: PlogInputs,
        router: Router,
        batcher: Batcher,
        producer: Producer[HeldMessage],
        status: StatusServer,
        debug: MessageDebugLog,
        discard_log: DiscardLog | None,
        outcomes: Outcomes,
        creations: set[asyncio.Task[Any]],
        force: asyncio.Event,
        close_spool: Callable[[], None],
    ) -> None:
        self.options = options
        self.intake = intake
        self.plog = plog
        self.router = router
        self.batcher = batcher
        self.producer = producer
        self.status = status
        self.debug = debug
        self.discard_log = discard_log
        self.outcomes = outcomes
        self._creations = creations  # the daemon's running topic creations (the same set)
        self._force = force  # set by a second stop request
        self._close_spool = close_spool
        self._backlog: DiskBacklog | None = None  # with a spool: what the inputs hold on disk only

    def spool_opened(self, backlog: DiskBacklog) -> None:
        """The spool is open: what the inputs hold on disk only is routed at a stop, or kept after a failure."""
        self._backlog = backlog

    async def stop(self, *, loop_time: Callable[[], float]) -> None:
        """The shutdown order (see the module rules)."""
        deadline = loop_time() + self.options.shutdown_max_delay / 1000
        kept_before = self.outcomes.kept_total
        self.intake.stop_accepting()  # 1. stop accepting input
        drained = await self.intake.drain()  # 2. what the kernel still holds
        log.info("read %d datagrams still queued at shutdown", drained)
        await self.plog.stop()  # (the plog listeners: stop, read what is queued, then refuse)
        if self._backlog is not None and self._backlog.cursor.held:  # (held on disk only: routed as room comes)
            await self._until(self._backlog.caught_up(), deadline, loop_time)
        self._settle_on_disk()  # (what is still on disk only stays in the spool for the next start)
        router = self.router  # 3. flush: messages waiting for the first metadata or for their topic's creation
        held = router.held + self.batcher.held + self.producer.held
        progress = self._start_progress(held, deadline, loop_time)
        if router.held:
            await self._until(self._router_settled(), deadline, loop_time)
        router.refresh(time.monotonic())
        for task in self._creations:
            task.cancel()
        router.discard_held(DiscardReason.SERVER_SHUTDOWN)
        self.batcher.flush_all()
        if self.producer.held:  # 4. wait for ACKs until the deadline
            await self._until(self.producer.flush(), deadline, loop_time)
        await self.producer.shutdown(0)  # 5. count what is left, 6. close the connections
        if progress is not None:
            self._log_outcome(held, progress, loop_time)
        kept = self.outcomes.kept_total - kept_before
        if kept:
            log.warning("%d undelivered messages stay in the spool: the next start delivers them (not discarded)", kept)
        await self.status.stop()  # 7. stop the status server
        await self.close_local()
        self.log_accounting(failed=False)

    def _start_progress(self, held: int, deadline: float, loop_time: Callable[[], float]) -> _Progress | None:
        """When messages are held: say how long the stop may take, why (Kafka unreachable), how to cut it short, and
        from then on how it goes (every :data:`PROGRESS_S`)."""
        if not held:
            return None
        log.log(
            NOTICE,
            "waiting up to %.0f s to deliver %s held messages%s; a second Ctrl-C (or SIGTERM) stops at once, "
            "counting what is left as SERVER_SHUTDOWN",
            deadline - loop_time(),
            f"{held:,}",
            kafka_trouble(self.producer),
        )
        before = self.outcomes.snapshot()
        task = asyncio.create_task(self._report_progress(deadline, loop_time), name="bruce-shutdown-progress")
        return _Progress(loop_time(), before.delivered, task)

    async def _report_progress(self, deadline: float, loop_time: Callable[[], float]) -> None:
        while True:
            await asyncio.sleep(PROGRESS_S)
            held = self.router.held + self.batcher.held + self.producer.held
            log.log(
                NOTICE,
                "still waiting to deliver %s held messages, %.0f s left%s",
                f"{held:,}",
                max(0.0, deadline - loop_time()),
                kafka_trouble(self.producer),
            )

    def _log_outcome(self, held: int, progress: _Progress, loop_time: Callable[[], float]) -> None:
        """How the wait ended: every held message delivered, or how many were not and what became of them."""
        progress.task.cancel()
        delivered = self.outcomes.snapshot().delivered - progress.delivered_before
        took = loop_time() - progress.started
        if delivered >= held:
            log.log(NOTICE, "delivered the %s held messages in %.1f s", f"{held:,}", took)
            return
        why = "stopped at once by the second stop request" if self._force.is_set() else f"not delivered in {took:.0f} s"
        fate = "discarded as SERVER_SHUTDOWN" if self._backlog is None else "the spooled ones stay in the spool"
        log.warning("%s of %s held messages delivered; %s, %s", f"{delivered:,}", f"{held:,}", why, fate)

    async def _router_settled(self) -> None:
        """Until the router holds nothing: the first metadata has come and every topic creation has ended (each
        ends by its deadline, ``--topic_create_timeout``; its messages then move on to the batcher or are
        discarded)."""
        await self.producer.ready()
        self.router.refresh(time.monotonic())
        while self._creations:
            await asyncio.wait(set(self._creations))

    def log_accounting(self, *, failed: bool) -> None:
        """The exit summary: every message's fate. After a failure, messages still in flight are those whose
        fate the failure made unknown (a message the crashed code was handling)."""
        a = self.outcomes.snapshot()
        summary = f"{a.received} received, {a.delivered} delivered, {a.discarded} discarded, {a.in_flight} in flight"
        if a.kept:
            summary += f", {a.kept} kept in the spool (not discarded: the next start delivers them)"
        if not a.balanced:
            log.error("stopped, but the accounting does not balance (a bug, please report it): %s", summary)
        elif failed:
            log.error("stopped after a failure: %s", summary)
        else:
            log.log(NOTICE, "stopped: %s", summary)

    async def _until(self, awaitable: Any, deadline: float, loop_time: Callable[[], float]) -> None:
        """Await ``awaitable`` until ``deadline`` (loop time) or a forced stop, whichever comes first."""
        task = asyncio.ensure_future(awaitable)
        force = asyncio.ensure_future(self._force.wait())
        try:
            await asyncio.wait(
                {task, force}, timeout=max(0.0, deadline - loop_time()), return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for t in (task, force):
                t.cancel()
            await asyncio.gather(task, force, return_exceptions=True)

    def settle_held(self) -> None:
        """After a crash: the router's messages are discarded (SERVER_SHUTDOWN), the batcher's go to the producer,
        whose shutdown discards what it cannot deliver (see :meth:`_submit`)."""
        self.intake.stop_accepting()
        self.plog.refuse()
        self._settle_on_disk()
        self.router.discard_held(DiscardReason.SERVER_SHUTDOWN)
        self.batcher.flush_all()

    def _settle_on_disk(self) -> None:
        """Messages held on disk only stay in the spool (kept, not discarded): the next start replays them."""
        if self._backlog is not None:
            self._backlog.settle()

    async def close_local(self) -> None:
        """Close what is the daemon's own: the sockets, the status server, the debug files, the discard log."""
        self.intake.close()
        with logged("the plog listeners"):
            await self.plog.stop()  # after a failure: refused already, so what they still hold is discarded
        with logged("the status server"):
            await self.status.stop()
        self.debug.close()
        if self.discard_log is not None:
            await asyncio.to_thread(self.discard_log.close)
        self._close_spool()


@contextlib.contextmanager
def logged(what: str) -> Any:
    """While stopping after a failure: log a further error from ``what`` rather than hide the first one."""
    try:
        yield
    except asyncio.CancelledError:
        raise
    except BaseException:
        log.exception("%s also failed while stopping", what)
