"""The records of a record set (a Produce request's or a Fetch answer's bytes for one partition, or a log segment),
batch by batch, decoded into columns for the outputs.

Rules:
- Every magic and codec, through :func:`bruce.wire.decode_columns`: magic 2 batches (producer id, epoch, base
  sequence, the transactional and control flags), magic 0/1 message sets (a compressed wrapper is one batch with its
  codec; a run of uncompressed messages is one batch). Control batches are decoded from their first record's key and
  value: COMMIT or ABORT, and the coordinator epoch.
- No object per record: a stretch of complete entries (:data:`STRETCH` bytes, at least one entry) is decoded at a
  time into columns, then into one list per column (:class:`RecordLists`); the outputs write each record from those
  lists.
  Memory is bounded by a stretch, so a 100,000-record Fetch answer or a 1 GiB segment is never held decoded whole (a
  run of uncompressed messages is kept in one stretch up to 4 stretches' bytes, and shown as several runs beyond).
- Damage costs only its batch: a stretch that does not decode is decoded again entry by entry (a run of uncompressed
  messages together), and each entry that fails is one :class:`LogBatch` with ``error``; the others are read. An
  entry whose size field is impossible ends the set (nothing after it can be framed). A batch cut at the end of the
  set (normal in a Fetch answer) is reported as ``partial``.
- Bytes for the outputs: UTF-8 text as ``str``, other bytes as ``bytes`` (shown base64: :func:`text_or_base64`),
  null as None.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise
from typing import Any, cast

from bruce.wire import BinaryColumn, Codec, MalformedInput, RecordColumns, decode_columns, entry_spans

from .sequences import Sequences

STRETCH = 1 << 18  # bytes of complete entries decoded at a time
_CODECS = {c.value: c.name.lower() for c in Codec}
_CONTROL_TYPES = {0: "ABORT", 1: "COMMIT"}
_ATTRIBUTES = 17  # offset int64, size int32, crc int32, magic int8: then the attributes of magic 0/1

Span = tuple[int, int, int]  # an entry's start, end and magic
Where = tuple[str, str | None, int | None]  # scope, topic, partition: a producer's sequences are checked per these


class RecordLists:
    """The records of a decoded stretch, one Python list per column (each made in one pass, no object per record):
    ``offsets``, ``timestamps``, ``types`` (0 create time, 1 log-append time), ``keys`` and ``values``; record
    ``i``'s headers are ``header_keys`` / ``header_values`` from ``header_ends[i]`` to ``header_ends[i + 1]``."""

    __slots__ = ("header_ends", "header_keys", "header_values", "keys", "offsets", "timestamps", "types", "values")

    def __init__(self, c: RecordColumns) -> None:
        self.offsets: list[int] = memoryview(c.offsets).cast("q").tolist()
        self.timestamps: list[int] = memoryview(c.timestamps).cast("q").tolist()
        self.types: list[int] = memoryview(c.timestamp_types).cast("b").tolist()
        self.header_ends: list[int] = memoryview(c.header_offsets).cast("i").tolist()
        self.keys, self.values = texts(c.keys), texts(c.values)
        self.header_keys = cast(list[str], texts(c.header_keys))  # the decoder checked them: UTF-8, never null
        self.header_values = texts(c.header_values)


def texts(column: BinaryColumn) -> list[str | bytes | None]:
    """A column's values for the outputs: UTF-8 text as str, other bytes as bytes, null as None (ASCII data, the
    common case, is decoded once for the whole column)."""
    if not column.count:
        return []
    ends = memoryview(column.offsets).cast("i").tolist()
    data = bytes(column.data)  # the decoder's columns hold bytes already: no copy
    out: list[str | bytes | None]
    if data.isascii():
        text = data.decode("ascii")
        out = [text[a:b] for a, b in pairwise(ends)]
    else:
        out = [_text(data[a:b]) for a, b in pairwise(ends)]
    if column.validity is not None:
        bits = column.validity
        for i in range(column.count):
            if not bits[i >> 3] >> (i & 7) & 1:
                out[i] = None
    return out


def _text(raw: bytes) -> str | bytes:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


