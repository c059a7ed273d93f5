"""Records decoded into columns: what a Fetch returns (any magic) as a few flat buffers, no Python object per record.

Rules:
- :func:`decode_columns` reads what :func:`~bruce.wire.records.decode_records` reads — the log entries of a Fetch
  answer, record batches (magic 2, every codec) and message sets (magic 0/1, compressed wrappers expanded), a partial
  entry at the end ignored — with the same checks (CRCs, lengths, one decompression budget for the whole input), and
  one more: a record's offset and timestamp must fit 64 bits. Control batches are kept, flagged by their attributes
  (:attr:`BatchColumns.attributes`): the caller decides what a marker means.
- Layouts are Arrow's, so a reader can wrap the buffers without copying them (``pyarrow.Array.from_buffers``):
  fixed-width columns in native byte order; byte strings as :class:`BinaryColumn` (Arrow's ``binary``: a validity
  bitmap, least significant bit first, None when nothing is null; int32 offsets, n + 1 of them; the data); each
  record's headers as a list (``header_offsets``: record i's headers are ``header_offsets[i]`` to
  ``header_offsets[i + 1]`` of ``header_keys`` and ``header_values``). ``bruce.wire`` itself never imports pyarrow.
- Batches are the log entries: a record batch, or a message set's top-level message (a compressed wrapper holding
  the messages inside it). :class:`BatchColumns` holds one row of facts per batch, and ``rows`` says which records
  each one holds (list layout again).
- The C decoder (``_columns.c``, :data:`bruce.wire.speedups.record_columns`) does the work when it is built; its
  Python twin :func:`decode_columns_python`, built on the record decoders themselves, is the fallback and the proof:
  the tests show the two equal byte for byte, and equal in what they refuse (:class:`MalformedInput`, the same
  reason). Decompression and CRC-32C stay in Python (called once per batch); C walks the records.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .compression import DecompressionBudget
from .crc import crc32c
from .errors import MalformedInput
from .messageset import decode_message_set
from .record import Record, decompression_limit, entry_spans
from .recordbatch import decode_record_batch
from .recordbatch_schema import CONTROL_BIT, TRANSACTIONAL_BIT
from .speedups import ColumnParts
from .speedups import record_columns as _record_columns_c

__all__ = [
    "BatchColumns",
    "BatchFacts",
    "BinaryColumn",
    "Buffer",
    "RecordColumns",
    "decode_columns",
    "decode_columns_python",
]


_SPAN = struct.Struct("=ii")
_WIDE_SPAN = struct.Struct("=qq")


Buffer = bytes | bytearray | memoryview
"""Bytes held by a column: anything with the buffer protocol will do at run time (a ``pyarrow.Buffer`` too)."""


@dataclass(frozen=True, slots=True)
class BinaryColumn:
    """``count`` byte strings in Arrow's ``binary`` layout: ``validity`` (a bit per value, set when not null; None
    when no value is null), ``offsets`` (int32, or int64 when ``wide``: Arrow's ``large_binary``; value i is
    ``data[offsets[first + i]:offsets[first + i + 1]]``) and ``data``. ``first`` is Arrow's array offset (a slice
    starts there, validity bits included); the decoder's columns start at 0."""

    count: int
    null_count: int
    validity: Buffer | None
    offsets: Buffer
    data: Buffer
    first: int = 0
    wide: bool = False

    def value(self, i: int) -> bytes | None:
        """Value ``i`` (None: null)."""
        i += self.first
        if self.validity is not None and not self.validity[i >> 3] >> (i & 7) & 1:
            return None
        start, end = (_WIDE_SPAN if self.wide else _SPAN).unpack_from(self.offsets, (8 if self.wide else 4) * i)
        value = self.data[start:end]
        return value if type(value) is bytes else bytes(value)

    def to_list(self) -> list[bytes | None]:
        """The values as Python objects (one per value: for tests and small inputs)."""
        return [self.value(i) for i in range(self.count)]


@dataclass(frozen=True, slots=True)
class BatchFacts:
    """One batch's row of :class:`BatchColumns` as Python values."""

    position: int
    base_offset: int
    last_offset: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    partition_leader_epoch: int
    base_sequence: int
    crc: int
    attributes: int
    producer_epoch: int
    magic: int
    first_row: int
    end_row: int

    @property
    def is_transactional(self) -> bool:
        return self.magic == 2 and bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        """A transaction marker (commit or abort): its records are not user data."""
        return self.magic == 2 and bool(self.attributes & CONTROL_BIT)


