"""The producer's side of the batch journal (:class:`PartJournal`, the dispatcher's ``journal``): what a batch about
to be sent, and a batch whose fate is known, become in the journal (:mod:`bruce.producer.idempotence.journal`).

Rules: ``sent`` before each idempotent batch whose identity is new goes out; ``finished`` once its fate is known (not
while a DUPLICATE_SEQUENCE_NUMBER answer is being checked: :data:`CHECKING`); ``off`` when batches may go out
unjournaled. The daemon journals its messages' spool sequences as runs, the library the encoded batch.
"""

from __future__ import annotations

from typing import Any, Protocol

from .journal_records import TopicPartition, runs_of


class JournalWriter(Protocol):
    """What :class:`PartJournal` asks of :class:`bruce.producer.idempotence.journal.Journal`."""

    def new_id(self) -> int: ...

    def sent(
        self,
        batch_id: int,
        tp: TopicPartition,
        identity: tuple[int, int, int],
        count: int,
        runs: list[tuple[int, int]],
        payload: bytes = b"",
    ) -> None: ...

    def finished(self, batch_id: int, tp: TopicPartition, offset: int) -> None: ...

    def off(self) -> None: ...


CHECKING = -3  # a batch's offset while its DUPLICATE_SEQUENCE_NUMBER answer is checked: no FINISHED record yet


class PartJournal:
    """The producer's side of a :class:`JournalWriter` (its dispatcher's ``journal``): ``sent`` is called with each
    idempotent batch whose identity is new, just before it is sent; ``finished`` with each batch whose fate is known.
    ``payload``: journal the encoded batch (the library, which has no spool); else the messages' ``spool_seq`` runs
    (the daemon)."""

    __slots__ = ("journal", "payload")

    def __init__(self, journal: JournalWriter, *, payload: bool) -> None:
        self.journal = journal
        self.payload = payload

    def sent(self, part: Any, batch: Any) -> None:
        journal = self.journal
        if part.journal_id < 0:
            part.journal_id = journal.new_id()
        if self.payload:
            runs: list[tuple[int, int]] = []
            payload = part.data
        else:
            try:
                seqs = [m.spool_seq for m in part.messages]  # (faster than map(attrgetter) on slotted messages)
            except AttributeError:  # messages without a spool sequence (not the daemon's)
                seqs = [-1]
            low = min(seqs)
            one_run = low >= 0 and max(seqs) - low + 1 == len(seqs)  # distinct sequences spanning their count
            runs = [(low, len(seqs))] if one_run else runs_of(sorted(seqs))
            payload = b""
        identity = (batch.producer_id, batch.producer_epoch, batch.base_sequence)
        journal.sent(part.journal_id, batch.tp, identity, batch.count, runs, payload)

    def finished(self, batch: Any) -> None:
        part = batch.records
        if part is not None and part.journal_id >= 0 and batch.offset != CHECKING:
            self.journal.finished(part.journal_id, batch.tp, batch.offset)

    def checked(self, batch: Any, offset: int) -> None:
        """A DUPLICATE_SEQUENCE_NUMBER answer's log check ended: found at ``offset``, or -1 (sent again as new)."""
        batch.offset = offset
        self.finished(batch)

    def off(self) -> None:
        self.journal.off()
