"""Record batches built from Arrow-layout columns: a writer's rows go to the encoder as a few buffers, no Python object
per row.

Rules:
- :class:`ProduceColumns` holds ``count`` rows: values and keys as :class:`~bruce.wire.columns.BinaryColumn` (Arrow's
  ``binary`` or ``large_binary`` layout: validity bits, int32 or int64 offsets, data; ``first`` is Arrow's array
  offset, so a slice of an Arrow array is taken as it is), timestamps as int64 in native order (one per row, or one
  for every row given to the builder), headers as a :class:`HeaderColumn` (Arrow's ``list<struct<key: string, value:
  binary>>`` flattened: int32 list offsets into a key column and a value column). Row ``r`` of every column is the
  same record. ``bruce.wire`` never imports pyarrow: a writer hands over the buffers (``pyarrow.Buffer`` objects do).
- :func:`column_sizes` checks every column once (offsets in order and within their data, every buffer long enough,
  no value or key past 2 GiB, header names present and valid UTF-8) and returns what a producer needs before it
  queues the rows: the running sum of key + value bytes per row (int64), the largest row, the smallest and largest
  timestamp. Anything wrong is :class:`UsageError`.
- :func:`build_column_batch` writes rows ``[start, stop)`` as one RecordBatch v2: the batch
  :func:`~bruce.wire.recordbatch.build_record_batch` builds for the same records, byte for byte (a null value or key
  is null; a null header list is no headers; offset deltas from 0; the first row's timestamp is the base).
- The C functions (``_encode.c``, :mod:`.speedups`) do the work when built; each refuses what it does not take
  (ValueError) and the Python twin beside it then builds or raises the :class:`UsageError` users see. The twins read
  the rows into tuples and call the record builders: the fallback, and the proof (the tests show C == Python == the
  construct schema).
- :func:`murmur2_column` hashes each row of a binary column with Kafka's murmur2 (a null row as an empty key): the
  default partitioner over a key column in one call.
"""

from __future__ import annotations

import operator
import struct
from array import array
from collections.abc import Iterator
from dataclasses import dataclass

from .columns import BinaryColumn, Buffer
from .compression import Codec
from .errors import UsageError
from .plog import murmur2
from .record import CREATE_TIME
from .recordbatch import build_record_batch, finish_in_place
from .recordbatch_schema import HEADER_SIZE, attributes_for
from .speedups import ColumnInput, HeaderInput
from .speedups import column_records as _records_c
from .speedups import column_sizes as _sizes_c
from .speedups import murmur2_column as _murmur2_c

__all__ = [
    "ColumnSizes",
    "HeaderColumn",
    "ProduceColumns",
    "build_column_batch",
    "build_column_batch_python",
    "column_sizes",
    "column_sizes_python",
    "murmur2_column",
    "murmur2_column_python",
]

Row = tuple[bytes | None, bytes | None, int, tuple[tuple[str, bytes | None], ...] | None]
"""A row as a record: key, value, timestamp, headers (None: none)."""

_LENGTH_MAX = (1 << 31) - 1  # a key, value or header past this is refused (a record's lengths are int32 to Kafka)
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class HeaderColumn:
    """Each row's headers, Arrow's ``list<struct<key: string, value: binary>>``: row ``r``'s headers are rows
    ``offsets[first + r]`` to ``offsets[first + r + 1]`` (int32) of ``keys`` (UTF-8 names, never null) and
    ``values``; a row whose ``validity`` bit is clear has none."""

    count: int
    validity: Buffer | None
    offsets: Buffer
    keys: BinaryColumn
    values: BinaryColumn
    first: int = 0


