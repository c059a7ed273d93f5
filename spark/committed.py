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
- All of it works on columns (:func:`decode_batches`): only the transactional and control batches are looked at one
  by one, and the answer is a list of batches to leave out, which the reader turns into one filter.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bruce.wire import AbortedTransaction, MalformedInput, RecordColumns, decode_columns

from .columns import flagged

_CONTROL_KEY = struct.Struct(">hh")  # version, type (0 abort, 1 commit)
COMMIT, ABORT = 1, 0


@dataclass(frozen=True, slots=True)
class FetchedBatch:
    """A transactional or control batch of a Fetch answer (the batches read_committed decides on): its index among
    the answer's batches, offsets, producer id and marker."""

    index: int
    base: int
    last: int
    producer_id: int
    transactional: bool
    marker: int | None  # a control batch's type (COMMIT or ABORT); None for data


class TransactionUnknown(MalformedInput):
    """A transactional batch below the broker's last stable offset has no commit or abort marker."""

    reason = "TRANSACTION_UNKNOWN"


def decode_batches(data: bytes) -> tuple[RecordColumns, list[FetchedBatch]]:
    """The records of a Fetch answer as columns, and its transactional and control batches in order (every other
    batch is plain data, always kept)."""
    columns = decode_columns(data)
    out = []
    for i in flagged(columns):
        facts = columns.batches.facts(i)
        marker = None
        if facts.is_control:
            key = columns.keys.value(facts.first_row) if facts.end_row > facts.first_row else None
            if key is None or len(key) < _CONTROL_KEY.size:
                raise MalformedInput(f"control batch at offset {facts.base_offset} has no marker key")
            marker = _CONTROL_KEY.unpack_from(key)[1]
        out.append(
            FetchedBatch(i, facts.base_offset, facts.last_offset, facts.producer_id, facts.is_transactional, marker)
        )
    return columns, out


def by_aborted_list(batches: Sequence[FetchedBatch], aborted: Sequence[AbortedTransaction]) -> list[int]:
    """The batches left out of one answer (markers, and aborted ones by the broker's list: Kafka's consumer rule)."""
    pending = sorted(aborted, key=lambda a: a.first_offset)
    aborting: set[int] = set()
    out: list[int] = []
    i = 0
    for b in batches:
        while i < len(pending) and pending[i].first_offset <= b.last:
            aborting.add(pending[i].producer_id)
            i += 1
        if b.marker is not None:
            if b.marker == ABORT:
                aborting.discard(b.producer_id)
            out.append(b.index)
        elif b.transactional and b.producer_id in aborting:
            out.append(b.index)
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

    def dropped(self, batches: Sequence[FetchedBatch], after: int, look_ahead: Callable[[], bool]) -> list[int]:
        """The batches of one answer (which covers the log up to ``after``) left out: markers and aborted
        transactions'; ``look_ahead()`` reads markers further on, False at the log end."""
        self.add(batches, after)
        out: list[int] = []
        for b in batches:
            if b.marker is not None:
                out.append(b.index)
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
                    out.append(b.index)
        return out
