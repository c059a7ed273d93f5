"""RecordBatch v2 (magic 2) decoding, hand-written for speed: :func:`decode_record_batch` and
:func:`decode_record_batches` (re-exported by :mod:`.recordbatch`, whose rules they follow; the spec is
:mod:`.recordbatch_schema`).

Rules:
- Equal to the schema's decoder (differential property tests): the same records, and the same inputs rejected
  (:class:`MalformedInput`).
- The CRC-32C is verified; a mismatch is :class:`MalformedInput` with reason ``CRC``. A compressed batch may expand to
  ``max_decompressed_size`` bytes at most; the batches of one buffer share one budget.
- :func:`decode_record_batches` reads batches back to back and ignores an incomplete batch at the end.
"""

from __future__ import annotations

import struct

from .compression import MAX_DECOMPRESSED_SIZE, Codec, DecompressionBudget
from .crc import crc32c
from .errors import MalformedInput
from .record import (
    CODEC_MASK,
    CREATE_TIME,
    LOG_APPEND_TIME,
    TIMESTAMP_TYPE_BIT,
    Record,
    decompression_limit,
    entry_spans,
    new_record,
)
from .recordbatch_schema import HEADER_SIZE, MAGIC, RecordBatch

# ---------------------------------------------------------------- decoding

_HEAD = struct.Struct(">qiibIhiqqqhii")  # the 61 bytes before the records
_VARINT_BITS = {5: 32, 10: 64}  # the widest value a varint of this many bytes may hold


