"""RecordBatch v2 (magic 2): the codecs the producer and readers use. The spec is :mod:`.recordbatch_schema`.

Rules:
- :func:`build_record_batch` and :func:`decode_record_batch` are hand-written for speed. Differential property tests
  prove them equal to the schema: identical bytes, and the same inputs accepted and rejected (:class:`UsageError`
  when building, :class:`MalformedInput` when decoding).
- :func:`build_record_batch_columns` (the producer's path: keys, values and timestamps as three columns, no headers)
  has its records written by the optional C encoder (:mod:`.speedups`) when it is built and the input is in its plain
  form; the header, compression and CRC-32C stay here. Anything else, and every error, goes through
  :func:`build_record_batch`: the tests prove the two byte-equal.
- Decoding (:mod:`.recordbatch_decode`, re-exported here) verifies the CRC-32C; a mismatch is :class:`MalformedInput`
  with reason ``CRC``. A compressed batch may expand to ``max_decompressed_size`` bytes at most; the batches of one
  buffer share one budget.
- :func:`decode_record_batches` reads batches back to back and ignores an incomplete batch at the end (a Fetch
  response may cut its last batch).
- :func:`with_producer_identity` rewrites a built batch's producer id, epoch and base sequence (and its CRC-32C)
  without encoding its records again: an idempotent producer's batch renumbered after an epoch bump.
- Records to build are ``(key, value, timestamp_ms, headers)``: key and value ``bytes``/``bytearray`` or ``None``;
  headers ``None``/empty (the fast case) or a sequence of ``(str, bytes | None)``. The first record's timestamp is the
  batch's base timestamp. Producers write create-time batches; the broker stamps log-append time per topic.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from itertools import groupby, repeat
from operator import add, itemgetter, sub
from typing import Any

from .compression import MAX_DECOMPRESSED_SIZE, Codec, compress
from .crc import crc32c
from .errors import UsageError
from .primitives import encode_varint
from .record import CODEC_MASK, CREATE_TIME, TIMESTAMP_TYPE_BIT
from .recordbatch_decode import decode_record_batch, decode_record_batches
from .recordbatch_schema import (
    CONTROL_BIT,
    HEADER_SIZE,
    MAGIC,
    RECORD_BATCH,
    TRANSACTIONAL_BIT,
    RecordBatch,
    RecordInput,
    attributes_for,
    build_record_batch_with_schema,
    decode_record_batch_with_schema,
)
from .speedups import record_batch_records as _records_c

__all__ = [
    "CODEC_MASK",
    "CONTROL_BIT",
    "MAGIC",
    "MAX_DECOMPRESSED_SIZE",
    "RECORD_BATCH",
    "TIMESTAMP_TYPE_BIT",
    "TRANSACTIONAL_BIT",
    "Codec",
    "RecordBatch",
    "RecordInput",
    "build_record_batch",
    "build_record_batch_columns",
    "build_record_batch_with_schema",
    "build_value_batch",
    "decode_record_batch",
    "decode_record_batch_with_schema",
    "decode_record_batches",
    "with_producer_identity",
]

# ---------------------------------------------------------------- building


def _varint_table(size: int) -> tuple[bytes, ...]:
    return tuple(encode_varint(i) for i in range(size))


_VARINT = _varint_table(1 << 14)  # zigzag varints of 0..16383, for lengths and deltas
_NULL = b"\x01"  # zigzag varint -1
_NO_HEADERS = b"\x00"
# The fixed pieces of a keyless record without headers: its attributes (0) and timestamp delta (below _TABLED ms),
# then its offset delta and null key (below 16384): a record is then six pieces joined once with the whole batch.
_TABLED = 1 << 12
_ATTRIBUTES_TS = tuple(b"\x00" + encode_varint(i) for i in range(_TABLED))
_DELTA_NULL_KEY = tuple(encode_varint(i) + _NULL for i in range(1 << 14))
_ENTRY_HEAD = struct.Struct(">qiibI")  # base offset, batch length, leader epoch, magic, crc
_BODY_HEAD = struct.Struct(">hiqqqhii")  # attributes .. record count
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _encode_headers(headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    out = [encode_varint(len(headers))]
    for key, value in headers:
        raw = key.encode("utf-8")
        out.append(encode_varint(len(raw)))
        out.append(raw)
        if value is None:
            out.append(_NULL)
        else:
            out.append(encode_varint(len(value)))
            out.append(value)
    return b"".join(out)


def build_record_batch(
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
    compression_level: int | None = None,
) -> bytes:
    """One RecordBatch v2 holding ``records`` (``(key, value, timestamp_ms, headers)`` tuples), ready for Produce.

    The first record's timestamp is the base timestamp; offsets count from ``base_offset`` (0 for Produce). Producer
    id/epoch/base sequence stay -1 unless the producer is idempotent. ``compression_level`` is the codec's own level
    (None: its default, the only level the schema builder uses). Raises :class:`UsageError` for bad input.
    """
    count = len(records)
    if not count:
        raise UsageError("a record batch needs at least one record")
    attributes = attributes_for(codec, timestamp_type, transactional)
    table = _VARINT
    size = len(table)
    attributes_ts, delta_null_key = _ATTRIBUTES_TS, _DELTA_NULL_KEY
    parts: list[bytes | bytearray] = []
    extend = parts.extend
    try:
        base_ts = min_ts = max_ts = records[0][2]
        for delta, (key, value, ts, headers) in enumerate(records):
            ts_delta = ts - base_ts
            if key is None and not headers and value is not None and 0 <= ts_delta < _TABLED and delta < size:
                # The common record (no key, no headers): its pieces, joined once for the whole batch.
                if ts > max_ts:
                    max_ts = ts
                head, middle = attributes_ts[ts_delta], delta_null_key[delta]
                n = len(value)
                value_length = table[n] if n < size else encode_varint(n)
                n += len(head) + len(middle) + len(value_length) + 1
                extend((table[n] if n < size else encode_varint(n), head, middle, value_length, value, _NO_HEADERS))
                continue
            if ts > max_ts:
                max_ts = ts
            elif ts < min_ts:
                min_ts = ts
            if key is None:
                key_part = _NULL
            else:
                n = len(key)
                key_part = (table[n] if n < size else encode_varint(n)) + key
            if value is None:
                value_part = _NULL
            else:
                n = len(value)
                value_part = (table[n] if n < size else encode_varint(n)) + value
            body = b"".join(
                (
                    b"\x00",
                    table[ts_delta] if 0 <= ts_delta < size else encode_varint(ts_delta),
                    table[delta] if delta < size else encode_varint(delta),
                    key_part,
                    value_part,
                    _encode_headers(headers) if headers else _NO_HEADERS,
                )
            )
            n = len(body)
            extend((table[n] if n < size else encode_varint(n), body))
        if max_ts - base_ts > _INT64_MAX or min_ts - base_ts < _INT64_MIN:  # base and max: struct checks them
            raise UsageError("record timestamp deltas do not fit a varlong")
        return _finish(
            b"".join(parts),
            count,
            attributes,
            base_ts,
            max_ts,
            compression_level=compression_level,
            base_offset=base_offset,
            producer=(producer_id, producer_epoch, base_sequence),
            partition_leader_epoch=partition_leader_epoch,
        )
    except UsageError:
        raise
    except (TypeError, ValueError, AttributeError, IndexError, OverflowError, struct.error) as e:
        raise UsageError(f"cannot encode record batch: {e}") from None


def build_record_batch_columns(
    keys: Sequence[bytes | None],
    values: Sequence[bytes | bytearray | None],
    timestamps: Sequence[int],
    *,
    codec: int = Codec.NONE,
    compression_level: int | None = None,
    empty_as_null: bool = False,
) -> bytes:
    """:func:`build_record_batch` of the records ``(keys[i], values[i], timestamps[i], None)`` (no headers), byte for
    byte, from three columns: the producer's path for the batches it encodes (no tuple per record). With
    ``empty_as_null`` an empty key or value is written as null. The C encoder (:mod:`.speedups`) writes the records
    when present and the input is in its plain form; anything else goes through :func:`build_record_batch`, which
    raises :class:`UsageError` for bad input."""
    count = len(values)
    if len(keys) != count or len(timestamps) != count:
        raise UsageError("a record batch needs a key and a timestamp per value")
    if count and _records_c is not None:
        attributes = attributes_for(codec, CREATE_TIME, False)
        try:
            data, base_ts, max_ts = _records_c(keys, values, timestamps, empty_as_null)
        except ValueError:
            pass  # not the plain form: the Python builder builds it or says why not
        else:
            return _finish(data, count, attributes, base_ts, max_ts, compression_level=compression_level)
    if empty_as_null:
        keys = [k or None for k in keys]
        values = [v or None for v in values]
    records: list[RecordInput] = list(zip(keys, values, timestamps, repeat(None)))
    return build_record_batch(records, codec=codec, compression_level=compression_level)


def _finish(
    data: bytes | memoryview,
    count: int,
    attributes: int,
    base_ts: int,
    max_ts: int,
    *,
    compression_level: int | None = None,
    base_offset: int = 0,
    producer: tuple[int, int, int] = (-1, -1, -1),
    partition_leader_epoch: int = -1,
) -> bytes:
    """The whole batch around the records' bytes ``data``: compressed as ``attributes`` say, headers and CRC-32C."""
    try:
        if attributes & CODEC_MASK:
            data = compress(Codec(attributes & CODEC_MASK), data, level=compression_level)
        head = _BODY_HEAD.pack(attributes, count - 1, base_ts, max_ts, *producer, count)
        crc = crc32c(data, crc32c(head))
        entry = _ENTRY_HEAD.pack(base_offset, len(head) + len(data) + 9, partition_leader_epoch, MAGIC, crc)
    except (TypeError, ValueError, OverflowError, struct.error) as e:
        raise UsageError(f"cannot encode record batch: {e}") from None
    return b"".join((entry, head, data))


