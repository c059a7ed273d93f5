"""Message sets magic 0/1: golden bytes, fast builder = construct spec, compression, offsets, partial tails."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bruce.wire.compression import Codec, compress
from bruce.wire.errors import MalformedInput, UsageError
from bruce.wire.messageset import (
    MESSAGE_OVERHEAD,
    MESSAGE_SET,
    build_message_set,
    build_message_set_columns,
    decode_message_set,
    spec_entry,
)
from bruce.wire.primitives import parse
from bruce.wire.records import CREATE_TIME, LOG_APPEND_TIME, Record

from .builders import IMPLEMENTATIONS, builders
from .streams import assert_only_malformed, truncations

MAGIC0_GOLDEN = bytes.fromhex(
    "0000000000000000"  # offset 0
    "00000013"  # message size 19
    "e509475c"  # CRC-32 of the 15 bytes below
    "00"  # magic 0
    "00"  # attributes: no compression
    "00000003"  # key length 3
    "6b6579"  # "key"
    "00000002"  # value length 2
    "4444"  # value
)
MAGIC1_GOLDEN = bytes.fromhex(
    "0000000000000000"  # offset 0
    "00000018"  # message size 24
    "2d554aff"  # CRC-32 of the 20 bytes below
    "01"  # magic 1
    "00"  # attributes: no compression, create time
    "0000000000000123"  # timestamp 0x123
    "ffffffff"  # key: null
    "00000002"  # value length 2
    "5555"  # value
)


def test_golden_magic0() -> None:
    assert zlib.crc32(MAGIC0_GOLDEN[16:]) == 0xE509475C
    assert build_message_set([(b"key", b"\x44\x44")], magic=0) == MAGIC0_GOLDEN
    assert decode_message_set(MAGIC0_GOLDEN) == [Record(0, -1, b"key", b"DD", (), CREATE_TIME, 0)]


def test_golden_magic1() -> None:
    assert zlib.crc32(MAGIC1_GOLDEN[16:]) == 0x2D554AFF
    assert build_message_set([(None, b"\x55\x55", 0x123)], magic=1) == MAGIC1_GOLDEN
    assert build_message_set([(None, b"\x55\x55")], magic=1, timestamp=0x123) == MAGIC1_GOLDEN
    assert decode_message_set(MAGIC1_GOLDEN) == [Record(0, 0x123, None, b"UU", (), CREATE_TIME, 1)]


def test_null_versus_empty_is_the_callers_choice() -> None:
    both = [(b"", b""), (None, None)]
    plain = decode_message_set(build_message_set(both, magic=0))
    assert [(r.key, r.value) for r in plain] == [(b"", b""), (None, None)]
    as_null = decode_message_set(build_message_set(both, magic=0, empty_as_null=True))
    assert [(r.key, r.value) for r in as_null] == [(None, None), (None, None)]


def test_overhead() -> None:
    assert len(build_message_set([(b"k", b"vv")], magic=0)) == MESSAGE_OVERHEAD[0] + 3
    assert len(build_message_set([(b"k", b"vv")], magic=1)) == MESSAGE_OVERHEAD[1] + 3
    assert MESSAGE_OVERHEAD[0] == 26  # Bruce's per-message overhead (key + value + 26)


# ---------------------------------------------------------------- fast builder = spec

_field = st.one_of(st.none(), st.binary(max_size=40))
_ts = st.integers(-(2**63), 2**63 - 1)
_messages = st.lists(st.tuples(_field, _field, _ts), max_size=8)


def _spec_build(messages, *, magic: int, empty_as_null: bool, base_offset: int) -> bytes:
    def field(x):
        return None if x is None or (empty_as_null and not x) else x

    entries = [
        spec_entry(base_offset + i, magic, 0, field(k), field(v), ts if magic else -1)
        for i, (k, v, ts) in enumerate(messages)
    ]
    return MESSAGE_SET.build({"entries": entries})


@settings(max_examples=300, deadline=None)
@given(_messages, st.sampled_from([0, 1]), st.booleans(), st.integers(0, 2**40))
def test_fast_builder_equals_the_spec(messages, magic: int, empty_as_null: bool, base_offset: int) -> None:
    fast = build_message_set(messages, magic=magic, empty_as_null=empty_as_null, base_offset=base_offset)
    assert fast == _spec_build(messages, magic=magic, empty_as_null=empty_as_null, base_offset=base_offset)
    parsed = MESSAGE_SET.parse(fast).entries
    assert [e.offset for e in parsed] == [base_offset + i for i in range(len(messages))]


# Layouts that repeat and change (the builder keeps each message's prefix until the key, value size or timestamp
# changes): few keys, values of few sizes, few timestamps, tuples of 2, 3 and 4 fields.
_few_field = st.sampled_from([None, b"", b"k", b"K", b"key"])
_few_value = st.sampled_from([None, b"", b"a", b"b", b"ab", b"xy", b"v" * 30])
_few_ts = st.sampled_from([0, 1, 1_700_000_000_000])
_repeating = st.lists(st.tuples(_few_field, _few_value, _few_ts), max_size=30)


@settings(max_examples=300, deadline=None)
@given(_repeating, st.sampled_from([0, 1]), st.booleans(), st.integers(0, 2**40), st.sampled_from([2, 3, 4]))
def test_fast_builder_equals_the_spec_when_layouts_repeat(
    messages, magic: int, empty_as_null: bool, base_offset: int, width: int
) -> None:
    given_as = [(k, v, ts, None)[:width] for k, v, ts in messages]
    fast = build_message_set(given_as, magic=magic, timestamp=7, empty_as_null=empty_as_null, base_offset=base_offset)
    expected = [(k, v, ts if width > 2 else 7) for k, v, ts in messages]
    assert fast == _spec_build(expected, magic=magic, empty_as_null=empty_as_null, base_offset=base_offset)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@settings(max_examples=300, deadline=None)
@given(
    st.one_of(_repeating, _messages),
    st.sampled_from([0, 1]),
    st.booleans(),
    st.sampled_from([Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4]),
)
def test_column_builder_equals_the_tuple_builder_and_the_spec(
    implementation: str, messages, magic: int, empty_as_null: bool, codec
) -> None:
    """The daemon's encoder (keys, values, timestamps as three lists) gives the bytes the tuple builder gives, and
    without compression the bytes the construct spec builds (the C encoders in use, or the Python builders alone)."""
    keys = [k for k, _, _ in messages]
    values = [v for _, v, _ in messages]
    stamps = [ts for _, _, ts in messages] if magic else None
    with builders(implementation):
        columns = build_message_set_columns(keys, values, stamps, magic=magic, codec=codec, empty_as_null=empty_as_null)
        tuples = build_message_set(messages, magic=magic, codec=codec, empty_as_null=empty_as_null)
    if codec is Codec.NONE:
        assert columns == tuples == _spec_build(messages, magic=magic, empty_as_null=empty_as_null, base_offset=0)
    else:  # gzip output may differ by its header's time: compare what they hold, and the wrapper's framing
        assert decode_message_set(columns) == decode_message_set(tuples)
        assert len(columns) == len(tuples) or codec is Codec.GZIP


def test_column_builder_usage_errors() -> None:
    with pytest.raises(UsageError, match="magic 0 or 1"):
        build_message_set_columns([None], [b"v"], [0], magic=2)
    with pytest.raises(UsageError, match="a timestamp per message"):
        build_message_set_columns([None], [b"v"], None, magic=1)
    with pytest.raises(UsageError, match="as many keys"):
        build_message_set_columns([None, None], [b"v"], None, magic=0)
    with pytest.raises(UsageError, match="zstd"):
        build_message_set_columns([None], [b"v"], None, magic=0, codec=Codec.ZSTD)


def _spec_records(data: bytes) -> list[Record] | MalformedInput | None:
    """What the spec reads from a set, as the decoder's records, or the MalformedInput it raises; None for a set
    with codec bits set (the spec does not model compression)."""
    try:
        entries = parse(MESSAGE_SET, data, "message set").entries
    except MalformedInput as e:
        return e
    records = []
    for e in entries:
        m = e.message.body.value
        if m.attributes & 0x07:
            return None
        timestamp_type = LOG_APPEND_TIME if m.magic == 1 and m.attributes & 0x08 else CREATE_TIME
        timestamp = -1 if m.timestamp is None else m.timestamp
        records.append(Record(e.offset, timestamp, m.key, m.value, (), timestamp_type, m.magic))
    return records


_body_mutation = st.tuples(st.sampled_from(["flip", "insert", "delete"]), st.integers(0, 200), st.integers(1, 255))


def _mutated_entry(entry: bytes, mutations) -> bytes:
    """``entry`` with its message (magic to value) mutated, then re-framed with a correct size and CRC, so that the
    mutations reach the field parser instead of stopping at the checksum."""
    body = entry[16:]
    for kind, pos, arg in mutations:
        pos %= len(body) + 1
        if kind == "flip" and pos < len(body):
            body = body[:pos] + bytes([body[pos] ^ arg]) + body[pos + 1 :]
        elif kind == "insert":
            body = body[:pos] + bytes([arg]) + body[pos:]
        elif kind == "delete":
            body = body[:pos] + body[pos + 1 :]
    return entry[:8] + struct.pack(">iI", len(body) + 4, zlib.crc32(body)) + body


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(_field, _field, _ts), min_size=1, max_size=3),
    st.sampled_from([0, 1]),
    st.lists(_body_mutation, max_size=3),
)
def test_decoder_accepts_and_rejects_what_the_spec_does(messages, magic: int, mutations) -> None:
    entries = [build_message_set([m], magic=magic, base_offset=i) for i, m in enumerate(messages)]
    entries[-1] = _mutated_entry(entries[-1], mutations)
    data = b"".join(entries)
    spec = _spec_records(data)
    if isinstance(spec, MalformedInput):
        with pytest.raises(MalformedInput):
            decode_message_set(data)
    elif spec is not None:
        assert decode_message_set(data) == spec


# ---------------------------------------------------------------- round trips and compression

CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", [0, 1])
@settings(max_examples=40, deadline=None)
@given(messages=st.lists(st.tuples(_field, _field, st.integers(0, 2**41)), min_size=1, max_size=10))
def test_round_trip(codec: Codec, magic: int, messages) -> None:
    records = decode_message_set(build_message_set(messages, magic=magic, codec=codec))
    assert [(r.key, r.value) for r in records] == [(k, v) for k, v, _ in messages]
    assert [r.offset for r in records] == list(range(len(messages)))
    assert [r.timestamp for r in records] == ([ts for *_, ts in messages] if magic else [-1] * len(messages))
    assert {r.magic for r in records} == {magic}


@pytest.mark.parametrize("codec", CODECS[1:])
@pytest.mark.parametrize("magic", [0, 1])
def test_compressed_wrapper_layout(codec: Codec, magic: int) -> None:
    data = build_message_set([(b"a", b"1", 5), (b"b", b"2", 9)], magic=magic, codec=codec, base_offset=0x444)
    (wrapper,) = MESSAGE_SET.parse(data).entries
    body = wrapper.message.body.value
    assert wrapper.offset == 0x445  # the last inner offset
    assert body.attributes == int(codec) and body.key is None
    assert body.timestamp == (9 if magic else None)  # the largest inner timestamp
    inner = build_message_set([(b"a", b"1", 5), (b"b", b"2", 9)], magic=magic)
    assert body.value == compress(codec, inner, legacy_lz4=magic == 0) or codec is Codec.GZIP


def _wrapper(inner: bytes, *, offset: int, magic: int, codec: Codec, attributes_extra: int = 0, ts: int = -1) -> bytes:
    value = compress(codec, inner, legacy_lz4=magic == 0)
    entry = spec_entry(offset, magic, int(codec) | attributes_extra, None, value, ts)
    return MESSAGE_SET.build({"entries": [entry]})


def test_magic1_inner_offsets_are_relative_to_the_wrapper() -> None:
    inner = build_message_set([(None, b"x", 1), (None, b"y", 2), (None, b"z", 3)], magic=1)  # offsets 0, 1, 2
    data = _wrapper(inner, offset=1000, magic=1, codec=Codec.GZIP, ts=3)
    assert [(r.offset, r.value) for r in decode_message_set(data)] == [(998, b"x"), (999, b"y"), (1000, b"z")]


def test_magic1_wrapper_written_with_offset_zero_keeps_inner_offsets() -> None:
    inner = build_message_set([(None, b"x", 1), (None, b"y", 2), (None, b"z", 3)], magic=1)
    data = _wrapper(inner, offset=0, magic=1, codec=Codec.GZIP, ts=3)  # as kafka-python's producer writes it
    assert [r.offset for r in decode_message_set(data)] == [0, 1, 2]


def test_magic0_inner_offsets_are_absolute() -> None:
    inner = build_message_set([(None, b"x"), (None, b"y")], magic=0, base_offset=70)
    data = _wrapper(inner, offset=71, magic=0, codec=Codec.SNAPPY)
    assert [r.offset for r in decode_message_set(data)] == [70, 71]


def test_log_append_time_wrapper_sets_inner_timestamps() -> None:
    inner = build_message_set([(None, b"x", 1), (None, b"y", 2)], magic=1)
    data = _wrapper(inner, offset=1, magic=1, codec=Codec.LZ4, attributes_extra=0x08, ts=0x123)
    records = decode_message_set(data)
    assert [(r.timestamp, r.timestamp_type) for r in records] == [(0x123, LOG_APPEND_TIME)] * 2


def test_raw_snappy_wrapper_as_bruce_wrote_it() -> None:
    inner = build_message_set([(None, b"bruce")], magic=0, empty_as_null=True)
    value = compress(Codec.SNAPPY, inner, snappy_raw=True)
    data = MESSAGE_SET.build({"entries": [spec_entry(0, 0, int(Codec.SNAPPY), None, value)]})
    assert [r.value for r in decode_message_set(data)] == [b"bruce"]


def test_several_wrappers_and_plain_messages_mixed() -> None:
    plain = build_message_set([(None, b"p")], magic=0, base_offset=0)
    wrapped = build_message_set([(None, b"w1"), (None, b"w2")], magic=1, codec=Codec.GZIP, base_offset=1, timestamp=7)
    assert [(r.offset, r.value, r.magic) for r in decode_message_set(plain + wrapped)] == [
        (0, b"p", 0),
        (1, b"w1", 1),
        (2, b"w2", 1),
    ]


# ---------------------------------------------------------------- partial tails and damage


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_a_partial_entry_at_the_end_is_ignored(codec: Codec, magic: int) -> None:
    first = build_message_set([(b"k1", b"v1")], magic=magic, codec=codec, timestamp=1)
    second = build_message_set([(b"k2", b"v2")], magic=magic, codec=codec, timestamp=1, base_offset=1)
    data = first + second
    whole = decode_message_set(data)
    assert [r.value for r in whole] == [b"v1", b"v2"]
    for cut in truncations(data):
        expected = whole[:1] if len(cut) >= len(first) else []
        assert decode_message_set(cut) == expected, len(cut)


def test_short_trailing_bytes_are_a_partial_tail() -> None:
    data = build_message_set([(None, b"v")], magic=0)
    assert decode_message_set(data + b"\x00" * 11) == decode_message_set(data)


def _damaged(data: bytes):
    for i in range(len(data)):
        for flip in (0x01, 0x80, 0xFF):
            yield data[:i] + bytes([data[i] ^ flip]) + data[i + 1 :]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_every_corruption_is_only_ever_malformed(codec: Codec, magic: int) -> None:
    data = build_message_set([(b"0x123", b"0x444", 5), (None, b"v", 6)], magic=magic, codec=codec)
    assert_only_malformed(decode_message_set, _damaged(data))


@pytest.mark.parametrize("magic", [0, 1])
def test_crc_mismatch(magic: int) -> None:
    data = bytearray(build_message_set([(None, b"value")], magic=magic))
    data[-1] ^= 1
    with pytest.raises(MalformedInput) as e:
        decode_message_set(bytes(data))
    assert e.value.reason == "CRC"


def test_unknown_magic_after_a_good_crc() -> None:
    data = MESSAGE_SET.build({"entries": [spec_entry(0, 0, 0, None, b"v")]})
    body = b"\x02" + data[17:]
    forged = data[:12] + struct.pack(">I", zlib.crc32(body)) + body
    with pytest.raises(MalformedInput) as e:
        decode_message_set(forged)
    assert e.value.reason == "MAGIC"


@pytest.mark.parametrize(
    ("why", "inner", "magic", "codec"),
    [
        ("zstd is not a magic-0/1 codec", build_message_set([(None, b"x")], magic=1), 1, Codec.ZSTD),
        ("nested compression", build_message_set([(None, b"x")], magic=1, codec=Codec.GZIP), 1, Codec.GZIP),
        ("magic-0 message in a magic-1 wrapper", build_message_set([(None, b"x")], magic=0), 1, Codec.GZIP),
        ("a partial message inside a wrapper", build_message_set([(None, b"x")], magic=1)[:-1], 1, Codec.GZIP),
        ("stray bytes inside a wrapper", build_message_set([(None, b"x")], magic=1) + b"\x00", 1, Codec.GZIP),
    ],
)
def test_bad_wrappers(why: str, inner: bytes, magic: int, codec: Codec) -> None:
    with pytest.raises(MalformedInput):
        decode_message_set(_wrapper(inner, offset=0, magic=magic, codec=codec))


def test_wrapper_with_a_null_value() -> None:
    data = MESSAGE_SET.build({"entries": [spec_entry(0, 1, int(Codec.GZIP), None, None, 0)]})
    with pytest.raises(MalformedInput, match="null value"):
        decode_message_set(data)


def test_too_small_message_size() -> None:
    with pytest.raises(MalformedInput, match="too small"):
        decode_message_set(struct.pack(">qi", 0, 13) + b"\x00" * 13)


def test_decompression_is_bounded_across_the_whole_set() -> None:
    one = build_message_set([(None, bytes(1000))], magic=1, codec=Codec.GZIP)
    assert len(decode_message_set(one * 3, max_decompressed_size=3 * 1100)) == 3
    with pytest.raises(MalformedInput, match="more than"):
        decode_message_set(one * 3, max_decompressed_size=2 * 1100)


def test_empty_set() -> None:
    assert decode_message_set(b"") == []
    assert build_message_set([], magic=0) == b""


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"magic": 2}, "magic 0 or 1"),
        ({"magic": 0, "codec": Codec.ZSTD}, "zstd"),
        ({"magic": 0, "codec": 9}, "unknown compression codec"),
    ],
)
def test_builder_usage_errors(kwargs: dict, match: str) -> None:
    with pytest.raises(UsageError, match=match):
        build_message_set([(None, b"x")], **kwargs)


def test_builder_rejects_values_out_of_range() -> None:
    with pytest.raises(UsageError):
        build_message_set([(None, b"x", 2**63)], magic=1)
    with pytest.raises(UsageError):
        build_message_set([(None, "text")], magic=0)