@dataclass(slots=True)
class LogBatch:
    """One batch (magic 2), compressed wrapper or run of messages (magic 0/1) of a record set; its records are
    ``rows`` ``first`` to ``end``."""

    position: int  # byte position in the record set
    size: int
    magic: int
    codec: str = "none"
    base_offset: int = 0
    rows: RecordLists | None = None
    first: int = 0
    end: int = 0
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    transactional: bool = False
    control: dict[str, Any] | None = None  # COMMIT/ABORT marker
    partition_leader_epoch: int = -1
    crc: int | None = None
    sequence_note: str | None = None  # a gap or repeat in its producer's sequence
    error: str | None = None
    partial: bool = False

    @property
    def count(self) -> int:
        return self.end - self.first

    @property
    def first_offset(self) -> int:
        """Its first record's offset (its base offset when it has no records)."""
        return self.rows.offsets[self.first] if self.rows is not None and self.count else self.base_offset

    @property
    def last_offset(self) -> int:
        """Its last record's offset (a control batch: its marker's; else its base offset when it has no records)."""
        if self.rows is not None and self.count:
            return self.rows.offsets[self.end - 1]
        return int((self.control or {}).get("offset", self.base_offset))

    def header(self) -> dict[str, Any]:
        """The batch's fields (without its records), for the outputs."""
        out: dict[str, Any] = {"position": self.position, "size": self.size, "magic": self.magic}
        if self.partial:
            out["partial"] = True
            return out
        if self.error is not None:
            out["error"] = self.error
            return out
        out.update(base_offset=self.base_offset, codec=self.codec, count=self.count)
        if self.magic == 2:
            out.update(
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                base_sequence=self.base_sequence,
                transactional=self.transactional,
                partition_leader_epoch=self.partition_leader_epoch,
                crc=self.crc,
            )
        if self.control is not None:
            out["control"] = self.control
        if self.sequence_note is not None:
            out["sequence"] = self.sequence_note
        return out


def batches(
    data: Any,
    *,
    topic: str | None = None,
    partition: int | None = None,
    sequences: Sequences | None = None,
    scope: str = "log",
) -> Iterator[LogBatch]:
    """The batches of a record set (bytes, or a buffer such as a mapped file), one at a time (see the module's
    rules)."""
    view = memoryview(data)
    where: Where = (scope, topic, partition)
    spans = entry_spans(data)
    stretch: list[Span] = []
    last = 0  # where the complete entries end
    while True:
        try:
            span = next(spans, None)
        except MalformedInput as e:  # an entry whose size field is impossible: the rest cannot be framed
            yield from _stretch(view, stretch, where, sequences)
            yield LogBatch(last, len(data) - last, -1, error=str(e))
            return
        if span is None or (stretch and span[1] - stretch[0][0] > STRETCH and not _continues(view, stretch, span)):
            yield from _stretch(view, stretch, where, sequences)
            stretch = []
        if span is None:
            break
        stretch.append(span)
        last = span[1]
    if last < len(data):
        yield LogBatch(last, len(data) - last, -1, partial=True)


def _plain_message(view: memoryview, span: Span) -> bool:
    """An uncompressed magic 0/1 message (such messages in a row are shown as one batch)."""
    return span[2] in (0, 1) and not view[span[0] + _ATTRIBUTES] & 0x07


def _continues(view: memoryview, stretch: list[Span], span: Span) -> bool:
    """``span`` continues the run of uncompressed messages ending the stretch (kept together up to 4 stretches)."""
    return span[1] - stretch[0][0] <= 4 * STRETCH and _plain_message(view, stretch[-1]) and _plain_message(view, span)