def _uvarint(buf: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    """Unsigned LEB128 at ``pos``, at most ``max_bytes`` bytes (5: a 32-bit value, 10: 64-bit): (value, next pos)."""
    result = shift = 0
    for i in range(pos, pos + max_bytes):
        b = buf[i]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if result >> _VARINT_BITS[max_bytes]:
                raise MalformedInput(f"varint at byte {pos} out of range")
            return result, i + 1
        shift += 7
    raise MalformedInput(f"varint at byte {pos} longer than {max_bytes} bytes")


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Zigzag varint (32-bit) at ``pos``: (value, next pos)."""
    raw, pos = _uvarint(buf, pos, 5)
    return (raw >> 1) ^ -(raw & 1), pos


def _headers(buf: bytes, pos: int, count: int, end: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    """``count`` record headers from ``pos`` (the record ends at ``end``): (headers, the position after them)."""
    if not 0 <= count <= end - pos:
        raise MalformedInput(f"invalid header count {count}")
    headers = []
    for _ in range(count):
        size, pos = _varint(buf, pos)
        if size < 0:
            raise MalformedInput(f"invalid header key length {size}")
        key = buf[pos : pos + size].decode("utf-8")
        pos += size
        size, pos = _varint(buf, pos)
        if size < -1:
            raise MalformedInput(f"invalid header value length {size}")
        headers.append((key, None if size == -1 else buf[pos : pos + size]))
        pos += max(size, 0)
    return tuple(headers), pos


def _records(buf: bytes, pos: int, count: int, batch: tuple[int, int, int, int]) -> list[Record]:
    """``count`` records from ``buf[pos:]``, which they must fill exactly.

    This loop is the hot path of every read. Each varint is decoded inline: its common one-byte (or, for lengths and
    deltas, two-byte) form right here, anything longer by :func:`_uvarint`. An index past the end of ``buf`` raises
    IndexError, which the caller turns into :class:`MalformedInput`.
    """
    base_offset, base_ts, max_ts, ts_type = batch
    log_append = ts_type == LOG_APPEND_TIME
    end_of_buffer = len(buf)
    if count > end_of_buffer - pos:  # every record takes at least one byte
        raise MalformedInput(f"{count} records cannot fit in {end_of_buffer - pos} bytes")
    out: list[Record] = []
    append = out.append
    for _ in range(count):
        b = buf[pos]  # record length
        if b < 0x80:
            raw, pos = b, pos + 1
        elif buf[pos + 1] < 0x80:
            raw, pos = (b & 0x7F) | (buf[pos + 1] << 7), pos + 2
        else:
            raw, pos = _uvarint(buf, pos, 5)
        length = (raw >> 1) ^ -(raw & 1)
        if length < 0 or pos + length > end_of_buffer:
            raise MalformedInput(f"record length {length} does not fit the batch")
        end = pos + length
        b = buf[pos + 1]  # timestamp delta, after the record's attributes (unused)
        raw, pos = (b, pos + 2) if b < 0x80 else _uvarint(buf, pos + 1, 10)
        ts_delta = (raw >> 1) ^ -(raw & 1)
        b = buf[pos]  # offset delta
        if b < 0x80:
            raw, pos = b, pos + 1
        elif buf[pos + 1] < 0x80:
            raw, pos = (b & 0x7F) | (buf[pos + 1] << 7), pos + 2
        else:
            raw, pos = _uvarint(buf, pos, 5)
        offset_delta = (raw >> 1) ^ -(raw & 1)
        b = buf[pos]  # key length
        n, pos = ((b >> 1) ^ -(b & 1), pos + 1) if b < 0x80 else _varint(buf, pos)
        if n >= 0:
            key = buf[pos : pos + n]
            pos += n
        elif n == -1:
            key = None
        else:
            raise MalformedInput(f"invalid key length {n}")
        b = buf[pos]  # value length
        if b < 0x80:
            raw, pos = b, pos + 1
        elif buf[pos + 1] < 0x80:
            raw, pos = (b & 0x7F) | (buf[pos + 1] << 7), pos + 2
        else:
            raw, pos = _uvarint(buf, pos, 5)
        n = (raw >> 1) ^ -(raw & 1)
        if n >= 0:
            value = buf[pos : pos + n]
            pos += n
        elif n == -1:
            value = None
        else:
            raise MalformedInput(f"invalid value length {n}")
        b = buf[pos]  # header count
        n, pos = ((b >> 1) ^ -(b & 1), pos + 1) if b < 0x80 else _varint(buf, pos)
        if n:
            headers, pos = _headers(buf, pos, n, end)
        else:
            headers = ()
        if pos != end:
            raise MalformedInput(f"record fields end at byte {pos}, its length says {end}")
        append(
            new_record(
                base_offset + offset_delta,
                max_ts if log_append else base_ts + ts_delta,
                key,
                value,
                headers,
                ts_type,
                MAGIC,
            )
        )
    if pos != end_of_buffer:
        raise MalformedInput(f"{end_of_buffer - pos} bytes after the last of {count} records")
    return out


def decode_record_batch(
    data: bytes | memoryview, *, max_decompressed_size: int | DecompressionBudget = MAX_DECOMPRESSED_SIZE
) -> RecordBatch:
    """Decode exactly one complete batch (no bytes after it); :class:`MalformedInput` if it is not one. A compressed
    batch may expand to ``max_decompressed_size`` bytes (or draw from a shared budget)."""
    data = bytes(data)
    if len(data) < HEADER_SIZE:
        raise MalformedInput(f"record batch of {len(data)} bytes is shorter than its {HEADER_SIZE}-byte header")
    base_offset, length, epoch, magic, crc, attributes, last_delta, base_ts, max_ts, pid, p_epoch, seq, count = (
        _HEAD.unpack_from(data)
    )
    if length != len(data) - 12:
        raise MalformedInput(f"record batch length {length} but {len(data) - 12} bytes follow it")
    if magic != MAGIC:
        raise MalformedInput(f"record batch magic {magic}, expected {MAGIC}", reason="MAGIC")
    actual = crc32c(memoryview(data)[21:])
    if actual != crc:
        raise MalformedInput(f"record batch: CRC-32C is {actual:#010x}, the batch says {crc:#010x}", reason="CRC")
    codec = attributes & CODEC_MASK
    if count < 0:
        raise MalformedInput(f"negative record count {count}")
    if codec == Codec.NONE:
        buf, pos = data, HEADER_SIZE
    elif codec <= Codec.ZSTD:
        buf, pos = DecompressionBudget.of(max_decompressed_size).decompress(codec, memoryview(data)[HEADER_SIZE:]), 0
    else:
        raise MalformedInput(f"record batch codec {codec} is unknown")
    ts_type = LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_BIT else CREATE_TIME
    try:
        records = _records(buf, pos, count, (base_offset, base_ts, max_ts, ts_type))
    except (IndexError, UnicodeDecodeError) as e:
        raise MalformedInput(f"malformed record batch: {e}") from None
    return RecordBatch(
        base_offset=base_offset,
        partition_leader_epoch=epoch,
        crc=crc,
        attributes=attributes,
        last_offset_delta=last_delta,
        base_timestamp=base_ts,
        max_timestamp=max_ts,
        producer_id=pid,
        producer_epoch=p_epoch,
        base_sequence=seq,
        records=tuple(records),
    )


def decode_record_batches(data: bytes, *, max_decompressed_size: int | None = None) -> list[RecordBatch]:
    """Every complete batch in ``data``, in order; an incomplete batch at the end is ignored. All of them together
    may expand to ``max_decompressed_size`` bytes (default: :func:`~bruce.wire.record.decompression_limit`)."""
    budget = DecompressionBudget(decompression_limit(data) if max_decompressed_size is None else max_decompressed_size)
    out = []
    for start, end, magic in entry_spans(data):
        if magic != MAGIC:
            raise MalformedInput(f"entry at byte {start} has magic {magic}, not {MAGIC}", reason="MAGIC")
        out.append(decode_record_batch(data[start:end], max_decompressed_size=budget))
    return out
