"""The hand-written batch decoder accepts and rejects exactly what the schema does, and decodes the same values.

Inputs are valid batches whose record bytes are then mutated (flipped, inserted, deleted bytes; a wrong record count)
and re-wrapped with a correct length and CRC-32C, so the mutations reach the record parser instead of stopping at the
checksum; plus raw mutations of whole batches.
"""

from __future__ import annotations

import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wire.streams import run

from bruce.wire.compression import Codec, compress
from bruce.wire.crc import crc32c
from bruce.wire.recordbatch import build_record_batch, decode_record_batch, decode_record_batch_with_schema

keys = st.none() | st.binary(max_size=12)
headers = st.none() | st.lists(st.tuples(st.text(max_size=4), st.none() | st.binary(max_size=4)), max_size=2)
record = st.tuples(keys, keys, st.integers(-(1 << 40), 1 << 40), headers)
records = st.lists(record, min_size=1, max_size=5)


def _same(data: bytes) -> None:
    fast = run(decode_record_batch, data)
    schema = run(decode_record_batch_with_schema, data)
    if isinstance(fast, Exception) or isinstance(schema, Exception):
        assert type(fast) is type(schema), (fast, schema)
    else:
        assert fast == schema


def _rewrap(batch: bytes, raw_records: bytes, codec: Codec, count: int) -> bytes:
    """``batch``'s header around ``raw_records`` (compressed with ``codec``), with length, count and CRC fixed."""
    body = bytearray(batch[21:57])
    struct.pack_into(">h", body, 0, codec)
    body += struct.pack(">i", count) + (compress(codec, raw_records) if codec else raw_records)
    return batch[:8] + struct.pack(">iib", len(body) + 9, -1, 2) + struct.pack(">I", crc32c(bytes(body))) + body


mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10_000), st.integers(1, 255)),
    st.tuples(st.just("insert"), st.integers(0, 10_000), st.binary(min_size=1, max_size=3)),
    st.tuples(st.just("delete"), st.integers(0, 10_000), st.integers(1, 3)),
    st.tuples(st.just("count"), st.integers(-2, 7), st.none()),
)


def _mutate(raw: bytes, count: int, m) -> tuple[bytes, int]:
    kind, pos, arg = m
    if kind == "count":
        return raw, pos
    if not raw:
        return raw, count
    pos %= len(raw)
    if kind == "flip":
        return raw[:pos] + bytes([raw[pos] ^ arg]) + raw[pos + 1 :], count
    if kind == "insert":
        return raw[:pos] + arg + raw[pos:], count
    return raw[:pos] + raw[pos + arg :], count


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(records, st.sampled_from(list(Codec)), st.lists(mutation, max_size=3), st.integers(0, 1))
def test_decoders_agree_on_mutated_records(recs, codec, mutations, log_append) -> None:
    batch = build_record_batch(recs, timestamp_type=log_append)
    raw, count = batch[61:], len(recs)
    for m in mutations:
        raw, count = _mutate(raw, count, m)
    _same(_rewrap(batch, raw, codec, count))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(records, st.sampled_from(list(Codec)), st.integers(0, 10_000), st.integers(1, 255), st.integers(0, 200))
def test_decoders_agree_on_mutated_batches(recs, codec, pos, xor, cut) -> None:
    batch = build_record_batch(recs, codec=codec)
    _same(batch)
    flipped = bytearray(batch)
    flipped[pos % len(batch)] ^= xor
    _same(bytes(flipped))
    _same(batch[: max(0, len(batch) - cut)])
    _same(batch + bytes([xor]))


def test_decoders_agree_on_varint_edges() -> None:
    batch = build_record_batch([(b"k", b"v", 0, None)])
    record = batch[62:]  # after the record's own length byte
    for length_prefix in (b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x80\x01", b"\x80\x00", b"\x81\x80\x00", b"\x03"):
        _same(_rewrap(batch, length_prefix + record, Codec.NONE, 1))
    for ts_delta in (b"\xff" * 9 + b"\x01", b"\xff" * 9 + b"\x02", b"\x80" * 10 + b"\x00", b"\x80\x00"):
        body = b"\x00" + ts_delta + b"\x00\x02k\x02v\x00"
        _same(_rewrap(batch, bytes([len(body) * 2]) + body, Codec.NONE, 1))