@dataclass(frozen=True, slots=True)
class ProduceColumns:
    """``count`` records to write, as columns (see the module rules). ``timestamps``: int64 epoch milliseconds, one
    per row (None: the builder is given one for every row)."""

    count: int
    values: BinaryColumn
    keys: BinaryColumn | None = None
    timestamps: Buffer | None = None
    headers: HeaderColumn | None = None

    def __post_init__(self) -> None:
        counts = [c.count for c in (self.values, self.keys, self.headers) if c is not None]
        if self.count < 0 or any(n != self.count for n in counts):
            raise UsageError(f"columns of {counts} rows for {self.count} records")
        if self.headers is not None and self.headers.keys.count != self.headers.values.count:
            raise UsageError("header keys and values differ in length")

    def records(self, start: int, stop: int, timestamp: int | None = None) -> list[Row]:
        """Rows ``[start, stop)`` as records ``(key, value, timestamp, headers)`` (``timestamp``: every row's, when
        the columns have none): a Python object per row, for whoever needs them one by one. Raises
        :class:`UsageError` for malformed columns."""
        return list(_rows(self, start, stop, timestamp))


@dataclass(frozen=True, slots=True)
class ColumnSizes:
    """What :func:`column_sizes` found: ``ends`` (int64 per row: Σ key + value bytes of rows ``0..r``), the largest
    row's key + value bytes, the smallest and largest timestamp (None without a timestamp column)."""

    ends: memoryview
    biggest: int
    min_timestamp: int | None
    max_timestamp: int | None

    def size(self, start: int, stop: int) -> int:
        """Σ key + value bytes of rows ``[start, stop)``."""
        if stop <= start:
            return 0
        ends = self.ends
        end: int = ends[stop - 1]
        return end - ends[start - 1] if start else end


def _binary_parts(column: BinaryColumn) -> ColumnInput:
    return (column.validity, column.offsets, column.data, column.first, column.wide, column.count)


def _key_parts(column: BinaryColumn | None) -> ColumnInput | None:
    return None if column is None else _binary_parts(column)


def _header_parts(headers: HeaderColumn | None) -> HeaderInput | None:
    if headers is None:
        return None
    keys, values = _binary_parts(headers.keys), _binary_parts(headers.values)
    return (headers.validity, headers.offsets, headers.first, keys, values)


def column_sizes(columns: ProduceColumns) -> ColumnSizes:
    """Check ``columns`` and measure them (see the module rules); :class:`UsageError` for anything wrong."""
    if _sizes_c is not None:
        try:
            ends, biggest, low, high = _sizes_c(
                _binary_parts(columns.values),
                _key_parts(columns.keys),
                _header_parts(columns.headers),
                columns.timestamps,
                columns.count,
            )
        except ValueError:
            pass  # refused: the Python twin says why
        else:
            return ColumnSizes(memoryview(ends).cast("q"), biggest, low, high)
    return column_sizes_python(columns)


def column_sizes_python(columns: ProduceColumns) -> ColumnSizes:
    """:func:`column_sizes` in Python (the fallback, and the proof of the C function)."""
    count = columns.count
    values = _checked(columns.values, "value")
    keys = _checked(columns.keys, "key") if columns.keys is not None else None
    lengths = [len(v) if v is not None else 0 for v in values]
    if keys is not None:
        lengths = [n + (len(k) if k is not None else 0) for n, k in zip(lengths, keys, strict=True)]
    ends = array("q")
    total = 0
    for n in lengths:
        total += n
        ends.append(total)
    low = high = None
    if columns.timestamps is not None:
        stamps = _timestamps(columns.timestamps, count)
        low, high = (min(stamps), max(stamps)) if count else (None, None)
    if columns.headers is not None:
        _headers(columns.headers, 0, count)
    return ColumnSizes(memoryview(ends).cast("B").cast("q"), max(lengths, default=0), low, high)