# A keyless record without headers at the batch's timestamp: its size, the bytes before its value's length (attributes,
# timestamp delta 0, offset delta, null key) by offset delta, and its size less those bytes and its header count.
_ALONE = tuple(b"\x00\x00" + middle for middle in _DELTA_NULL_KEY)
_ALONE_EXTRA = tuple(len(alone) + 1 for alone in _ALONE)
_WITH_LENGTH = tuple(n + len(_VARINT[n]) for n in range(len(_VARINT)))  # a value's size with its length varint


_ATTRIBUTES_TS_EXTRA = tuple(len(head) + 1 for head in _ATTRIBUTES_TS)  # with the record's header count
_DELTA_NULL_KEY_SIZE = tuple(len(middle) for middle in _DELTA_NULL_KEY)


def _runs(timestamps: Sequence[int], base_ts: int, count: int) -> list[tuple[int, int]] | None:
    """``timestamps`` as (delta from ``base_ts``, how many in a row), when there are at most one run per 16 values
    (else None: per value is as quick)."""
    runs = [(ts - base_ts, len(list(group))) for ts, group in groupby(timestamps)]
    return runs if len(runs) * 16 <= count else None


def _one_by_one(
    values: Sequence[bytes | bytearray | None], timestamps: int | Sequence[int], codec: int, level: int | None
) -> bytes:
    stamps: Iterable[int] = repeat(timestamps) if isinstance(timestamps, int) else timestamps
    records: list[RecordInput] = [(None, v, ts, None) for v, ts in zip(values, stamps)]  # noqa: B905 (repeat is endless)
    return build_record_batch(records, codec=codec, compression_level=level)


