"""The idempotent producer (KIP-98) and exactly once across restarts: sequence numbers and the producer id, the
sequencer in the data path, the batch journal, and settling a journal's batches against the partitions' logs.

Modules: ``sequence_state`` (:class:`Idempotence`, the pure state: producer id, epoch, per-partition sequences),
``sequencer`` (:class:`Sequencer`: that state in the data path), ``duplicates`` (DUPLICATE_SEQUENCE_NUMBER answers
checked against the log), ``journal`` with ``journal_records`` (its files' format), ``journal_io`` (their file
operations), ``journal_part`` (the producer's side of it) and ``journal_reader`` (reading it back), ``recovery``
(settling unfinished batches), ``state_path`` (the library's ``state_path``), ``state_cluster`` (the cluster a state
path belongs to).
Rule: imports the top-level vocabulary and the wings below it — config, transport, metadata, queues (see
docs/architecture.md#the-floors-of-bruceproducer); the dispatcher it serves is a protocol (``Owner``, ``CheckOwner``).
"""

from __future__ import annotations

from .duplicates import DuplicateCheck
from .journal import Journal, JournalEntry, PartJournal, read_journal
from .recovery import Settler, highest_sequences
from .sequence_state import Batch, Idempotence, PidState
from .sequencer import OnDuplicate, Sequencer, Transaction, log_idempotence_off
from .state_path import ProducerState, StateInUse, StateMismatch

__all__ = [
    "Batch",
    "DuplicateCheck",
    "Idempotence",
    "Journal",
    "JournalEntry",
    "OnDuplicate",
    "PartJournal",
    "PidState",
    "ProducerState",
    "Sequencer",
    "Settler",
    "StateInUse",
    "StateMismatch",
    "Transaction",
    "highest_sequences",
    "log_idempotence_off",
    "read_journal",
]