_FACTS = (  # BatchColumns' fact columns, in order, with their array type codes
    ("position", "q"),
    ("base_offset", "q"),
    ("last_offset", "q"),
    ("base_timestamp", "q"),
    ("max_timestamp", "q"),
    ("producer_id", "q"),
    ("partition_leader_epoch", "i"),
    ("base_sequence", "i"),
    ("crc", "I"),
    ("attributes", "h"),
    ("producer_epoch", "h"),
    ("magic", "b"),
)
_FACT_STRUCTS = [(name, struct.Struct("=" + code)) for name, code in _FACTS]


@dataclass(frozen=True, slots=True)
class BatchColumns:
    """One row per batch (log entry), each fact a fixed-width column. ``position``: where the entry starts in the
    input. ``base_offset`` / ``last_offset``: a record batch's header (base + last offset delta); a message's first
    record and its own offset (a wrapper's offset is its last inner one). Timestamps: a batch's base and max; a
    message's own (-1 for magic 0). ``partition_leader_epoch``, ``producer_id``, ``producer_epoch``,
    ``base_sequence``: magic 2's, -1 for message sets. ``crc``: as stored. ``attributes``: the batch's (codec,
    timestamp type, transactional, control bits), or the message's attribute byte. ``rows``: int32, ``count + 1``:
    batch i holds records ``rows[i]`` to ``rows[i + 1]``."""

    count: int
    rows: bytes  # int32
    position: bytes  # int64
    base_offset: bytes  # int64
    last_offset: bytes  # int64
    base_timestamp: bytes  # int64
    max_timestamp: bytes  # int64
    producer_id: bytes  # int64
    partition_leader_epoch: bytes  # int32
    base_sequence: bytes  # int32
    crc: bytes  # uint32
    attributes: bytes  # int16
    producer_epoch: bytes  # int16
    magic: bytes  # int8

    def facts(self, i: int) -> BatchFacts:
        """Batch ``i``'s facts as Python values."""
        first, end = _SPAN.unpack_from(self.rows, 4 * i)
        values = {name: kind.unpack_from(getattr(self, name), kind.size * i)[0] for name, kind in _FACT_STRUCTS}
        return BatchFacts(**values, first_row=first, end_row=end)


@dataclass(frozen=True, slots=True)
class RecordColumns:
    """``count`` records as columns (see the module rules): ``offsets`` and ``timestamps`` (int64; -1: no
    timestamp), ``timestamp_types`` (int8: 0 create time, 1 log-append time), ``keys`` and ``values``, the headers
    (``header_offsets``: int32, ``count + 1``; ``header_keys``, UTF-8 and never null; ``header_values``), and the
    ``batches`` they came in."""

    count: int
    offsets: bytes
    timestamps: bytes
    timestamp_types: bytes
    keys: BinaryColumn
    values: BinaryColumn
    header_offsets: bytes
    header_keys: BinaryColumn
    header_values: BinaryColumn
    batches: BatchColumns

    @property
    def end_offset(self) -> int | None:
        """The offset after the last batch (where a next Fetch starts), None when there is no complete batch."""
        if not self.batches.count:
            return None
        last: int = memoryview(self.batches.last_offset).cast("q")[-1]
        return last + 1

    def records(self, batches: Iterable[int] | None = None) -> list[Record]:
        """The records of ``batches`` (indices; default: every batch but control ones) as :class:`Record` objects
        (one object per record: for tests, and readers that want objects)."""
        offsets, stamps = memoryview(self.offsets).cast("q"), memoryview(self.timestamps).cast("q")
        types, header_ends = memoryview(self.timestamp_types).cast("b"), memoryview(self.header_offsets).cast("i")
        keys, values = self.keys, self.values
        out = []
        for b in range(self.batches.count) if batches is None else batches:
            facts = self.batches.facts(b)
            if batches is None and facts.is_control:
                continue
            for i in range(facts.first_row, facts.end_row):
                headers = tuple(
                    (bytes(self.header_keys.value(h) or b"").decode(), self.header_values.value(h))
                    for h in range(header_ends[i], header_ends[i + 1])
                )
                key, value = keys.value(i), values.value(i)
                out.append(Record(offsets[i], stamps[i], key, value, headers, types[i], facts.magic))
        return out


def decode_columns(data: bytes, *, max_decompressed_size: int | None = None) -> RecordColumns:
    """The records of a Fetch answer's record set (any magic, partial tail ignored, control batches kept) as columns.
    Compressed entries may expand to ``max_decompressed_size`` bytes in all (default:
    :func:`~bruce.wire.record.decompression_limit`). Raises :class:`MalformedInput` for bad bytes."""
    if _record_columns_c is None:
        return decode_columns_python(data, max_decompressed_size=max_decompressed_size)
    budget = DecompressionBudget(decompression_limit(data) if max_decompressed_size is None else max_decompressed_size)

    def decompress(codec: int, payload: memoryview, legacy_lz4: bool) -> bytes:
        return budget.decompress(codec, payload, legacy_lz4=legacy_lz4)

    try:
        parts = _record_columns_c(data, decompress, crc32c)
    except ValueError as e:  # the C decoder's own refusals: (message, reason)
        raise MalformedInput(str(e.args[0]), reason=str(e.args[1])) from None
    return _assemble(parts)


