"""``read_committed`` (``kafka.isolation.level``): which fetched records belong to committed transactions.

Rules:
- The reader asks Fetch v4+ with isolation_level=1: the broker returns records below the last stable offset (LSO)
  only, and lists the aborted transactions (producer id, first offset) that overlap its answer.
- A control batch (a commit or abort marker) is never a row. A transactional batch of an aborted transaction is left
  out; every other batch is kept.
- With a non-empty aborted list, Kafka's consumer rule decides (:func:`by_aborted_list`): a producer id is aborted
  from its listed first offset until its abort marker.
- With none (null or empty: tansu lists none even for transactions it has aborted), the markers decide
  (:class:`Markers`): a transactional batch belongs to the first marker of its producer id after it. The caller feeds
  markers from the answer and, when a batch's marker lies beyond it, from Fetches further ahead (read_uncommitted,
  since a marker may sit above the LSO). Only markers are kept, one per transaction, dropped once read past.
- Below a correct LSO every transaction has ended, so a transactional batch with no marker up to the high watermark
  means the broker's LSO is wrong: :class:`TransactionUnknown` names it.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bruce.wire import (
    AbortedTransaction,
    DecompressionBudget,
    MalformedInput,
    Record,
    decode_message_set,
    decode_record_batch,
    decompression_limit,
    entry_spans,
)

_CONTROL_KEY = struct.Struct(">hh")  # version, type (0 abort, 1 commit)
COMMIT, ABORT = 1, 0


@dataclass(frozen=True, slots=True)
class FetchedBatch:
    """One log entry as read_committed sees it: its offsets, producer id, flags and records."""

    base: int
    last: int
    producer_id: int
    transactional: bool
    marker: int | None  # a control batch's type (COMMIT or ABORT); None for data
    records: tuple[Record, ...]


class TransactionUnknown(MalformedInput):
    """A transactional batch below the broker's last stable offset has no commit or abort marker."""

    reason = "TRANSACTION_UNKNOWN"


def decode_batches(data: bytes) -> tuple[list[FetchedBatch], int | None]:
    """The complete entries of a Fetch answer as :class:`FetchedBatch` es, and the offset after the last one (None:
    none)."""
    budget = DecompressionBudget(decompression_limit(data))
    view = memoryview(data)
    out: list[FetchedBatch] = []
    for start, end, magic in entry_spans(data):
        if magic == 2:
            b = decode_record_batch(view[start:end], max_decompressed_size=budget)
            marker = None
            if b.is_control:
                key = b.records[0].key if b.records else None
                if key is None or len(key) < _CONTROL_KEY.size:
                    raise MalformedInput(f"control batch at offset {b.base_offset} has no marker key")
                marker = _CONTROL_KEY.unpack_from(key)[1]
            last = b.base_offset + b.last_offset_delta
            out.append(FetchedBatch(b.base_offset, last, b.producer_id, b.is_transactional, marker, b.records))
        elif magic in (0, 1):  # no transactions in the old formats
            records = tuple(decode_message_set(view[start:end], max_decompressed_size=budget))
            if records:
                out.append(FetchedBatch(records[0].offset, records[-1].offset, -1, False, None, records))
        else:
            raise MalformedInput(f"log entry at byte {start} has unknown magic {magic}", reason="MAGIC")
    return out, (out[-1].last + 1 if out else None)


def by_aborted_list(batches: Sequence[FetchedBatch], aborted: Sequence[AbortedTransaction]) -> list[Record]:
    """The committed records of one answer by the broker's aborted list (Kafka's consumer rule)."""
    pending = sorted(aborted, key=lambda a: a.first_offset)
    aborting: set[int] = set()
    out: list[Record] = []
    i = 0
    for b in batches:
        while i < len(pending) and pending[i].first_offset <= b.last:
            aborting.add(pending[i].producer_id)
            i += 1
        if b.marker is not None:
            if b.marker == ABORT:
                aborting.discard(b.producer_id)
            continue
        if not (b.transactional and b.producer_id in aborting):
            out.extend(b.records)
    return out


class Markers:
    """Commit and abort markers by producer id, gathered from the log up to :attr:`scanned` (exclusive)."""

    def __init__(self) -> None:
        self.scanned = 0  # every marker below this offset is known
        self._by_producer: dict[int, list[tuple[int, int]]] = {}  # producer id → sorted (offset, marker)

    def add(self, batches: Sequence[FetchedBatch], after: int) -> None:
        """Note the markers of ``batches``, which cover the log up to ``after``."""
        for b in batches:
            if b.marker is not None and b.base >= self.scanned:
                bisect.insort(self._by_producer.setdefault(b.producer_id, []), (b.base, b.marker))
        self.scanned = max(self.scanned, after)

    def outcome(self, producer_id: int, offset: int) -> int | None:
        """COMMIT or ABORT for the transaction holding ``offset``, None while its marker is not known."""
        markers = self._by_producer.get(producer_id, [])
        i = bisect.bisect_right(markers, (offset, 2))
        del markers[:i]  # markers before the offset are read past
        return markers[0][1] if markers else None

    def committed(self, batches: Sequence[FetchedBatch], look_ahead: Callable[[], bool]) -> list[Record]:
        """The committed records of ``batches``; ``look_ahead()`` reads markers further on, False at the log end."""
        self.add(batches, batches[-1].last + 1 if batches else 0)
        out: list[Record] = []
        for b in batches:
            if b.marker is not None:
                continue
            if b.transactional:
                outcome = self.outcome(b.producer_id, b.last)
                while outcome is None:
                    if not look_ahead():
                        raise TransactionUnknown(
                            f"the transaction of producer id {b.producer_id} holding offsets {b.base}-{b.last} has no "
                            "commit or abort marker up to the high watermark, though the broker's last stable offset "
                            "is above it"
                        )
                    outcome = self.outcome(b.producer_id, b.last)
                if outcome == ABORT:
                    continue
            out.extend(b.records)
        return out
