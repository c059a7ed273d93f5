"""Transactions (KIP-98), with librdkafka's API: ``init_transactions``, ``begin_transaction``, ``commit_transaction``,
``abort_transaction`` (docs/producer.md, "Transactions").

Rules:
- A producer with ``transactional_id`` is idempotent, and its producer id and epoch come from its transaction
  coordinator (InitProducerId with the transactional id, which fences every older producer of that id), never from
  the senders; the epoch is never bumped by the client. ``send`` raises outside a transaction.
- States: INIT → (init_transactions) READY → (begin) IN_TRANSACTION → (commit or abort) READY. An error the
  transaction cannot survive makes it ABORTABLE (only ``abort_transaction`` is allowed; ``txn_requires_abort``); an
  error the producer cannot survive makes it FATAL (everything raises it; ``fatal``): fenced by a newer producer
  (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH), refused by authorization, an invalid state or timeout setting, or a broker
  without idempotent produce. This is librdkafka's classification.
- Before the first batch to a partition in a transaction, AddPartitionsToTxn registers it (several partitions per
  request); the partition's batches wait until the coordinator agreed. Batches are written with the transactional bit.
- Commit: nothing more is accepted; every message is delivered (``flush``), or the transaction becomes ABORTABLE when
  one was not; then EndTxn(commit) when a partition was added. A timeout is retriable: call it again.
- Abort: every message not yet written is discarded (TRANSACTION_ABORTED), the written ones are awaited, then
  EndTxn(abort); a producer id the brokers no longer take (a sequence error, a batch given up) is renewed by
  InitProducerId with the current id and epoch (KIP-360).
- Every wait is bounded: by the call's ``timeout`` (seconds), else ``transaction_timeout_ms``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from enum import Enum
from typing import Any

from bruce.wire import (
    ADD_PARTITIONS_TO_TXN,
    END_TXN,
    INIT_PRODUCER_ID,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
    BruceError,
    EndTxnRequest,
    InitProducerIdRequest,
    InitProducerIdResponse,
    UsageError,
    errorcodes,
)

from ..config import ProducerConfig
from ..counters import Counters
from ..dispatch import Dispatcher
from ..idempotence import Idempotence, PidState
from ..queues import PartitionQueue
from ..reasons import DiscardReason
from ..transport import Timeouts
from .coordinator import CoordinatorLink, CoordinatorTimeout

TopicPartition = tuple[str, int]
_FATAL = frozenset(
    {
        "PRODUCER_FENCED",
        "INVALID_PRODUCER_EPOCH",
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        "CLUSTER_AUTHORIZATION_FAILED",
        "INVALID_TXN_STATE",
        "INVALID_TRANSACTION_TIMEOUT",
        "UNSUPPORTED_VERSION",
        "UNSUPPORTED_FOR_MESSAGE_FORMAT",
        "TRANSACTION_COORDINATOR_FENCED",
    }
)
_NEW_ID = frozenset({"OUT_OF_ORDER_SEQUENCE_NUMBER", "UNKNOWN_PRODUCER_ID", "INVALID_PRODUCER_ID_MAPPING"})
_NOT_ATTEMPTED = 55  # AddPartitionsToTxn: another partition of the request failed; this one may be asked again
_POLL = 0.05  # s: how often a wait looks whether the transaction failed meanwhile


class TxnState(Enum):
    INIT = "init"
    READY = "ready"
    IN_TRANSACTION = "in_transaction"
    ABORTABLE = "abortable_error"
    FATAL = "fatal_error"


class TransactionError(BruceError):
    """A transactional call failed. As librdkafka's errors: ``fatal`` (the producer is unusable: close it),
    ``txn_requires_abort`` (call ``abort_transaction``, then start a new transaction), ``retriable`` (the same call
    may be made again, e.g. after a timeout). ``code`` is Kafka's error name, or ours (TIMED_OUT, ...)."""

    def __init__(
        self, message: str, *, code: str, fatal: bool = False, txn_requires_abort: bool = False, retriable: bool = False
    ) -> None:
        super().__init__(message, reason=code)
        self.code = code
        self.fatal = fatal
        self.txn_requires_abort = txn_requires_abort
        self.retriable = retriable