def build_column_batch(
    columns: ProduceColumns,
    start: int,
    stop: int,
    *,
    timestamp: int | None = None,
    codec: int = Codec.NONE,
    compression_level: int | None = None,
) -> bytes:
    """One RecordBatch v2 of rows ``[start, stop)`` of ``columns`` (``timestamp``: every row's, when the columns have
    no timestamps), equal to :func:`~bruce.wire.recordbatch.build_record_batch` of the same records. Raises
    :class:`UsageError` for bad columns or rows."""
    if not 0 <= start < stop <= columns.count:
        raise UsageError(f"rows [{start}, {stop}) of {columns.count}: a record batch needs at least one record")
    if (columns.timestamps is None) == (timestamp is None):
        raise UsageError("a timestamp for every row, or a timestamp column: one of the two")
    attributes = attributes_for(codec, CREATE_TIME, False)
    if _records_c is not None:
        try:
            batch, base_ts, max_ts = _records_c(
                _binary_parts(columns.values),
                _key_parts(columns.keys),
                _header_parts(columns.headers),
                timestamp if timestamp is not None else columns.timestamps,
                columns.count,
                start,
                stop,
                HEADER_SIZE,
            )
        except ValueError:
            pass  # refused: the Python twin builds it or says why not
        else:
            return finish_in_place(batch, stop - start, attributes, base_ts, max_ts, compression_level)
    return build_column_batch_python(columns, start, stop, timestamp=timestamp, codec=codec, level=compression_level)


def build_column_batch_python(
    columns: ProduceColumns, start: int, stop: int, *, timestamp: int | None, codec: int, level: int | None
) -> bytes:
    """:func:`build_column_batch` in Python: the rows as records, through the record builder."""
    records = list(_rows(columns, start, stop, timestamp))
    return build_record_batch(records, codec=codec, compression_level=level)


def murmur2_column(column: BinaryColumn) -> bytes:
    """Kafka's murmur2 of each row of ``column`` (a null row as an empty key): ``column.count`` uint32, native
    order. :class:`UsageError` for a malformed column."""
    if _murmur2_c is not None:
        try:
            return _murmur2_c(_binary_parts(column))
        except ValueError:
            pass  # refused: the Python twin says why
    return murmur2_column_python(column)


def murmur2_column_python(column: BinaryColumn) -> bytes:
    """:func:`murmur2_column` in Python."""
    return array("I", [murmur2(v or b"") for v in _checked(column, "key")]).tobytes()


# ---------------------------------------------------------------- the Python twins' reading and checking


_INT32, _INT64 = struct.Struct("=i"), struct.Struct("=q")


def _view(buffer: object, what: str) -> memoryview:
    """``buffer``'s bytes (UsageError when it has none, or is not contiguous)."""
    try:
        return memoryview(buffer).cast("B")  # type: ignore[arg-type]  # anything: checked here
    except (TypeError, ValueError, BufferError):
        raise UsageError(f"{what} is not a contiguous buffer") from None


def _index(value: object, what: str) -> int:
    try:
        return operator.index(value)  # type: ignore[arg-type]  # anything: checked here
    except TypeError:
        raise UsageError(f"{what} must be an int, not {value!r}") from None


def _checked(column: BinaryColumn, what: str, start: int = 0, stop: int | None = None) -> list[bytes | None]:
    """Rows ``[start, stop)`` of ``column`` (default: all) as Python values: its buffers long enough for all its rows,
    the offsets of those rows in order and within the data, no value past 2 GiB (else UsageError)."""
    first, count = _index(column.first, f"a {what} column's first row"), _index(column.count, f"a {what} count")
    stop = count if stop is None else stop
    if first < 0 or count < 0:
        raise UsageError(f"a {what} column starts at row {first} with {count} rows")
    width = _INT64 if column.wide else _INT32
    offsets = _view(column.offsets, f"a {what} column's offsets")
    if len(offsets) < (first + count + 1) * width.size:
        raise UsageError(f"a {what} column's offsets are too short for {count} rows")
    validity = None if column.validity is None else _view(column.validity, f"a {what} column's validity")
    if validity is not None and len(validity) * 8 < first + count:
        raise UsageError(f"a {what} column's validity bits are too short for {count} rows")
    data = _view(column.data, f"a {what} column's data")
    out: list[bytes | None] = []
    low = width.unpack_from(offsets, (first + start) * width.size)[0] if stop > start else 0
    for r in range(first + start, first + stop):
        high = width.unpack_from(offsets, (r + 1) * width.size)[0]
        if not 0 <= low <= high <= len(data):
            raise UsageError(f"a {what} column's offsets at row {r - first} are out of order or past its data")
        if high - low > _LENGTH_MAX:
            raise UsageError(f"a {what} at row {r - first} is longer than 2 GiB")
        valid = validity is None or validity[r >> 3] >> (r & 7) & 1
        out.append(bytes(data[low:high]) if valid else None)
        low = high
    return out


