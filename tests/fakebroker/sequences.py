"""The broker's side of idempotent produce (KIP-98) as Kafka 2.5+ does it, pure: per producer id and partition, the
producer's epoch, its last sequence, and the last 5 batches stored (to recognise a resend).

Rules (Kafka's UnifiedLog.analyzeAndValidateProducerState, ProducerAppendInfo, ProducerStateEntry), in this order:
- A batch without a producer id (-1) is not checked.
- A resend of one of the last 5 batches (same epoch, same first and last sequence) is a duplicate: answered with
  success and the original base offset, nothing stored (Kafka 1.0+). ``duplicate_error=True`` plays Kafka 0.11.0,
  which answered DUPLICATE_SEQUENCE_NUMBER (46).
- An epoch below the producer's known epoch on the partition is INVALID_PRODUCER_EPOCH (47).
- A higher epoch must start at sequence 0; the same epoch must continue at last + 1 (wrapping to 0 after 2**31 - 1);
  anything else is OUT_OF_ORDER_SEQUENCE_NUMBER (45), a resend older than the last 5 batches included.
- No state for the producer on the partition (a new producer, or its records removed by retention:
  :meth:`SequenceTable.forget`): any sequence is accepted (Kafka 2.5+, KIP-360). ``unknown_producer_error=True``
  plays Kafka 1.0-2.4: a first sequence other than 0 is UNKNOWN_PRODUCER_ID (59).
- The broker never checks that it allocated the producer id.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

DEDUP_WINDOW = 5
SEQUENCE_MODULUS = 2**31
OUT_OF_ORDER_SEQUENCE_NUMBER, DUPLICATE_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, UNKNOWN_PRODUCER_ID = 45, 46, 47, 59


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    last_sequence: int
    batches: deque[tuple[int, int, int]] = field(default_factory=lambda: deque(maxlen=DEDUP_WINDOW))  # first, last,
    # base offset


@dataclass(slots=True)
class SequenceTable:
    duplicate_error: bool = False
    unknown_producer_error: bool = False
    entries: dict[tuple[str, int, int], ProducerEntry] = field(default_factory=dict)  # (topic, partition, pid)

    def check(self, topic: str, partition: int, pid: int, epoch: int, first: int, last: int) -> tuple[int, int]:
        """(error code, base offset of the stored original for a duplicate else -1) for a batch about to be stored."""
        if pid < 0:
            return 0, -1
        entry = self.entries.get((topic, partition, pid))
        if entry is None:
            if self.unknown_producer_error and first != 0:
                return UNKNOWN_PRODUCER_ID, -1
            return 0, -1
        if epoch == entry.epoch:
            for stored_first, stored_last, offset in entry.batches:
                if (stored_first, stored_last) == (first, last):
                    return (DUPLICATE_SEQUENCE_NUMBER, -1) if self.duplicate_error else (0, offset)
        if epoch < entry.epoch:
            return INVALID_PRODUCER_EPOCH, -1
        expected = 0 if epoch > entry.epoch else (entry.last_sequence + 1) % SEQUENCE_MODULUS
        return (0, -1) if first == expected else (OUT_OF_ORDER_SEQUENCE_NUMBER, -1)

    def stored(self, topic: str, partition: int, pid: int, epoch: int, first: int, last: int, offset: int) -> None:
        """A batch that passed :meth:`check` (not a duplicate) was stored at ``offset``."""
        if pid < 0:
            return
        key = (topic, partition, pid)
        entry = self.entries.get(key)
        if entry is None or epoch != entry.epoch:
            entry = self.entries[key] = ProducerEntry(epoch, last)
        entry.last_sequence = last
        entry.batches.append((first, last, offset))

    def forget(self, topic: str, partition: int) -> None:
        """Every producer's state on the partition is gone (its records removed by retention or DeleteRecords)."""
        for key in [k for k in self.entries if k[:2] == (topic, partition)]:
            del self.entries[key]
