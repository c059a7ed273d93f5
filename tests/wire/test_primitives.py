"""Kafka primitive types: golden bytes, limits, compact forms, varints, tagged fields, error mapping."""

from __future__ import annotations

import construct as c
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bruce.wire.errors import MalformedInput, UsageError
from bruce.wire.primitives import (
    Array,
    Bytes,
    CompactArray,
    CompactBytes,
    CompactNullableArray,
    CompactNullableBytes,
    CompactNullableString,
    CompactString,
    Int32,
    NullableArray,
    NullableBytes,
    NullableString,
    String,
    TaggedFields,
    TaggedStruct,
    UnsignedVarint,
    UnsignedVarlong,
    Varint,
    Varlong,
    build,
    encode_unsigned_varint,
    encode_varint,
    parse,
)

from .streams import assert_strict_framing


def _exact(schema: c.Construct) -> c.Construct:
    return c.FocusedSeq("v", "v" / schema, c.Terminated)


@pytest.mark.parametrize(
    ("schema", "value", "golden"),
    [
        (String, "abc", "0003616263"),
        (NullableString, None, "ffff"),
        (Bytes, b"\x01", "0000000101"),
        (NullableBytes, None, "ffffffff"),
        (CompactString, "abc", "04616263"),  # length + 1
        (CompactNullableString, None, "00"),
        (CompactBytes, b"", "01"),
        (CompactNullableBytes, None, "00"),
        (Array(Int32), [0x123, 0x444], "000000020000012300000444"),
        (NullableArray(Int32), None, "ffffffff"),
        (CompactArray(Int32), [0x123], "0200000123"),
        (CompactNullableArray(Int32), None, "00"),
        (UnsignedVarint, 300, "ac02"),
        (Varint, -1, "01"),
        (Varint, 0x123, "c604"),
        (Varlong, -(2**63), "ffffffffffffffffff01"),
        (TaggedFields, {0: b"\x44", 5: b""}, "020001440500"),
        (TaggedFields, None, "00"),
    ],
)
def test_golden(schema: c.Construct, value, golden: str) -> None:
    assert build(_exact(schema), value, "x").hex() == golden
    assert parse(_exact(schema), bytes.fromhex(golden), "x") == value
    assert_strict_framing(lambda d: parse(_exact(schema), d, "x"), bytes.fromhex(golden))


@given(st.integers(0, 2**32 - 1))
def test_unsigned_varint_round_trip(n: int) -> None:
    assert parse(_exact(UnsignedVarint), encode_unsigned_varint(n), "x") == n


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(n: int) -> None:
    assert parse(_exact(Varlong), encode_varint(n), "x") == n
    assert build(Varlong, n, "x") == encode_varint(n)


@pytest.mark.parametrize(
    ("schema", "data"),
    [
        (UnsignedVarint, "ffffffff7f"),  # 2**35 - 1 does not fit 32 bits
        (UnsignedVarint, "ffffffffff01"),  # six bytes
        (UnsignedVarlong, "ffffffffffffffffffff01"),  # eleven bytes
        (String, "fffe"),  # length -2
        (NullableString, "fffe"),
        (String, "0002ff"),  # runs past the end
        (String, "0001ff"),  # invalid UTF-8
        (Array(Int32), "7fffffff"),  # a huge count, rejected before any element is allocated
        (CompactArray(Int32), "ffffffff07"),
        (CompactString, "00"),  # null where not nullable
        (TaggedFields, "02050005"),  # tags out of order... truncated
        (TaggedFields, "0205000300"),  # tag 3 after tag 5
        (TaggedFields, "01000a00"),  # size 10 with 1 byte left
    ],
)
def test_malformed(schema: c.Construct, data: str) -> None:
    with pytest.raises(MalformedInput):
        parse(_exact(schema), bytes.fromhex(data), "x")


@pytest.mark.parametrize(
    ("schema", "value"),
    [(String, None), (Int32, 2**31), (UnsignedVarint, -1), (Varint, 2**31), (Array(Int32), None), (String, 5)],
)
def test_unencodable_values_are_usage_errors(schema: c.Construct, value) -> None:
    with pytest.raises(UsageError):
        build(schema, value, "x")


def test_tagged_struct_decodes_known_tags_and_keeps_the_rest() -> None:
    schema = TaggedStruct("a" / Int32, tagged={1: ("leader", Int32)})
    data = bytes.fromhex("0000012302010400000444070199")
    parsed = parse(schema, data, "x")
    assert (parsed.a, parsed.leader, parsed.tags) == (0x123, 0x444, {7: b"\x99"})
    assert build(schema, {"a": 0x123, "leader": 0x444, "tags": {7: b"\x99"}}, "x") == data
    assert parse(schema, bytes.fromhex("0000012300"), "x").leader is None
    assert build(schema, {"a": 1, "leader": None, "tags": None}, "x") == bytes.fromhex("0000000100")
    with pytest.raises(MalformedInput):  # a known tag whose bytes do not parse exactly
        parse(schema, bytes.fromhex("000001230101050000044400"), "x")