class TransactionManager:
    """One transactional producer's transaction state and coordinator requests; see the module's rules."""

    def __init__(
        self,
        config: ProducerConfig,
        counters: Counters,
        dispatcher: Dispatcher,
        timeouts: Timeouts,
        *,
        running: Callable[[], bool],
        accepting: Callable[[bool], None],
        flush: Callable[[float], Awaitable[int]],
        spawn: Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]],
    ) -> None:
        """``running``: the producer is started; ``accepting(on)``: ``send`` accepts messages or not; ``flush(s)``:
        the producer's :meth:`~bruce.producer.producer.Producer.flush`; ``spawn``: a task in the producer's group."""
        self.config = config
        self.counters = counters
        self.d = dispatcher
        self._running = running
        self._accept = accepting
        self._flush = flush
        self._spawn = spawn
        assert config.transactional_id is not None
        self.tid = config.transactional_id
        self.timeout_ms = config.transaction_timeout_ms
        self.state = TxnState.INIT
        self.error: TransactionError | None = None  # the ABORTABLE or FATAL error
        self.added: set[TopicPartition] = set()  # partitions the coordinator holds in the open transaction
        self.wanted: set[TopicPartition] = set()  # partitions waiting for AddPartitionsToTxn
        self._adding: asyncio.Task[Any] | None = None
        self._discarded_at_begin = 0
        self.new_id_due = False  # the brokers refuse our producer id or epoch: renewed by abort_transaction
        d = dispatcher

        def brokers() -> list[tuple[str, int]]:
            view = d.view
            known = [(b.host, b.port) for b in view.brokers.values()] if view is not None else []
            return known or list(config.brokers)

        self.link = CoordinatorLink(config, timeouts, brokers, counters)

    # ---------------------------------------------------------------- the API

    async def init(self, timeout: float | None) -> None:
        if self.state is TxnState.FATAL:
            raise self._raised()
        if self.state is not TxnState.INIT:
            raise UsageError("init_transactions: already done (call it once per producer)")
        if not self._running():
            raise UsageError("init_transactions: start the producer first (async with Producer(...))")
        await self._init_producer_id(self._deadline(timeout), renew=False)
        self.state = TxnState.READY

    def begin(self) -> None:
        if self.state is TxnState.INIT:
            raise UsageError("begin_transaction: call init_transactions() first")
        if self.state is TxnState.IN_TRANSACTION:
            raise UsageError("begin_transaction: a transaction is already open")
        if self.state is not TxnState.READY:
            raise self._raised()
        self.state = TxnState.IN_TRANSACTION
        self._discarded_at_begin = self.d.ledger.discarded
        self._accept(True)

    async def commit(self, timeout: float | None) -> None:
        self._check_open("commit_transaction")
        deadline = self._deadline(timeout)
        self._accept(False)
        await self._drain(deadline)
        failed = self.d.ledger.discarded - self._discarded_at_begin
        if failed:
            self._abortable("TRANSACTION_ABORTABLE", f"{failed} messages of the transaction were not delivered")
            raise self._raised()
        await self._wait_adding(deadline)
        if self.added:
            await self._end(True, deadline)
        self.counters.inc("TransactionCommitted")
        self._finished()

    async def abort(self, timeout: float | None) -> None:
        if self.state is not TxnState.ABORTABLE:
            self._check_open("abort_transaction")
        deadline = self._deadline(timeout)
        self._accept(False)
        d = self.d
        while True:  # discard what is not written; await what is (a failed one comes back: discarded next round)
            d.discard_everything(DiscardReason.TRANSACTION_ABORTED, "the transaction was aborted")
            if not d.ledger.held_messages:
                break
            if asyncio.get_running_loop().time() >= deadline:
                raise TransactionError("abort_transaction: timed out", code="TIMED_OUT", retriable=True)
            await self._flush(_POLL)
        self.wanted.clear()
        await self._wait_adding(deadline)
        idem = self._idem()
        if self.added:
            await self._end(False, deadline)
        if self.new_id_due or idem.state is not PidState.ASSIGNED or idem.bump_needed:
            await self._init_producer_id(deadline, renew=True)
        self.error = None
        self.counters.inc("TransactionAborted")
        self._finished()

    def refuse(self) -> None:
        """``send`` outside a transaction: raise why."""
        if self.state in (TxnState.ABORTABLE, TxnState.FATAL):
            raise self._raised()
        if self.state is TxnState.IN_TRANSACTION:
            raise UsageError("the transaction is being committed or aborted: no message may join it now")
        raise UsageError("a transactional producer sends within a transaction: call begin_transaction() first")

    def close(self) -> None:
        self.link.close()

    # ---------------------------------------------------------------- the data path's hooks (the Sequencer's)

    def admit(self, pq: PartitionQueue) -> bool:
        """``pq`` may send now: its partition is in the transaction; else it is asked for, and ``pq`` waits."""
        tp = (pq.topic, pq.partition)
        if tp in self.added:
            return True
        if self.state is TxnState.IN_TRANSACTION and tp not in self.wanted:
            self.wanted.add(tp)
            if self._adding is None or self._adding.done():
                self._adding = self._spawn(self._add_partitions())  # in the producer's group: a bug ends it
        return False

    def produce_failed(self, name: str, given_up: bool) -> None:
        """A produce answer with error ``name`` (``given_up``: its batch is discarded)."""
        if name in _FATAL:
            self._fatal(name, f"produce answered {name}: a newer producer with this transactional id took over")
        elif name in _NEW_ID or given_up:
            self.new_id_due = self.new_id_due or name in _NEW_ID
            self._abortable(name, f"produce answered {name}")

    def idempotence_ended(self, name: str, why: str) -> None:
        self._fatal(name, f"idempotence ended: {why}")

    # ---------------------------------------------------------------- internals

    def _deadline(self, timeout: float | None) -> float:
        seconds = self.timeout_ms / 1000 if timeout is None else timeout
        return asyncio.get_running_loop().time() + seconds

    def _check_open(self, what: str) -> None:
        if self.state is TxnState.IN_TRANSACTION:
            return
        if self.state in (TxnState.ABORTABLE, TxnState.FATAL):
            raise self._raised()
        raise UsageError(f"{what}: no transaction is open (call begin_transaction() first)")

    def _raised(self) -> TransactionError:
        assert self.error is not None
        return self.error

    def _finished(self) -> None:
        self.state = TxnState.READY
        self.added.clear()
        self.wanted.clear()

    def _abortable(self, code: str, why: str) -> None:
        if self.state is TxnState.IN_TRANSACTION:
            self.state = TxnState.ABORTABLE
            self.counters.inc("TransactionAbortable", labels=(("reason", code),))
            self.error = TransactionError(f"transaction must be aborted: {why}", code=code, txn_requires_abort=True)

    def _fatal(self, code: str, why: str) -> None:
        if self.state is TxnState.FATAL:
            return
        self.state = TxnState.FATAL
        self.counters.inc("TransactionFatal", labels=(("reason", code),))
        why = f"transactional producer {self.tid!r} failed for good: {why}"
        self.error = TransactionError(why, code=code, fatal=True)
        self._accept(False)
        d = self.d  # not now: a produce answer may be being carried out
        asyncio.get_running_loop().call_soon(d.discard_everything, DiscardReason.TRANSACTION_ABORTED, why)

    def _idem(self) -> Idempotence:
        seq = self.d.seq
        if seq is None:
            self._fatal("UNSUPPORTED", "the broker cannot take idempotent batches")
            raise self._raised()
        if seq.idem is None:
            seq.idem = seq.new_state(epoch_bump=False)
        seq.idem.epoch_bump = False  # the coordinator owns the epoch
        return seq.idem

    async def _drain(self, deadline: float) -> None:
        """Until every message has a fate; raises when the transaction fails meanwhile, or at the deadline."""
        loop = asyncio.get_running_loop()
        while await self._flush(min(_POLL, max(deadline - loop.time(), 0))):
            if self.state is not TxnState.IN_TRANSACTION:
                raise self._raised()
            if loop.time() >= deadline:
                raise TransactionError("commit_transaction: timed out, messages still undelivered", code="TIMED_OUT",
                                       retriable=True)  # fmt: skip

    async def _wait_adding(self, deadline: float) -> None:
        task = self._adding
        if task is not None and not task.done():
            try:
                async with asyncio.timeout_at(deadline):
                    await asyncio.shield(task)
            except TimeoutError:
                raise TransactionError("AddPartitionsToTxn: timed out", code="TIMED_OUT", retriable=True) from None

    async def _call(self, build: Any, error_of: Any, deadline: float) -> Any:
        try:
            return await self.link.call(build, error_of, deadline)
        except CoordinatorTimeout as e:
            raise TransactionError(str(e), code="TIMED_OUT", retriable=True) from None

    async def _init_producer_id(self, deadline: float, *, renew: bool) -> None:
        idem = self._idem()
        pid, epoch = (idem.producer_id, idem.producer_epoch) if renew else (-1, -1)

        def build(conn: Any) -> tuple[Any, int]:
            version = conn.versions.version(INIT_PRODUCER_ID)
            request = InitProducerIdRequest(self.tid, self.timeout_ms)
            if version >= 3:
                request = InitProducerIdRequest(self.tid, self.timeout_ms, producer_id=pid, producer_epoch=epoch)
            return request, version

        answer = await self._call(build, lambda a: a.error_code, deadline)
        if answer.error_code:
            name = errorcodes.lookup(answer.error_code).name
            self._fatal(name, f"InitProducerId answered {name}")
            raise self._raised()
        seq = self.d.seq
        assert seq is not None
        idem.state = PidState.REQUESTING
        seq.on_init(InitProducerIdResponse(0, answer.producer_id, answer.producer_epoch), failed=False)
        self.new_id_due = False

    async def _end(self, commit: bool, deadline: float) -> None:
        idem = self._idem()
        request = EndTxnRequest(self.tid, idem.producer_id, idem.producer_epoch, commit)
        answer = await self._call(_builder(request, END_TXN), lambda a: a.error_code, deadline)
        if answer.error_code:
            name = errorcodes.lookup(answer.error_code).name
            what = "commit" if commit else "abort"
            if name in _FATAL:
                self._fatal(name, f"EndTxn({what}) answered {name}")
            else:
                self.new_id_due = self.new_id_due or name in _NEW_ID
                self._abortable(name, f"EndTxn({what}) answered {name}")
            raise self._raised()

    async def _add_partitions(self) -> None:
        """AddPartitionsToTxn for the wanted partitions, until none is left or the transaction fails."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_ms / 1000
        while self.wanted and self.state is TxnState.IN_TRANSACTION:
            asked = sorted(self.wanted)
            idem = self._idem()
            topics: dict[str, list[int]] = {}
            for topic, partition in asked:
                topics.setdefault(topic, []).append(partition)
            request = AddPartitionsToTxnRequest(
                self.tid,
                idem.producer_id,
                idem.producer_epoch,
                tuple(AddPartitionsToTxnTopic(t, tuple(ps)) for t, ps in topics.items()),
            )
            try:
                answer = await self._call(_builder(request, ADD_PARTITIONS_TO_TXN), _retried_code, deadline)
            except TransactionError as e:
                self._abortable(e.code, f"AddPartitionsToTxn: {e}")
                return
            errors = answer.errors()
            for tp in asked:
                code = errors.get(tp, _NOT_ATTEMPTED)
                if code == 0:
                    self.added.add(tp)
                    self.wanted.discard(tp)
                elif code != _NOT_ATTEMPTED and not errorcodes.lookup(code).retriable:
                    name = errorcodes.lookup(code).name
                    why = f"AddPartitionsToTxn answered {name} for {tp[0]}/{tp[1]}"
                    self._fatal(name, why) if name in _FATAL else self._abortable(name, why)
                    return
            seq = self.d.seq
            if seq is not None:
                seq.wake_all()
            if self.wanted.intersection(asked):  # refused for now (retriable): ask again after the backoff
                await asyncio.sleep(max(self.config.retry_backoff_ms, 10) / 1000)


def _builder(request: Any, api_key: int) -> Any:
    """``request`` at the version the coordinator's connection speaks for ``api_key``."""
    return lambda conn: (request, conn.versions.version(api_key))


def _retried_code(answer: Any) -> int:
    """AddPartitionsToTxn's coordinator-level error: a partition's code the coordinator link retries, else 0."""
    for code in answer.errors().values():
        if code in (14, 15, 16, 51):
            return int(code)
    return 0
