"""RecordBatch v2 (magic 2), the record format of Kafka 0.11 and later: the construct schema, which is the spec.

Layout: base offset (int64), batch length (int32), partition leader epoch (int32), magic (int8 = 2), CRC-32C (uint32)
over everything from ``attributes`` to the end, attributes (int16), last offset delta (int32), base and max timestamps
(int64), producer id (int64), producer epoch (int16), base sequence (int32), record count (int32), records. Each
record: length (varint), attributes (int8), timestamp delta (varlong), offset delta (varint), key and value (varint
length, -1 = null), headers (varint count of: key as varint-length UTF-8, value as varint-length bytes, -1 = null).
Compressed batches compress the records (not the count) as one blob, codec in attribute bits 0-2.

Rules:
- :data:`RECORD_BATCH` is the spec; :func:`build_record_batch_with_schema` and :func:`decode_record_batch_with_schema`
  use it directly. The hand-written codecs in :mod:`bruce.wire.recordbatch` (the hot path) are proven equal to these
  by differential property tests: same bytes, same accept/reject.
- Decoding verifies the CRC-32C (a mismatch is :class:`MalformedInput` with reason ``CRC``) and caps decompressed data
  at :data:`MAX_DECOMPRESSED_SIZE`. Anything that does not parse is :class:`MalformedInput`, nothing else.
- Records given to the builders are ``(key, value, timestamp_ms, headers)``: key and value ``bytes``/``bytearray`` or
  ``None``; headers ``None``/empty or a sequence of ``(str, bytes | None)``. Bad input is :class:`UsageError`.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, BinaryIO

import construct as c
from construct import this

from .compression import MAX_DECOMPRESSED_SIZE, Codec, compress, decompress
from .crc import crc32c
from .errors import MalformedInput, UsageError
from .primitives import (
    Int8,
    Int16,
    Int32,
    Int64,
    UInt32,
    Varint,
    VarintArray,
    VarintNullableBytes,
    VarintString,
    Varlong,
)
from .record import CODEC_MASK, CREATE_TIME, LOG_APPEND_TIME, TIMESTAMP_TYPE_BIT, Record

MAGIC = 2
HEADER_SIZE = 61  # bytes before the first record
RECORD_BATCH_HEADER_SIZE = HEADER_SIZE  # as bruce.wire exports it
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20

RecordInput = tuple[bytes | None, bytes | bytearray | None, int, Sequence[tuple[str, bytes | None]] | None]

# ---------------------------------------------------------------- schema (the spec)


class _Crc32cChecked(c.Subconstruct):  # type: ignore[misc]  # construct is untyped: its classes are Any
    """A CRC-32C (uint32) followed by the rest of the stream, which it covers and which ``subcon`` parses."""

    def _parse(self, stream: BinaryIO, context: Any, path: str) -> Any:
        expected = UInt32._parsereport(stream, context, path)
        data = c.stream_read_entire(stream, path)
        actual = crc32c(data)
        if actual != expected:
            raise c.ChecksumError(f"CRC-32C is {actual:#010x}, the batch says {expected:#010x}", path=path)
        obj = self.subcon._parsereport(io.BytesIO(data), context, path)
        obj.crc = expected
        return obj

    def _build(self, obj: Any, stream: BinaryIO, context: Any, path: str) -> Any:
        inner = io.BytesIO()
        self.subcon._build(obj, inner, context, path)
        data = inner.getvalue()
        UInt32._build(crc32c(data), stream, context, path)
        c.stream_write(stream, data, len(data), path)
        return obj


HEADER = c.Struct("key" / VarintString, "value" / VarintNullableBytes)

RECORD = c.Prefixed(
    Varint,
    c.Struct(
        "attributes" / Int8,  # unused, 0
        "timestamp_delta" / Varlong,
        "offset_delta" / Varint,
        "key" / VarintNullableBytes,
        "value" / VarintNullableBytes,
        "headers" / VarintArray(HEADER),
        c.Terminated,
    ),
)

_RECORD_LIST = c.FocusedSeq("records", "records" / c.Array(this._.record_count, RECORD), c.Terminated)


def _compressed(codec: Codec) -> c.Construct:
    return c.Transformed(
        _RECORD_LIST,
        partial(decompress, codec, max_size=MAX_DECOMPRESSED_SIZE),
        None,
        partial(compress, codec),
        None,
    )


BATCH_BODY = c.Struct(  # the bytes the CRC-32C covers
    "attributes" / Int16,
    "last_offset_delta" / Int32,
    "base_timestamp" / Int64,
    "max_timestamp" / Int64,
    "producer_id" / Int64,
    "producer_epoch" / Int16,
    "base_sequence" / Int32,
    "record_count" / Int32,
    "records"
    / c.Switch(
        this.attributes & CODEC_MASK,
        {codec: _RECORD_LIST if codec == Codec.NONE else _compressed(codec) for codec in Codec},
        default=c.Error,
    ),
)

RECORD_BATCH = c.Struct(
    "base_offset" / Int64,
    "batch"
    / c.Prefixed(
        Int32,
        c.Struct(
            "partition_leader_epoch" / Int32,
            "magic" / c.Const(MAGIC, Int8),
            "body" / _Crc32cChecked(BATCH_BODY),
        ),
    ),
)

# ---------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """One decoded batch. Record offsets and timestamps are absolute (log-append time batches use max_timestamp)."""

    base_offset: int
    partition_leader_epoch: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records: tuple[Record, ...]

    @property
    def codec(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_BIT else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        """A transaction marker (commit/abort): its records are not user data."""
        return bool(self.attributes & CONTROL_BIT)


def attributes_for(codec: int, timestamp_type: int = CREATE_TIME, transactional: bool = False) -> int:
    """The attributes field for a (non-control) batch."""
    if not isinstance(codec, int) or codec not in _CODECS:
        raise UsageError(f"unknown codec {codec!r}")
    if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
        raise UsageError(f"unknown timestamp type {timestamp_type!r}")
    return codec | (TIMESTAMP_TYPE_BIT if timestamp_type else 0) | (TRANSACTIONAL_BIT if transactional else 0)


_CODECS = frozenset(Codec)

# ---------------------------------------------------------------- decoding


def _to_batch(parsed: c.Container) -> RecordBatch:
    inner = parsed.batch
    body = inner.body
    base_offset = parsed.base_offset
    log_append = body.attributes & TIMESTAMP_TYPE_BIT
    ts_type = LOG_APPEND_TIME if log_append else CREATE_TIME
    records = tuple(
        Record(
            offset=base_offset + r.offset_delta,
            timestamp=body.max_timestamp if log_append else body.base_timestamp + r.timestamp_delta,
            key=r.key,
            value=r.value,
            headers=tuple((h.key, h.value) for h in r.headers),
            timestamp_type=ts_type,
            magic=MAGIC,
        )
        for r in body.records
    )
    return RecordBatch(
        base_offset=base_offset,
        partition_leader_epoch=inner.partition_leader_epoch,
        crc=body.crc,
        attributes=body.attributes,
        last_offset_delta=body.last_offset_delta,
        base_timestamp=body.base_timestamp,
        max_timestamp=body.max_timestamp,
        producer_id=body.producer_id,
        producer_epoch=body.producer_epoch,
        base_sequence=body.base_sequence,
        records=records,
    )


_WHOLE_BATCH = c.Struct("batch" / RECORD_BATCH, c.Terminated)


def decode_record_batch_with_schema(data: bytes) -> RecordBatch:
    """Decode exactly one complete batch (no bytes after it) with :data:`RECORD_BATCH`."""
    try:
        parsed = _WHOLE_BATCH.parse(data).batch
    except c.ChecksumError as e:
        raise MalformedInput(f"record batch: {e}", reason="CRC") from None
    except (c.ConstructError, ValueError, OverflowError) as e:
        raise MalformedInput(f"malformed record batch: {e}") from None
    return _to_batch(parsed)


# ---------------------------------------------------------------- building


def build_record_batch_with_schema(
    records: Sequence[RecordInput],
    *,
    codec: int = Codec.NONE,
    base_offset: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    timestamp_type: int = CREATE_TIME,
    transactional: bool = False,
    partition_leader_epoch: int = -1,
) -> bytes:
    """Build one batch with :data:`RECORD_BATCH` (arguments as ``bruce.wire.recordbatch.build_record_batch``)."""
    if not records:
        raise UsageError("a record batch needs at least one record")
    try:
        base_ts = records[0][2]
        stamps = [r[2] for r in records]
        value = dict(
            base_offset=base_offset,
            batch=dict(
                partition_leader_epoch=partition_leader_epoch,
                body=dict(
                    attributes=attributes_for(codec, timestamp_type, transactional),
                    last_offset_delta=len(records) - 1,
                    base_timestamp=base_ts,
                    max_timestamp=max(stamps),
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    base_sequence=base_sequence,
                    record_count=len(records),
                    records=[
                        dict(
                            attributes=0,
                            timestamp_delta=ts - base_ts,
                            offset_delta=i,
                            key=key,
                            value=val,
                            headers=[dict(key=k, value=v) for k, v in headers or ()],
                        )
                        for i, (key, val, ts, headers) in enumerate(records)
                    ],
                ),
            ),
        )
        data: bytes = RECORD_BATCH.build(value)
        return data
    except UsageError:
        raise
    except (c.ConstructError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as e:
        raise UsageError(f"cannot encode record batch: {e}") from None