def build_value_batch(
    values: Sequence[bytes | bytearray | None],
    timestamps: int | Sequence[int],
    *,
    codec: int = Codec.NONE,
    level: int | None = None,
) -> bytes:
    """The batch :func:`build_record_batch` builds for keyless records without headers, ``values[i]`` at
    ``timestamps[i]`` (or all at ``timestamps``, an int), equal byte for byte, made column by column in C (no Python
    step per record): the producer's path for ``send_many`` and for sealed batches of ``send``. One value, more than
    16384, timestamps not within 4 s after the first, or a record of 16 KiB or more take the general builder. Raises
    :class:`UsageError` for bad input (``compression_level``: ``level``)."""
    count = len(values)
    one = type(timestamps) is int
    if not 1 < count <= len(_ALONE) or (not one and len(timestamps) != count):  # type: ignore[arg-type]  # not an int: `one`
        return _one_by_one(values, timestamps, codec, level)
    table = _VARINT
    try:
        base_ts = max_ts = timestamps if isinstance(timestamps, int) else timestamps[0]
        by_length = itemgetter(*map(len, values))  # type: ignore[arg-type]  # a None: TypeError, below
        value_lengths = by_length(table)
        if one:
            records = itemgetter(*map(add, _ALONE_EXTRA[:count], by_length(_WITH_LENGTH)))(table)
            parts: list[Any] = [_NO_HEADERS] * (5 * count)  # a None value makes join raise TypeError (below)
            parts[1::5] = _ALONE[:count]
            parts[2::5] = value_lengths
            parts[3::5] = values
        else:
            runs = _runs(timestamps, base_ts, count)  # type: ignore[arg-type]  # not an int: `one`
            if runs is not None:  # few distinct timestamps (send's batches): each run's pieces repeated
                heads: Any = []
                extras: Any = []
                for delta, n in runs:
                    heads += [_ATTRIBUTES_TS[delta]] * n
                    extras += [_ATTRIBUTES_TS_EXTRA[delta]] * n
                if min(d for d, _ in runs) < 0 or max(d for d, _ in runs) >= _TABLED:
                    return _one_by_one(values, timestamps, codec, level)
                max_ts = base_ts + max(d for d, _ in runs)
            else:
                deltas = list(map(sub, timestamps, repeat(base_ts)))  # type: ignore[arg-type]  # not an int: `one`
                if min(deltas) < 0 or max(deltas) >= _TABLED:
                    return _one_by_one(values, timestamps, codec, level)
                max_ts = base_ts + max(deltas)
                by_delta = itemgetter(*deltas)
                heads, extras = by_delta(_ATTRIBUTES_TS), by_delta(_ATTRIBUTES_TS_EXTRA)
            extra = map(add, extras, _DELTA_NULL_KEY_SIZE[:count])
            records = itemgetter(*map(add, extra, by_length(_WITH_LENGTH)))(table)
            parts = [_NO_HEADERS] * (6 * count)
            parts[1::6] = heads
            parts[2::6] = _DELTA_NULL_KEY[:count]
            parts[3::6] = value_lengths
            parts[4::6] = values
        parts[0 :: 5 if one else 6] = records
        attributes = attributes_for(codec, CREATE_TIME, False)
        if attributes & CODEC_MASK:
            data = b"".join(parts)
        else:  # uncompressed: the records joined after room for the headers, which are written in place
            parts.insert(0, _HEADERS_ROOM)
            batch = bytearray().join(parts)
    except IndexError:  # a value or record of 16 KiB or more: its length is not in the table
        return _one_by_one(values, timestamps, codec, level)
    except TypeError as e:
        if None in values:  # a null value (a tombstone): the general builder writes it
            return _one_by_one(values, timestamps, codec, level)
        raise UsageError(f"cannot encode record batch: {e}") from None
    if attributes & CODEC_MASK:
        return _finish(data, count, attributes, base_ts, max_ts, compression_level=level)
    return finish_in_place(batch, count, attributes, base_ts, max_ts)


