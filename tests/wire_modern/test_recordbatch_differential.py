"""The hand-written RecordBatch v2 codecs equal the schema: the builder writes the same bytes and rejects the same
records; the decoder accepts and rejects exactly what the schema does, and decodes the same values.

Decoder inputs are valid batches whose record bytes are then mutated (flipped, inserted, deleted bytes; a wrong record
count) and re-wrapped with a correct length and CRC-32C, so the mutations reach the record parser instead of stopping
at the checksum; plus raw mutations of whole batches.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wire.builders import IMPLEMENTATIONS, builders
from wire.streams import run

from bruce.wire.compression import Codec, compress
from bruce.wire.crc import crc32c
from bruce.wire.errors import UsageError
from bruce.wire.recordbatch import (
    build_record_batch,
    build_record_batch_columns,
    build_record_batch_with_schema,
    build_value_batch,
    decode_record_batch,
    decode_record_batch_with_schema,
    with_producer_identity,
)
from bruce.wire.records import LOG_APPEND_TIME

# ---------------------------------------------------------------- the fast builder

keys = st.none() | st.binary(max_size=40)
headers = st.none() | st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=3)
timestamps = st.integers(-(1 << 40), 1 << 42)
record = st.tuples(keys, keys, timestamps, headers)
int16 = st.integers(-(1 << 15), (1 << 15) - 1)
int32 = st.integers(-(1 << 31), (1 << 31) - 1)
int64 = st.integers(-(1 << 63), (1 << 63) - 1)
batch_args = st.fixed_dictionaries(
    {
        "codec": st.sampled_from(list(Codec)),
        "base_offset": int64,
        "producer_id": int64,
        "producer_epoch": int16,
        "base_sequence": int32,
        "timestamp_type": st.sampled_from([0, 1]),
        "transactional": st.booleans(),
        "partition_leader_epoch": int32,
    }
)


# Keyless records without headers a few milliseconds apart (the builder's common case, written piece by piece), and
# runs of values at one timestamp (send_many's, written column by column by build_value_batch).
close_records = st.tuples(
    st.integers(0, 1 << 42),
    st.lists(
        st.tuples(
            st.none() | st.binary(max_size=3), st.none() | st.binary(max_size=200), st.integers(-3, 5000), headers
        ),
        min_size=1,
        max_size=40,
    ),
)
values = (
    st.none()
    | st.binary(max_size=300)
    | st.builds(lambda n: b"v" * n, st.sampled_from([63, 64, 8191, 16383, 16384, 20000]))
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(close_records, st.sampled_from(list(Codec)))
def test_records_close_in_time_equal_the_schema(base_and_records, codec) -> None:
    base, rows = base_and_records
    records = [(key, value, base + delta, hdrs) for key, value, delta, hdrs in rows]
    built = build_record_batch(records, codec=codec)
    assert built == build_record_batch_with_schema(records, codec=codec)
    if not any(hdrs for *_, hdrs in records):  # the producer's columns (C records when built): the same bytes
        keys, values, stamps, _ = zip(*records, strict=True)
        for implementation in IMPLEMENTATIONS:
            with builders(implementation):
                assert build_record_batch_columns(list(keys), list(values), list(stamps), codec=codec) == built


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(values, min_size=0, max_size=60), st.integers(-(1 << 40), 1 << 42), st.sampled_from(list(Codec)))
def test_value_batch_equals_the_record_by_record_builder_and_schema(vals, timestamp, codec) -> None:
    records = [(None, v, timestamp, None) for v in vals]
    if not vals:
        with pytest.raises(UsageError):
            build_value_batch(vals, timestamp, codec=codec)
        return
    built = build_value_batch(vals, timestamp, codec=codec)
    assert built == build_record_batch(records, codec=codec) == build_record_batch_with_schema(records, codec=codec)


# send's batches: one timestamp per value, in runs (a millisecond's messages share it), sometimes going back or far.
stamp_runs = st.lists(st.tuples(st.sampled_from([0, 1, 2, 5, 4095, 4096, -1, -3]), st.integers(1, 40)), max_size=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.binary(max_size=300), min_size=1, max_size=200),
    st.integers(-(1 << 40), 1 << 42),
    stamp_runs,
    st.sampled_from(list(Codec)),
)
def test_value_batch_with_a_timestamp_per_value_equals_the_record_by_record_builder(vals, base, runs, codec) -> None:
    stamps = [base]
    for step, n in runs:
        stamps += [stamps[-1] + step] * n
    stamps = (stamps * (len(vals) // len(stamps) + 1))[: len(vals)]
    records = [(None, v, ts, None) for v, ts in zip(vals, stamps, strict=True)]
    built = build_value_batch(vals, stamps, codec=codec)
    assert built == build_record_batch(records, codec=codec) == build_record_batch_with_schema(records, codec=codec)


def test_value_batch_of_many_values_and_bad_input() -> None:
    vals = [b"x" * (i % 130) for i in range(16_500)]  # offset deltas past the table: the general builder
    assert build_value_batch(vals, 7) == build_record_batch([(None, v, 7, None) for v in vals])
    assert build_value_batch(vals[:9000], 7) == build_record_batch([(None, v, 7, None) for v in vals[:9000]])
    for bad, timestamp in (([b"a", "b"], 1), ([b"a", b"b"], 1 << 64), ([b"a", 3], 1)):
        with pytest.raises(UsageError):
            build_value_batch(bad, timestamp)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(record, min_size=1, max_size=12), batch_args)
def test_fast_builder_equals_schema_and_round_trips(records, args) -> None:
    fast = build_record_batch(records, **args)
    assert fast == build_record_batch_with_schema(records, **args)
    batch = decode_record_batch(fast)
    assert batch.codec == args["codec"] and len(batch.records) == len(records)
    for i, (got, (key, value, ts, hdrs)) in enumerate(zip(batch.records, records, strict=True)):
        assert (got.offset, got.key, got.value, got.headers) == (args["base_offset"] + i, key, value, tuple(hdrs or ()))
        assert got.timestamp == (batch.max_timestamp if args["timestamp_type"] == LOG_APPEND_TIME else ts)


def _result(build, records, args):
    try:
        return build(records, **args)
    except UsageError:
        return UsageError


bad_key = st.sampled_from(["text", 7, 1.5, [1, 2], object()])
bad_timestamp = st.sampled_from([1 << 64, -(1 << 64), 1.0, "1", None])
bad_headers = st.sampled_from([[(b"bytes-key", b"v")], [("k", "str-value")], [("k",)], "ab", [("\ud800", b"")], 5])
bad_record = st.one_of(
    st.tuples(bad_key, keys, timestamps, headers),
    st.tuples(keys, bad_key, timestamps, headers),
    st.tuples(keys, keys, bad_timestamp, headers),
    st.tuples(keys, keys, timestamps, bad_headers),
    st.tuples(keys, keys),
)
bad_args = st.fixed_dictionaries(
    {},
    optional={
        "codec": st.sampled_from([5, 7, -1]),
        "base_offset": st.sampled_from([1 << 63, "0"]),
        "producer_epoch": st.sampled_from([1 << 15, -(1 << 15) - 1]),
        "base_sequence": st.sampled_from([1 << 31]),
        "timestamp_type": st.sampled_from([2, -1]),
        "partition_leader_epoch": st.sampled_from([1 << 31]),
    },
)


@settings(max_examples=400)
@given(st.lists(record, max_size=3), st.lists(bad_record, max_size=2), st.lists(record, max_size=2), bad_args)
def test_fast_builder_rejects_what_the_schema_rejects(before, bad, after, args) -> None:
    records = before + bad + after
    fast = _result(build_record_batch, records, args)
    assert fast == _result(build_record_batch_with_schema, records, args)
    if bad or args or not records:
        assert fast is UsageError


def test_timestamp_delta_overflow_is_rejected_by_both() -> None:
    records = [(None, b"", -(1 << 63), None), (None, b"", (1 << 63) - 1, None)]
    for build in (build_record_batch, build_record_batch_with_schema):
        with pytest.raises(UsageError):
            build(records)


def test_large_batches_leave_the_varint_table() -> None:
    records = [(None, bytes(20000), 1 << 40, None)] + [(b"k", b"v", (1 << 40) + i * 99999, None) for i in range(17000)]
    fast = build_record_batch(records)
    assert fast == build_record_batch_with_schema(records)
    assert decode_record_batch(fast).records[-1].offset == 17000


# ---------------------------------------------------------------- the fast decoder


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


# ---------------------------------------------------------------- a new producer identity on a built batch

identity = st.fixed_dictionaries({"producer_id": int64, "producer_epoch": int16, "base_sequence": int32})


@settings(max_examples=200)
@given(st.lists(record, min_size=1, max_size=5), st.sampled_from(list(Codec)), identity, identity)
def test_a_new_identity_equals_building_again(records, codec, before, after) -> None:
    built = build_record_batch(records, codec=codec, **before)
    patched = with_producer_identity(built, **after)
    assert patched == build_record_batch_with_schema(records, codec=codec, **after)
    untouched = bytes(built)  # a batch may still be queued for a socket: stamped in place only when asked
    assert with_producer_identity(built, **after) is not built and built == untouched
    fresh = bytearray(built)
    assert with_producer_identity(fresh, **after, in_place=True) is fresh and fresh == patched
    fresh = bytearray(built)
    assert with_producer_identity(fresh, **after, transactional=True, in_place=True) is fresh
    assert fresh == build_record_batch_with_schema(records, codec=codec, transactional=True, **after)
    assert with_producer_identity(untouched, **after, in_place=True) == patched  # bytes: a copy, as it must
    transactional = with_producer_identity(built, transactional=True, **after)
    assert transactional == build_record_batch_with_schema(records, codec=codec, transactional=True, **after)
    batch = decode_record_batch(patched)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (
        after["producer_id"],
        after["producer_epoch"],
        after["base_sequence"],
    )


def test_a_new_identity_refuses_what_it_cannot_write() -> None:
    built = build_record_batch([(None, b"v", 0, None)])
    for bad in ({"producer_id": 1 << 63, "producer_epoch": 0, "base_sequence": 0},
                {"producer_id": 1, "producer_epoch": 1 << 15, "base_sequence": 0},
                {"producer_id": 1, "producer_epoch": 0, "base_sequence": 1 << 31}):  # fmt: skip
        with pytest.raises(UsageError):
            with_producer_identity(built, **bad)
    with pytest.raises(UsageError, match="not a record batch"):
        with_producer_identity(built[:40], producer_id=1, producer_epoch=0, base_sequence=0)
