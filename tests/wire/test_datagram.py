"""Bruce's input datagrams: golden bytes, Bruce's validation order, fast parser = construct spec, builders."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bruce.wire.datagram import (
    DATAGRAM,
    OVERHEAD,
    Datagram,
    DatagramKind,
    any_partition_layout,
    build_any_partition,
    build_datagram_schema,
    build_old_v0,
    build_partition_key,
    datagram_size,
    parse_datagram,
    parse_datagram_schema,
)
from bruce.wire.errors import MalformedInput, UnsupportedApiKey, UnsupportedVersion, UsageError

from .streams import assert_strict_framing

ANY = DatagramKind.ANY_PARTITION
PKEY = DatagramKind.PARTITION_KEY
OLD = DatagramKind.OLD_V0

# ---------------------------------------------------------------- golden bytes

ANY_PARTITION_GOLDEN = bytes.fromhex(
    "00000026"  # Size: 38 = 28 + topic 5 + key 3 + value 2
    "0100"  # ApiKey 256
    "0000"  # ApiVersion 0
    "0000"  # Flags 0
    "0005"  # TopicSize 5
    "746f706963"  # "topic"
    "0000000000000123"  # Timestamp 0x123
    "00000003"  # KeySize 3
    "6b6579"  # "key"
    "00000002"  # ValueSize 2
    "4444"  # value 0x44 0x44
)
PARTITION_KEY_GOLDEN = bytes.fromhex(
    "00000023"  # Size: 35 = 32 + topic 1 + key 0 + value 2
    "0101"  # ApiKey 257
    "0000"  # ApiVersion 0
    "0000"  # Flags 0
    "00000444"  # PartitionKey 0x444
    "0001"  # TopicSize 1
    "74"  # "t"
    "0000000000000123"  # Timestamp 0x123
    "00000000"  # KeySize 0 (empty key)
    "00000002"  # ValueSize 2
    "5555"  # value
)
OLD_V0_GOLDEN = bytes.fromhex(
    "00000018"  # Size: 24 = 18 + topic 3 + value 3
    "00"  # legacy Version 0
    "0000000000000123"  # Timestamp 0x123
    "03"  # TopicSize 3 (int8)
    "616263"  # "abc"
    "00000003"  # ValueSize 3
    "666666"  # value
)


def test_any_partition_golden() -> None:
    assert build_any_partition("topic", b"\x44\x44", b"key", timestamp=0x123) == ANY_PARTITION_GOLDEN
    assert parse_datagram(ANY_PARTITION_GOLDEN) == Datagram(ANY, b"topic", 0x123, b"key", b"\x44\x44", None)


def test_partition_key_golden() -> None:
    built = build_partition_key(b"t", b"\x55\x55", partition_key=0x444, timestamp=0x123)
    assert built == PARTITION_KEY_GOLDEN
    assert parse_datagram(PARTITION_KEY_GOLDEN) == Datagram(PKEY, b"t", 0x123, b"", b"\x55\x55", 0x444)


def test_old_v0_golden() -> None:
    assert build_old_v0("abc", b"fff", timestamp=0x123) == OLD_V0_GOLDEN
    assert parse_datagram(OLD_V0_GOLDEN) == Datagram(OLD, b"abc", 0x123, b"", b"fff", None)


def test_datagram_fields_by_name() -> None:
    d = parse_datagram(PARTITION_KEY_GOLDEN)
    assert (d.kind, d.topic, d.timestamp, d.key, d.value, d.partition_key) == (PKEY, b"t", 0x123, b"", b"UU", 0x444)


# ---------------------------------------------------------------- Bruce's validation order


def _dg(*fields: tuple[str, int] | bytes, size: int | None = None) -> bytes:
    """A datagram from (struct format, value) pairs and raw bytes, Size filled in unless given."""
    body = b"".join(f if isinstance(f, bytes) else struct.pack(">" + f[0], f[1]) for f in fields)
    return struct.pack(">i", len(body) + 4 if size is None else size) + body


MALFORMED = "malformed"
CASES = [
    # 1. fewer than 8 bytes, whatever they say
    ("empty", b"", MALFORMED),
    ("7 bytes", _dg(("h", 256), b"\x00"), MALFORMED),
    ("7 bytes of unsupported legacy version", _dg(b"\x05\x00\x00"), MALFORMED),
    # 2. Size wrong: checked before the API key
    ("size one short", _dg(("h", 999), ("h", 0), b"\x00" * 30, size=37), MALFORMED),
    ("size one long", _dg(("h", 999), ("h", 0), b"\x00" * 30, size=39), MALFORMED),
    ("size negative", _dg(("h", 256), ("h", 0), size=-8), MALFORMED),
    ("size mismatch beats a legacy version", _dg(b"\x07" + b"\x00" * 9, size=9), MALFORMED),
    # 3. legacy path: byte 4 is a version
    ("legacy version 5", _dg(b"\x05\x00\x00\x00"), UnsupportedVersion(5)),
    ("legacy version -1 (0xff)", _dg(b"\xff" + b"\x00" * 20), UnsupportedVersion(-1)),
    ("api key 0x0200 is legacy version 2", _dg(("h", 0x0200), ("h", 0)), UnsupportedVersion(2)),
    # 4. API keys 0x01xx other than 256/257
    ("api key 258", _dg(("h", 258), ("h", 0)), UnsupportedApiKey(258)),
    ("api key 511 beats a bad version", _dg(("h", 511), ("h", 9)), UnsupportedApiKey(511)),
    # 5. API version
    ("AnyPartition v1", _dg(("h", 256), ("h", 1), b"garbage"), UnsupportedVersion(1, api_key=256)),
    ("PartitionKey v-1", _dg(("h", 257), ("h", -1)), UnsupportedVersion(-1, api_key=257)),
    # 6. fields
    ("flags not 0", ANY_PARTITION_GOLDEN[:9] + b"\x01" + ANY_PARTITION_GOLDEN[10:], MALFORMED),
    ("topic size 0", _dg(("h", 256), ("h", 0), ("h", 0), ("h", 0), ("q", 1), ("i", 0), ("i", 0)), MALFORMED),
    ("topic size -1", _dg(("h", 256), ("h", 0), ("h", 0), ("h", -1), ("q", 1), ("i", 0), ("i", 0)), MALFORMED),
    ("topic too long", _dg(("h", 256), ("h", 0), ("h", 0), ("h", 99), b"t", ("q", 1), ("i", 0), ("i", 0)), MALFORMED),
    ("key size -1", _dg(("h", 256), ("h", 0), ("h", 0), ("h", 1), b"t", ("q", 1), ("i", -1), ("i", 0)), MALFORMED),
    ("key too long", _dg(("h", 256), ("h", 0), ("h", 0), ("h", 1), b"t", ("q", 1), ("i", 9), ("i", 0)), MALFORMED),
    ("value size -1", _dg(("h", 256), ("h", 0), ("h", 0), ("h", 1), b"t", ("q", 1), ("i", 0), ("i", -1)), MALFORMED),
    (
        "value short",
        _dg(("h", 256), ("h", 0), ("h", 0), ("h", 1), b"t", ("q", 1), ("i", 0), ("i", 3), b"vv"),
        MALFORMED,
    ),
    (
        "trailing byte",
        _dg(("h", 256), ("h", 0), ("h", 0), ("h", 1), b"t", ("q", 1), ("i", 0), ("i", 0), b"x"),
        MALFORMED,
    ),
    (
        "pkey flags",
        _dg(("h", 257), ("h", 0), ("h", 1), ("i", 5), ("h", 1), b"t", ("q", 1), ("i", 0), ("i", 0)),
        MALFORMED,
    ),
    # 7. legacy old v0
    ("old v0 too short", _dg(b"\x00" + b"\x00" * 8), MALFORMED),
    ("old v0 topic size -1", _dg(b"\x00", ("q", 1), ("b", -1), ("i", 0)), MALFORMED),
    ("old v0 topic too long", _dg(b"\x00", ("q", 1), ("b", 5), b"abc", ("i", 0)), MALFORMED),
    ("old v0 value size -1", _dg(b"\x00", ("q", 1), ("b", 1), b"t", ("i", -1)), MALFORMED),
    ("old v0 trailing", _dg(b"\x00", ("q", 1), ("b", 1), b"t", ("i", 1), b"vv"), MALFORMED),
    # valid edge cases
    (
        "empty key and value",
        _dg(("h", 256), ("h", 0), ("h", 0), ("h", 1), b"t", ("q", -5), ("i", 0), ("i", 0)),
        Datagram(ANY, b"t", -5, b"", b""),
    ),
    ("old v0 empty topic", _dg(b"\x00", ("q", 7), ("b", 0), ("i", 1), b"v"), Datagram(OLD, b"", 7, b"", b"v")),
    (
        "negative partition key",
        _dg(("h", 257), ("h", 0), ("h", 0), ("i", -2), ("h", 1), b"t", ("q", 1), ("i", 0), ("i", 0)),
        Datagram(PKEY, b"t", 1, b"", b"", -2),
    ),
]


def _outcome(parse, data: bytes):
    try:
        return parse(data)
    except (UnsupportedApiKey, UnsupportedVersion) as e:
        return (type(e).__name__, e.reason, getattr(e, "api_key", None), getattr(e, "version", None))
    except MalformedInput as e:
        assert type(e) is MalformedInput and e.reason == "MALFORMED"
        return MALFORMED


def _expected(expected):
    if isinstance(expected, (UnsupportedApiKey, UnsupportedVersion)):
        return (type(expected).__name__, expected.reason, expected.api_key, getattr(expected, "version", None))
    return expected


@pytest.mark.parametrize(("name", "data", "expected"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("parse", [parse_datagram, parse_datagram_schema], ids=["fast", "schema"])
def test_validation_order_and_outcome(parse, name: str, data: bytes, expected) -> None:
    assert _outcome(parse, data) == _expected(expected)


def test_unsupported_errors_carry_their_reason() -> None:
    with pytest.raises(UnsupportedApiKey) as key:
        parse_datagram(_dg(("h", 300), ("h", 0)))
    assert (key.value.reason, key.value.api_key) == ("API_KEY", 300)
    with pytest.raises(UnsupportedVersion) as ver:
        parse_datagram(_dg(("h", 256), ("h", 3)))
    assert (ver.value.reason, ver.value.version, ver.value.api_key) == ("VERSION", 3, 256)


# ---------------------------------------------------------------- fast parser = spec (differential)

_topics = st.binary(min_size=1, max_size=40)
_small = st.binary(max_size=60)
_ts = st.integers(-(2**63), 2**63 - 1)


@st.composite
def valid_datagrams(draw) -> bytes:
    kind = draw(st.sampled_from(list(DatagramKind)))
    if kind is OLD:
        return build_old_v0(draw(st.binary(max_size=127)), draw(_small), timestamp=draw(_ts))
    if kind is ANY:
        return build_any_partition(draw(_topics), draw(_small), draw(_small), timestamp=draw(_ts))
    pkey = draw(st.integers(-(2**31), 2**31 - 1))
    return build_partition_key(draw(_topics), draw(_small), draw(_small), partition_key=pkey, timestamp=draw(_ts))


@st.composite
def mutated_datagrams(draw) -> bytes:
    """Valid datagrams with bytes overwritten, inserted, deleted or a size field rewritten."""
    data = bytearray(draw(valid_datagrams()))
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["set", "insert", "delete", "size", "truncate"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "set" and data:
            data[pos] = draw(st.integers(0, 255))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=4))
        elif op == "delete" and data:
            del data[pos]
        elif op == "size" and len(data) >= 4:
            data[:4] = struct.pack(">i", len(data))
        elif op == "truncate":
            del data[pos:]
    return bytes(data)


@settings(max_examples=600, deadline=None)
@given(st.one_of(valid_datagrams(), mutated_datagrams(), st.binary(max_size=80)))
def test_fast_parser_equals_the_spec(data: bytes) -> None:
    assert _outcome(parse_datagram, data) == _outcome(parse_datagram_schema, data)


@settings(max_examples=300, deadline=None)
@given(valid_datagrams())
def test_valid_datagrams_parse_and_rebuild_identically(data: bytes) -> None:
    parsed = parse_datagram(data)
    assert build_datagram_schema(parsed) == data
    assert datagram_size(parsed.kind, len(parsed.topic), len(parsed.key), len(parsed.value)) == len(data)


@pytest.mark.parametrize("data", [ANY_PARTITION_GOLDEN, PARTITION_KEY_GOLDEN, OLD_V0_GOLDEN])
def test_every_truncation_and_trailing_byte_is_malformed(data: bytes) -> None:
    assert assert_strict_framing(parse_datagram, data) == parse_datagram_schema(data)
    assert assert_strict_framing(parse_datagram_schema, data) == parse_datagram(data)


def test_parser_accepts_any_bytes_like() -> None:
    assert parse_datagram(bytearray(ANY_PARTITION_GOLDEN)) == parse_datagram(memoryview(ANY_PARTITION_GOLDEN))


# ---------------------------------------------------------------- layouts = parse_datagram


def _by_layout(learned: bytes, data: bytes):
    """``data`` parsed by the layout of ``learned`` as the daemon's intake does, or None where it would fall back."""
    parsed = parse_datagram(learned)
    prefix, unpack, key_size, value_size = any_partition_layout(learned, len(parsed.topic), len(parsed.key))
    if len(data) != len(learned) or not data.startswith(prefix):
        return None
    timestamp, ks, key, vs, value = unpack(data)
    if ks != key_size or vs != value_size:
        return None
    return Datagram(ANY, prefix[12:], timestamp, key, value, None)