def _assemble(parts: ColumnParts) -> RecordColumns:
    """The dataclasses around the C decoder's tuple (its order: :data:`~bruce.wire.speedups.ColumnParts`)."""
    count, offsets, stamps, types, keys, values, header_offsets, header_keys, header_values, batches = parts
    return RecordColumns(
        count,
        offsets,
        stamps,
        types,
        BinaryColumn(*keys),
        BinaryColumn(*values),
        header_offsets,
        BinaryColumn(*header_keys),
        BinaryColumn(*header_values),
        BatchColumns(*batches),
    )


# ---------------------------------------------------------------- the Python decoder (fallback and proof)


class _Binary:
    """A :class:`BinaryColumn` being built."""

    def __init__(self) -> None:
        self.offsets = array("i", [0])
        self.data = bytearray()
        self.valid: list[bool] = []

    def add(self, value: bytes | None) -> None:
        if value is not None:
            self.data += value
        self.offsets.append(len(self.data))  # OverflowError past 2 GiB
        self.valid.append(value is not None)

    def done(self) -> BinaryColumn:
        nulls = self.valid.count(False)
        bits = None
        if nulls:
            bits = bytearray((len(self.valid) + 7) // 8)
            for i, valid in enumerate(self.valid):
                bits[i >> 3] |= valid << (i & 7)
        validity = None if bits is None else bytes(bits)
        return BinaryColumn(len(self.valid), nulls, validity, bytes(self.offsets), bytes(self.data))


_MESSAGE_HEAD = struct.Struct(">qiIbB")  # offset, size, crc, magic, attributes
_INT64 = struct.Struct(">q")


def decode_columns_python(data: bytes, *, max_decompressed_size: int | None = None) -> RecordColumns:
    """:func:`decode_columns` in Python, from :func:`~bruce.wire.recordbatch.decode_record_batch` and
    :func:`~bruce.wire.messageset.decode_message_set`: a Python object per record (the fallback, and the proof of the
    C decoder)."""
    budget = DecompressionBudget(decompression_limit(data) if max_decompressed_size is None else max_decompressed_size)
    view = memoryview(data)
    offsets, stamps, types = array("q"), array("q"), array("b")
    keys, values, header_keys, header_values = _Binary(), _Binary(), _Binary(), _Binary()
    header_offsets, rows = array("i", [0]), array("i", [0])
    facts = {name: array(code) for name, code in _FACTS}
    try:
        for start, end, magic in entry_spans(data):
            if magic == 2:
                batch = decode_record_batch(view[start:end], max_decompressed_size=budget)
                records: Sequence[Record] = batch.records
                row = (
                    start,
                    batch.base_offset,
                    batch.base_offset + batch.last_offset_delta,
                    batch.base_timestamp,
                    batch.max_timestamp,
                    batch.producer_id,
                    batch.partition_leader_epoch,
                    batch.base_sequence,
                    batch.crc,
                    batch.attributes,
                    batch.producer_epoch,
                    magic,
                )
            elif magic in (0, 1):
                records = decode_message_set(view[start:end], max_decompressed_size=budget)
                offset, _, crc, _, attributes = _MESSAGE_HEAD.unpack_from(data, start)
                timestamp = _INT64.unpack_from(data, start + 18)[0] if magic else -1
                first = records[0].offset if records else offset
                row = (start, first, offset, timestamp, timestamp, -1, -1, -1, crc, attributes, -1, magic)
            else:
                raise MalformedInput(f"log entry at byte {start} has unknown magic {magic}", reason="MAGIC")
            for r in records:
                offsets.append(r.offset)
                stamps.append(r.timestamp)
                types.append(r.timestamp_type)
                keys.add(r.key)
                values.add(r.value)
                for key, value in r.headers:
                    header_keys.add(key.encode())
                    header_values.add(value)
                header_offsets.append(len(header_keys.valid))
            for (name, _), fact in zip(_FACTS, row, strict=True):
                facts[name].append(fact)
            rows.append(len(offsets))
    except OverflowError:
        raise MalformedInput("a record's offset or timestamp, or a column, does not fit its 64 or 32 bits") from None
    batches = BatchColumns(len(rows) - 1, bytes(rows), *(bytes(facts[name]) for name, _ in _FACTS))
    return RecordColumns(
        len(offsets),
        bytes(offsets),
        bytes(stamps),
        bytes(types),
        keys.done(),
        values.done(),
        bytes(header_offsets),
        header_keys.done(),
        header_values.done(),
        batches,
    )
