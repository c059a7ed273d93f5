"""DUPLICATE_SEQUENCE_NUMBER answers checked against the partition's log before the batch counts as delivered.

Rules:
- Kafka answers DUPLICATE_SEQUENCE_NUMBER when a batch's sequence was stored already; a broker has answered it for a
  batch it never stored (tansu on object storage, after a restart or a cut mid-request), so trusting it loses the
  batch. The batch's messages stay held while its identity (producer id, epoch, base sequence) is looked for in the
  log from the offset known when it was first sent (:func:`bruce.producer.idempotence.recovery.find_batch`; not there,
  it is read again for up to ``LOG_WAIT_S``: a write may still be on its way into the log).
- Found: delivered at the offset found (``AckDuplicateFound``). Not found, or the log cannot be read within
  :func:`~bruce.producer.idempotence.recovery.check_timeout` (time for the producer to learn a moved leader's address):
  the messages go back to the front of their queue and are sent again as a new batch with new sequences
  (``AckDuplicateNotStored``, one warning line); a read that failed may make them a duplicate, never a loss, so they
  are reported as possible duplicates then.
- The batch journal (:mod:`bruce.producer.idempotence.journal`) gets the batch's FINISHED record when the check decides
  (the offset found, or -1: given up, its messages in a new batch), not at the answer: a crash while checking leaves the
  batch unfinished, so the next start settles it against the log instead of taking it as given up.
- Bounded: one check per answered batch, so no more than the batches in flight; :meth:`DuplicateCheck.close`
  discards what is still being checked when the producer closes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from ..config import ProducerConfig
from ..counters import Counters
from ..message import Message
from ..queues import Ledger, PartitionQueue
from ..reasons import DiscardReason
from .recovery import ClusterSource, find_batch
from .sequence_state import Batch
from .sequencer import Sequencer

log = logging.getLogger("bruce.producer")


class CheckOwner(Protocol):
    """What the check asks of the dispatcher whose answers it checks (:class:`~bruce.producer.dispatch.Dispatcher`
    is one): its counters and ledger, its sequencer (the journal), and a way back to the front of a queue."""

    counters: Counters
    ledger: Ledger
    seq: Sequencer | None

    def give_back(self, pq: PartitionQueue, messages: list[Message], since: float) -> None: ...


class DuplicateCheck:
    """The sequencer's ``on_duplicate``: each call reads the log in a task made by ``spawn``."""

    def __init__(
        self,
        dispatcher: CheckOwner,
        views: ClusterSource,
        config: ProducerConfig,
        spawn: Callable[[Coroutine[Any, Any, None]], object],
    ) -> None:
        self.d = dispatcher
        self.views = views
        self.config = config
        self.spawn = spawn
        self.pending: dict[int, tuple[PartitionQueue, Batch, list[Message], int]] = {}  # id(batch) → what it holds

    def __call__(self, pq: PartitionQueue, batch: Batch, messages: list[Message], size: int, since: float) -> None:
        self.pending[id(batch)] = (pq, batch, messages, size)
        self.spawn(self._check(pq, batch, since))

    async def _check(self, pq: PartitionQueue, batch: Batch, since: float) -> None:
        identity = (batch.producer_id, batch.producer_epoch, batch.base_sequence)
        tp = (pq.topic, pq.partition)
        unread = False
        try:
            offset = await find_batch(self.views, self.config, tp, batch.known, identity)
            why = "it is not in the log"
        except Exception as e:  # any failure: sent again (a duplicate at worst, never a loss)
            offset, why, unread = None, f"the log could not be read ({e})", True
        held = self.pending.pop(id(batch), None)
        if held is None:
            return  # the producer closed meanwhile
        _, _, messages, size = held
        self._journal(batch, -1 if offset is None else offset)
        labels = (("topic", pq.topic), ("partition", str(pq.partition)))
        if offset is not None:
            self.d.counters.inc("AckDuplicateFound", len(messages), labels)
            self.d.ledger.deliver(pq, messages, offset, size)
            return
        self.d.counters.inc("AckDuplicateNotStored", len(messages), labels)
        log.warning(
            "%s/%d answered DUPLICATE_SEQUENCE_NUMBER for producer id %d epoch %d sequence %d but %s: its %d messages "
            "are sent again as a new batch",
            *tp,
            *identity,
            why,
            len(messages),
        )
        if unread:
            self.d.ledger.possible_duplicates(pq.topic, messages)
        self.d.give_back(pq, messages, since)

    def close(self, reason: DiscardReason) -> None:
        """Discard with ``reason`` the messages still being checked (the producer is closing)."""
        pending, self.pending = self.pending, {}
        for pq, batch, messages, _ in pending.values():
            self._journal(batch, -1)
            self.d.ledger.discard(pq.topic, messages, reason, "its duplicate answer not checked by the close deadline")

    def _journal(self, batch: Batch, offset: int) -> None:
        """The batch's FINISHED record, written only now that the check decided (a crash while checking leaves the
        batch unfinished: the next start settles it against the log)."""
        seq = self.d.seq
        if seq is not None and seq.journal is not None:
            seq.journal.checked(batch, offset)