def finish_in_place(
    batch: bytearray, count: int, attributes: int, base_ts: int, max_ts: int, compression_level: int | None = None
) -> bytes:
    """The batch of ``count`` records written after :data:`HEADER_SIZE` bytes of room in ``batch``: uncompressed, its
    header and CRC-32C written into the room (no copy); compressed as ``attributes`` say, the records compressed and
    the batch joined around them."""
    if attributes & CODEC_MASK:
        with memoryview(batch) as view:
            records = view[HEADER_SIZE:]
            try:
                return _finish(records, count, attributes, base_ts, max_ts, compression_level=compression_level)
            finally:
                records.release()
    try:
        batch[_CRC_AT + 4 : HEADER_SIZE] = _BODY_HEAD.pack(attributes, count - 1, base_ts, max_ts, -1, -1, -1, count)
    except struct.error as e:
        raise UsageError(f"cannot encode record batch: {e}") from None
    with memoryview(batch) as view:
        crc = crc32c(view[_CRC_AT + 4 :])
    batch[: _CRC_AT + 4] = _ENTRY_HEAD.pack(0, len(batch) - 12, -1, MAGIC, crc)  # 12: base offset and length
    return batch  # type: ignore[return-value]  # bytes-like: the batch built in place, not copied again


_HEADERS_ROOM = bytes(HEADER_SIZE)


_IDENTITY = struct.Struct(">qhi")  # producer id, producer epoch, base sequence
_IDENTITY_AT = 43  # their position in a batch
_CRC_AT = 17  # the CRC-32C's position; it covers everything from byte 21 (attributes) on


def with_producer_identity(
    batch: bytes | bytearray,
    *,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    transactional: bool = False,
    in_place: bool = False,
) -> bytes:
    """``batch`` (one whole batch, as built) with another producer id, epoch and base sequence (and, with
    ``transactional``, the transactional attribute bit set), its CRC-32C recomputed; equal to building it again with
    them. A new ``bytes``, ``batch`` left as it is (a transport may still hold it, unsent); with ``in_place``, a
    ``bytearray`` that nothing else holds yet (as an encoder returned it) is stamped where it is and returned.
    :class:`UsageError` for values out of range or a too-short ``batch``."""
    if len(batch) < HEADER_SIZE or batch[16] != MAGIC:
        raise UsageError("not a record batch")
    try:
        identity = _IDENTITY.pack(producer_id, producer_epoch, base_sequence)
    except struct.error as e:
        raise UsageError(f"cannot encode producer identity: {e}") from None
    # The CRC'd part in three pieces — attributes to timestamps, the identity, the rest — so the batch is copied once.
    before = bytearray(batch[21:_IDENTITY_AT])
    if transactional:
        before[1] |= TRANSACTIONAL_BIT  # the attributes' low byte (an int16 right after the CRC)
    if in_place and type(batch) is bytearray:  # no copy of a whole batch (a fresh page-faulted allocation)
        batch[21:_IDENTITY_AT] = before
        batch[_IDENTITY_AT : _IDENTITY_AT + _IDENTITY.size] = identity
        with memoryview(batch) as view:
            batch[_CRC_AT : _CRC_AT + 4] = crc32c(view[_CRC_AT + 4 :]).to_bytes(4, "big")
        return batch  # type: ignore[return-value]  # bytes-like: stamped where it is
    with memoryview(batch) as view:
        rest = view[_IDENTITY_AT + _IDENTITY.size :]
        crc = crc32c(rest, crc32c(identity, crc32c(before)))
        return b"".join((view[:_CRC_AT], crc.to_bytes(4, "big"), before, identity, rest))