@st.composite
def same_length_variants(draw) -> tuple[bytes, bytes]:
    """A valid AnyPartition datagram and another of the same length: bytes overwritten, or another valid one."""
    learned = build_any_partition(draw(_topics), draw(_small), draw(_small), timestamp=draw(_ts))
    if draw(st.booleans()):
        data = bytearray(learned)
        for _ in range(draw(st.integers(1, 4))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        return learned, bytes(data)
    topic, key, value = draw(st.sampled_from([b"t", b"other"])), draw(_small), draw(_small)
    size = len(learned) - 28 - len(topic) - len(key)
    value = (value * (size // max(len(value), 1) + 1))[:size] if size > 0 else b""
    data = build_any_partition(topic, value, key, timestamp=draw(_ts)) if size >= 0 else learned
    return learned, data


@settings(max_examples=600, deadline=None)
@given(same_length_variants())
def test_a_layout_accepts_only_what_parse_datagram_parses_the_same(pair: tuple[bytes, bytes]) -> None:
    learned, data = pair
    assert _by_layout(learned, learned) == parse_datagram(learned)
    by_layout = _by_layout(learned, data)
    if by_layout is not None:
        assert by_layout == _outcome(parse_datagram, data)


def test_a_layout_parses_every_datagram_of_its_shape() -> None:
    learned = build_any_partition("clicks", b"v" * 20, key=b"k1", timestamp=5)
    for i in range(50):
        data = build_any_partition("clicks", b"%020d" % i, key=b"k%d" % (i % 10), timestamp=-i)
        assert (
            _by_layout(learned, data)
            == parse_datagram(data)
            == (ANY, b"clicks", -i, b"k%d" % (i % 10), b"%020d" % i, None)
        )
    assert _by_layout(learned, build_any_partition("clickz", b"v" * 20, key=b"k1", timestamp=5)) is None
    assert _by_layout(learned, build_any_partition("clicks", b"v" * 21, key=b"k", timestamp=5)) is None


# ---------------------------------------------------------------- builders


@settings(max_examples=200, deadline=None)
@given(topic=_topics, key=_small, value=_small, ts=_ts, pkey=st.integers(-(2**31), 2**31 - 1))
def test_builders_equal_the_spec(topic: bytes, key: bytes, value: bytes, ts: int, pkey: int) -> None:
    any_dg = build_any_partition(topic, value, key, timestamp=ts)
    assert any_dg == build_datagram_schema(Datagram(ANY, topic, ts, key, value))
    pkey_dg = build_partition_key(topic, value, key, partition_key=pkey, timestamp=ts)
    assert pkey_dg == build_datagram_schema(Datagram(PKEY, topic, ts, key, value, pkey))
    old = build_old_v0(topic[:127], value, timestamp=ts)
    assert old == build_datagram_schema(Datagram(OLD, topic[:127], ts, b"", value))
    assert len(any_dg) == datagram_size(ANY, len(topic), len(key), len(value))
    assert len(pkey_dg) == datagram_size(PKEY, len(topic), len(key), len(value))
    assert len(old) == datagram_size(OLD, len(topic[:127]), 0, len(value))


def test_overheads() -> None:
    assert OVERHEAD == {ANY: 28, PKEY: 32, OLD: 18}
    with pytest.raises(UsageError):
        datagram_size(OLD, 1, 1, 1)


def test_topic_limits() -> None:
    assert parse_datagram(build_any_partition(b"t" * 32767, b"v", timestamp=0)).topic == b"t" * 32767
    with pytest.raises(UsageError, match="longer than 32767"):
        build_any_partition(b"t" * 32768, b"v", timestamp=0)
    with pytest.raises(UsageError, match="empty"):
        build_partition_key("", b"v", partition_key=1, timestamp=0)
    with pytest.raises(UsageError, match="longer than 127"):
        build_old_v0(b"t" * 128, b"v", timestamp=0)
    assert parse_datagram(build_any_partition("tópico", b"v", timestamp=0)).topic == "tópico".encode()


class _Huge(bytes):
    """Claims 2 GiB without holding it: the size check must come before any copying."""

    def __len__(self) -> int:
        return 2**31


def test_total_size_limit() -> None:
    with pytest.raises(UsageError, match="larger than 2147483647"):
        build_any_partition("t", _Huge(), timestamp=0)
    with pytest.raises(UsageError, match="larger than"):
        build_old_v0("t", _Huge(), timestamp=0)


def test_integer_ranges() -> None:
    with pytest.raises(UsageError, match="32 bits"):
        build_partition_key("t", b"", partition_key=2**31, timestamp=0)
    with pytest.raises(UsageError, match="64 bits"):
        build_any_partition("t", b"", timestamp=2**63)


def test_schema_is_a_construct_struct() -> None:
    parsed = DATAGRAM.parse(ANY_PARTITION_GOLDEN)
    assert parsed.datagram.body.api_key == 256 and parsed.datagram.body.message.topic == b"topic"
