"""Every record of a Fetch response's record set, whatever the on-wire format of each log entry.

Rules:
- :func:`decode_records` walks the entries (:func:`~bruce.wire.record.entry_spans`) and dispatches each on its magic:
  0/1 to ``messageset``, 2 to ``recordbatch``. Control batches (transaction markers) carry no user records and are
  left out. Anything else is :class:`MalformedInput`.
- One decompression budget for the whole buffer (:func:`~bruce.wire.record.decompression_limit`).
- :class:`Record` and the framing live in :mod:`bruce.wire.record`; they are importable from here too.
"""

from __future__ import annotations

from .compression import DecompressionBudget
from .errors import MalformedInput
from .messageset import decode_message_set
from .record import (
    CODEC_MASK,
    CREATE_TIME,
    ENTRY_HEADER_SIZE,
    EXPANSION_LIMIT,
    LOG_APPEND_TIME,
    MAGIC_POSITION,
    TIMESTAMP_TYPE_BIT,
    Record,
    decompression_limit,
    entry_spans,
    new_record,
)
from .recordbatch import decode_record_batch

__all__ = [
    "CODEC_MASK",
    "CREATE_TIME",
    "ENTRY_HEADER_SIZE",
    "EXPANSION_LIMIT",
    "LOG_APPEND_TIME",
    "MAGIC_POSITION",
    "TIMESTAMP_TYPE_BIT",
    "Record",
    "decode_records",
    "decompression_limit",
    "entry_spans",
    "new_record",
]


def decode_records(data: bytes, *, max_decompressed_size: int | None = None) -> list[Record]:
    """Every record in a Fetch response's record set (any magic, several entries, partial tail ignored). Compressed
    entries may expand to ``max_decompressed_size`` bytes in all (default: :func:`decompression_limit`)."""
    budget = DecompressionBudget(decompression_limit(data) if max_decompressed_size is None else max_decompressed_size)
    view = memoryview(data)
    records: list[Record] = []
    for start, end, magic in entry_spans(data):
        if magic == 2:
            batch = decode_record_batch(view[start:end], max_decompressed_size=budget)
            if not batch.is_control:
                records.extend(batch.records)
        elif magic in (0, 1):
            records.extend(decode_message_set(view[start:end], max_decompressed_size=budget))
        else:
            raise MalformedInput(f"log entry at byte {start} has unknown magic {magic}", reason="MAGIC")
    return records