def _stretch(view: memoryview, spans: list[Span], where: Where, sequences: Sequences | None) -> Iterator[LogBatch]:
    """The batches of consecutive entries: decoded together, or each alone when that fails."""
    if not spans:
        return
    units: list[list[Span]] = []  # the entries of each batch shown: one, or a run of uncompressed messages
    for span in spans:
        if units and _plain_message(view, span) and _plain_message(view, units[-1][-1]):
            units[-1].append(span)
        else:
            units.append([span])
    try:
        columns = decode_columns(bytes(view[spans[0][0] : spans[-1][1]]))
    except MalformedInput:
        columns = None
    if columns is not None:
        yield from _from_columns(columns, units, where, sequences)
        return
    for unit in units:
        start, end, magic = unit[0][0], unit[-1][1], unit[0][2]
        if magic not in (0, 1, 2):
            yield LogBatch(start, end - start, magic, error=f"unknown magic {magic}")
            continue
        try:
            columns = decode_columns(bytes(view[start:end]))
        except MalformedInput as e:
            yield LogBatch(start, end - start, magic, error=str(e))
            continue
        yield from _from_columns(columns, [unit], where, sequences)


def _from_columns(
    c: RecordColumns, units: list[list[Span]], where: Where, sequences: Sequences | None
) -> Iterator[LogBatch]:
    """The batches of decoded entries (``units``' entries, one per batch of ``c``)."""
    rows = RecordLists(c)
    ends = memoryview(c.batches.rows).cast("i").tolist()
    base_offsets = memoryview(c.batches.base_offset).cast("q").tolist()
    attributes = memoryview(c.batches.attributes).cast("h").tolist()
    i = 0  # the unit's first batch in c
    for unit in units:
        start, end, magic = unit[0][0], unit[-1][1], unit[0][2]
        if magic == 2:
            yield _batch_v2(c, i, start, end - start, rows, ends, where, sequences)
        else:  # a compressed wrapper, or a run of uncompressed messages
            codec = _CODECS.get(attributes[i] & 0x07, "unknown")
            yield LogBatch(start, end - start, magic, codec, base_offsets[i], rows, ends[i], ends[i + len(unit)])
        i += len(unit)


def _batch_v2(
    c: RecordColumns,
    i: int,
    position: int,
    size: int,
    rows: RecordLists,
    ends: list[int],
    where: Where,
    sequences: Sequences | None,
) -> LogBatch:
    f = c.batches.facts(i)
    out = LogBatch(
        position,
        size,
        2,
        codec=_CODECS.get(f.attributes & 0x07, "unknown"),
        base_offset=f.base_offset,
        rows=rows,
        first=ends[i],
        end=ends[i + 1],
        producer_id=f.producer_id,
        producer_epoch=f.producer_epoch,
        base_sequence=f.base_sequence,
        transactional=f.is_transactional,
        partition_leader_epoch=f.partition_leader_epoch,
        crc=f.crc,
    )
    if f.is_control:
        out.control = _control(c, out.first, out.end, rows)
        out.end = out.first  # a marker, not records
    elif sequences is not None and f.producer_id >= 0 and f.base_sequence >= 0:
        offset = f.base_offset if where[0] == "log" else -1  # a request's batches have no log offset yet
        out.sequence_note = sequences.observe(
            (f.producer_id, *where), f.producer_epoch, f.base_sequence, out.count, offset
        )
    return out


def _control(c: RecordColumns, first: int, end: int, rows: RecordLists) -> dict[str, Any]:
    """A control batch's marker: COMMIT or ABORT and the coordinator epoch (key: version, type; value: version,
    coordinator epoch)."""
    key = c.keys.value(first) if first < end else None
    if key is None or len(key) < 4:
        return {"type": "UNKNOWN"}
    version, kind = struct.unpack_from(">hh", key)
    out: dict[str, Any] = {"type": _CONTROL_TYPES.get(kind, f"UNKNOWN({kind})"), "version": version}
    value = c.values.value(first)
    if value is not None and len(value) >= 6:
        out["coordinator_epoch"] = struct.unpack_from(">hi", value)[1]
    out["offset"] = rows.offsets[first]
    return out


def iso_ms(ms: int) -> str | None:
    """Epoch milliseconds as ISO 8601 (UTC, milliseconds); None for -1 (no timestamp) or out of range."""
    if ms < 0:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


def text_or_base64(data: bytes | str | None) -> str | dict[str, str] | None:
    """UTF-8 text as itself; other bytes marked and base64-encoded; None stays None."""
    if data is None or isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}