def _timestamps(stamps: Buffer, count: int) -> memoryview:
    view = _view(stamps, "the timestamp column")
    if len(view) < 8 * count:
        raise UsageError(f"a timestamp column of {len(view) // 8} rows for {count} records")
    return view[: 8 * count].cast("q")


def _headers(headers: HeaderColumn, start: int, stop: int) -> list[tuple[tuple[str, bytes | None], ...]]:
    """The headers of rows ``[start, stop)``: the list offsets of those rows in order and within the header columns,
    the header rows they span well formed, every name of a row with headers present and UTF-8 (else UsageError)."""
    first, count = _index(headers.first, "a header column's first row"), headers.count
    if first < 0 or count < 0:
        raise UsageError(f"a header column starts at row {first} with {count} rows")
    offsets = _view(headers.offsets, "a header column's offsets")
    if len(offsets) < 4 * (first + count + 1):
        raise UsageError(f"a header column's offsets are too short for {count} rows")
    validity = None if headers.validity is None else _view(headers.validity, "a header column's validity")
    if validity is not None and len(validity) * 8 < first + count:
        raise UsageError(f"a header column's validity bits are too short for {count} rows")
    ends = offsets[4 * (first + start) : 4 * (first + stop + 1)].cast("i")
    for r in range(stop - start):
        if not 0 <= ends[r] <= ends[r + 1] <= headers.keys.count:
            raise UsageError(f"a header column's offsets at row {start + r} are out of order or past its headers")
    low, high = (ends[0], ends[-1]) if stop > start else (0, 0)
    keys = _checked(headers.keys, "header name", low, high)
    values = _checked(headers.values, "header value", low, high)
    out: list[tuple[tuple[str, bytes | None], ...]] = []
    for r in range(stop - start):
        row = first + start + r
        if validity is not None and not validity[row >> 3] >> (row & 7) & 1:
            out.append(())
            continue
        items = []
        for h in range(ends[r] - low, ends[r + 1] - low):
            name = keys[h]
            if name is None:
                raise UsageError(f"a header at row {start + r} has no name")
            try:
                items.append((name.decode(), values[h]))
            except UnicodeDecodeError:
                raise UsageError(f"a header name at row {start + r} is not UTF-8") from None
        out.append(tuple(items))
    return out


def _rows(columns: ProduceColumns, start: int, stop: int, timestamp: int | None) -> Iterator[Row]:
    """Rows ``[start, stop)`` as records ``(key, value, timestamp, headers)``, checked (UsageError)."""
    values = _checked(columns.values, "value", start, stop)
    keys = _checked(columns.keys, "key", start, stop) if columns.keys is not None else [None] * (stop - start)
    if columns.timestamps is not None:
        stamps: list[int] = list(_timestamps(columns.timestamps, columns.count)[start:stop])
    else:
        if type(timestamp) is not int or not _INT64_MIN <= timestamp <= _INT64_MAX:
            raise UsageError(f"timestamp must be an int64 of epoch milliseconds, not {timestamp!r}")
        stamps = [timestamp] * (stop - start)
    headers = _headers(columns.headers, start, stop) if columns.headers is not None else [()] * (stop - start)
    for key, value, ts, items in zip(keys, values, stamps, headers, strict=True):
        yield key, value, ts, items or None
