"""The optional C encoders and decoder of :mod:`bruce.wire` (``_speedups.c``, ``_columns.c``, ``_encode.c``): which
are in use.

Rules:
- The extension is built at install wherever a C compiler is found (optional in ``pyproject.toml``). Without it, or
  with the environment variable ``BRUCE_NO_EXTENSIONS`` set to any non-empty value, every function here is None and
  the Python builders do all the work (the Python decoder of :mod:`bruce.wire.columns`, the Python twins of
  :mod:`bruce.wire.column_batch`): ``bruce.wire`` stands on its own.
- A C encoder takes only the plain form (columns as lists or tuples, exact ``bytes`` or None, ints within int64);
  anything else raises ValueError and its caller runs the Python builder, which builds the same bytes or raises the
  one :class:`~bruce.wire.errors.UsageError` users see. The tests prove the two byte-equal.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextlib import suppress

__all__ = ["column_records", "column_sizes", "message_set", "murmur2_column", "record_batch_records", "record_columns"]

RecordsEncoder = Callable[
    [Sequence[bytes | None], Sequence[bytes | bytearray | None], Sequence[int], bool], tuple[bytes, int, int]
]
MessageSetEncoder = Callable[
    [Sequence[bytes | None], Sequence[bytes | None], Sequence[int] | None, int, bool, int], bytes
]

BinaryParts = tuple[int, int, bytes | None, bytes, bytes]
"""A binary column: count, null count, validity, offsets, data (:class:`~bruce.wire.columns.BinaryColumn`)."""
BatchParts = tuple[int, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes]
"""The batches: count, then 13 columns (:class:`~bruce.wire.columns.BatchColumns`' fields in order)."""
ColumnParts = tuple[int, bytes, bytes, bytes, BinaryParts, BinaryParts, bytes, BinaryParts, BinaryParts, BatchParts]
""":class:`~bruce.wire.columns.RecordColumns`' fields in order."""
ColumnsDecoder = Callable[[bytes, Callable[[int, memoryview, bool], bytes], Callable[[memoryview], int]], ColumnParts]

record_batch_records: RecordsEncoder | None = None
"""``(keys, values, timestamps, empty_as_null)`` -> the records of a RecordBatch v2 without headers (what
:func:`~bruce.wire.recordbatch.build_record_batch` joins), the first and the largest timestamp."""
message_set: MessageSetEncoder | None = None
"""``(keys, values, timestamps or None, magic, empty_as_null, base_offset)`` -> an uncompressed magic 0/1 set."""

record_columns: ColumnsDecoder | None = None
"""``(data, decompress, crc32c)`` -> the records of a Fetch answer's record set as columns (what
:func:`~bruce.wire.columns.decode_columns` wraps); ValueError(message, reason) for bad bytes."""

ColumnInput = tuple[object, object, object, int, bool, int]
"""A binary column for the encoders: validity or None, offsets, data, first row, int64 offsets, count."""
HeaderInput = tuple[object, object, int, ColumnInput, ColumnInput]
"""Headers for the encoders: validity or None, int32 list offsets, first row, key column, value column."""
ColumnRecordsEncoder = Callable[
    [ColumnInput, ColumnInput | None, HeaderInput | None, object, int, int, int, int], tuple[bytearray, int, int]
]
ColumnSizer = Callable[
    [ColumnInput, ColumnInput | None, HeaderInput | None, object, int], tuple[bytes, int, int | None, int | None]
]

column_records: ColumnRecordsEncoder | None = None
"""``(values, keys, headers, timestamps, count, start, stop, room)`` -> rows ``[start, stop)`` as the records of a
RecordBatch v2 after ``room`` bytes, the first and the largest timestamp (:mod:`bruce.wire.column_batch`)."""
column_sizes: ColumnSizer | None = None
"""``(values, keys, headers, timestamps, count)`` -> Σ key + value per row (int64), the largest row, the smallest and
largest timestamp."""
murmur2_column: Callable[[ColumnInput], bytes] | None = None
"""``(column)`` -> Kafka's murmur2 of each row (uint32)."""

if not os.environ.get("BRUCE_NO_EXTENSIONS"):
    with suppress(ImportError):  # built without a compiler: the Python builders and decoder do it all
        from ._speedups import (
            column_records,
            column_sizes,
            message_set,
            murmur2_column,
            record_batch_records,
            record_columns,
        )
