"""bruce.wire's C encoders (wire/_speedups.c): built, byte-equal to the Python builders, the construct specs and what
kafka-python reads, their CRC-32 equal to zlib's, and never the one that errs (anything not plain goes to Python)."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords

from bruce.wire import messageset, recordbatch, speedups
from bruce.wire.compression import Codec
from bruce.wire.errors import UsageError
from bruce.wire.messageset import MESSAGE_SET, build_message_set, build_message_set_columns, spec_entry
from bruce.wire.recordbatch import build_record_batch, build_record_batch_columns, build_record_batch_with_schema
from bruce.wire.recordbatch_schema import HEADER_SIZE

from .builders import IMPLEMENTATIONS, PURE, builders

# Installing the package builds the extension wherever a C compiler is (every CI machine): its absence is a failure
# here, not a skip. BRUCE_NO_EXTENSIONS=1 runs the suite on the Python builders alone.
if not PURE:
    from bruce.wire import _speedups

needs_c = pytest.mark.skipif(PURE, reason="BRUCE_NO_EXTENSIONS=1: the C encoders are left out on purpose")


def test_the_c_encoders_are_built_and_used() -> None:
    if PURE:
        assert speedups.record_batch_records is None and speedups.message_set is None
        return
    assert recordbatch._records_c is _speedups.record_batch_records
    assert messageset._message_set_c is _speedups.message_set


@pytest.mark.parametrize(
    "setup",
    [
        "import os; os.environ['BRUCE_NO_EXTENSIONS'] = '1'",
        "import sys; sys.modules['bruce.wire._speedups'] = None",  # as if built without a compiler
    ],
)
def test_without_the_extension_the_python_builders_do_it_all(setup: str) -> None:
    code = (
        f"{setup}\n"
        "from bruce.wire import messageset, recordbatch\n"
        "assert messageset._message_set_c is None and recordbatch._records_c is None\n"
        "print(recordbatch.build_record_batch_columns([None], [b'v'], [5]).hex(),"
        " messageset.build_message_set_columns([None], [b'v'], None, magic=0).hex())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "BRUCE_NO_EXTENSIONS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == [
        build_record_batch([(None, b"v", 5, None)]).hex(),
        build_message_set([(None, b"v")], magic=0).hex(),
    ]


def _outcome(build: Callable[[], bytes]) -> bytes | str:
    try:
        return bytes(build())
    except UsageError as e:
        return f"UsageError: {e}"


def _on_each(build: Callable[[], bytes]) -> list[bytes | str]:
    """``build``'s bytes (or its UsageError) on each implementation."""
    out = []
    for kind in IMPLEMENTATIONS:
        with builders(kind):
            out.append(_outcome(build))
    return out


# ---------------------------------------------------------------- CRC-32


@needs_c
@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=300), value=st.integers(0, 2**32 - 1), skip=st.integers(0, 7))
def test_crc32_equals_zlib(data: bytes, value: int, skip: int) -> None:
    assert _speedups.crc32(data) == zlib.crc32(data)
    assert _speedups.crc32(data, value) == zlib.crc32(data, value)
    view = memoryview(data)[skip:]  # not 8-aligned
    assert _speedups.crc32(view) == zlib.crc32(view)


@needs_c
def test_crc32_check_value_and_a_large_buffer() -> None:
    assert _speedups.crc32(b"123456789") == 0xCBF43926  # the published CRC-32 check value
    big = os.urandom((1 << 20) + 3)
    assert _speedups.crc32(big) == zlib.crc32(big)
    assert _speedups.crc32(bytearray(big[5:])) == zlib.crc32(big[5:])


# ---------------------------------------------------------------- RecordBatch v2 from columns

plain_field = (
    st.none()
    | st.binary(max_size=40)
    | st.builds(lambda n: b"v" * n, st.sampled_from([0, 63, 64, 8191, 8192, 16384, 70000]))
)
odd_field = st.sampled_from([bytearray(b"ab"), bytearray(), memoryview(b"mv"), "text", 7, 1.5])
plain_delta = st.integers(-3, 5000) | st.sampled_from([-(2**40), 2**40, 2**62])
extreme_stamp = st.sampled_from([2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 1.5, True, None, "1"])


@st.composite
def columns(draw: st.DrawFn, odd: bool) -> tuple[list[Any], list[Any], list[Any]]:
    """Keys, values and timestamps close to a base (sometimes far, or out of range, or not ints), and with ``odd``
    sometimes keys or values that are not bytes or None."""
    field = plain_field | odd_field if odd else plain_field
    base = draw(st.integers(-(2**62), 2**62) | st.sampled_from([2**63 - 1, -(2**63)]))
    n = draw(st.integers(0, 30))
    keys = draw(st.lists(field, min_size=n, max_size=n))
    values = draw(st.lists(field, min_size=n, max_size=n))
    stamp = st.builds(lambda d: base + d, plain_delta) | (extreme_stamp if odd else st.nothing())
    stamps = draw(st.lists(stamp, min_size=n, max_size=n))
    if stamps:
        stamps[0] = base
    return keys, values, stamps


def _plain(keys: list, values: list, stamps: list) -> bool:
    """Whether the C encoders take these columns: bytes or None, ints whose deltas from the first fit int64."""
    int64 = range(-(2**63), 2**63)
    return all(x is None or type(x) is bytes for x in keys + values) and all(
        type(ts) is int and ts in int64 and ts - stamps[0] in int64 for ts in stamps
    )


def _as_records(keys: list, values: list, stamps: list, empty_as_null: bool) -> list[Any]:
    if empty_as_null:
        keys, values = [k or None for k in keys], [v or None for v in values]
    return [(k, v, ts, None) for k, v, ts in zip(keys, values, stamps, strict=True)]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    cols=columns(odd=False) | columns(odd=True),
    codec=st.sampled_from([Codec.NONE, Codec.NONE, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]),
    empty_as_null=st.booleans(),
)
def test_record_batch_columns_equal_the_tuples_builder_and_the_schema(cols, codec: Codec, empty_as_null: bool) -> None:
    keys, values, stamps = cols
    records = _as_records(keys, values, stamps, empty_as_null)
    each = _on_each(lambda: build_record_batch_columns(keys, values, stamps, codec=codec, empty_as_null=empty_as_null))
    expected = _outcome(lambda: build_record_batch(records, codec=codec))
    assert each == [expected] * len(each)
    if isinstance(expected, bytes):
        assert expected == build_record_batch_with_schema(records, codec=codec)
        if codec is Codec.NONE and not PURE and _plain(keys, values, stamps):  # C writes the batch after its header
            data, base_ts, max_ts = _speedups.record_batch_records(keys, values, stamps, empty_as_null)
            assert (data, base_ts, max_ts) == (expected[HEADER_SIZE:], stamps[0], max(stamps))


@settings(max_examples=100, deadline=None)
@given(cols=columns(odd=False), codec=st.sampled_from([Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4]))
def test_kafka_python_reads_the_record_batch_columns(cols, codec: Codec) -> None:
    keys, values, stamps = cols
    if not stamps or max(stamps) > 2**63 - 1 or min(stamps) < -(2**63):
        return
    for kind in IMPLEMENTATIONS:
        with builders(kind):
            theirs = DefaultRecordBatch(build_record_batch_columns(keys, values, stamps, codec=codec))
        assert theirs.validate_crc()
        got = [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in theirs]
        assert got == [(i, k, v, t, []) for i, (k, v, t) in enumerate(zip(keys, values, stamps, strict=True))]


@needs_c
@pytest.mark.parametrize(
    ("keys", "values", "stamps"),
    [
        ([], [], []),  # no record: Python's error
        ([None], [bytearray(b"v")], [0]),  # bytes-like, not bytes
        ([memoryview(b"k")], [b"v"], [0]),
        ([None], ["v"], [0]),  # not bytes at all
        ([None], [b"v"], [1.5]),  # a timestamp that is not an int
        ([None], [b"v"], [True]),  # a bool
        ([None] * 2, [b"v"] * 2, [2**63 - 1, -2]),  # a delta past int64 (-1: just inside)
        ([None] * 2, [b"v"] * 2, [-(2**63), 1]),
        ([None], [b"v"], [2**63]),  # a timestamp past int64
        ([None], [b"v"] * 2, [0, 0]),  # columns of different lengths
        ([None, None], [b"v"] * 2, [0]),
        ((None for _ in range(2)), [b"v"] * 2, [0, 0]),  # not a list or tuple
        ([None] * 2, [b"v"] * 2, iter([0, 0])),
    ],
)
def test_what_the_record_encoder_does_not_take_goes_to_python(keys: Any, values: Any, stamps: Any) -> None:
    with pytest.raises(ValueError, match="left to the Python builder"):
        _speedups.record_batch_records(keys, values, stamps, False)
    keys, values, stamps = (list(x) if not isinstance(x, list) else x for x in (keys, values, stamps))
    c, python = _on_each(lambda: build_record_batch_columns(keys, values, stamps))
    assert c == python
    if len(keys) == len(values) == len(stamps):
        assert c == _outcome(lambda: build_record_batch(_as_records(keys, values, stamps, False)))


@needs_c
def test_the_record_encoder_takes_the_edges_of_int64() -> None:
    for stamps in ([2**63 - 1, -1], [-(2**63), -1], [0, 2**63 - 1], [2**62, -(2**62)]):  # deltas just inside int64
        data, base_ts, max_ts = _speedups.record_batch_records([None, b"k"], [b"v", None], stamps, False)
        expected = build_record_batch(_as_records([None, b"k"], [b"v", None], stamps, False))
        assert (data, base_ts, max_ts) == (expected[HEADER_SIZE:], stamps[0], max(stamps))


# ---------------------------------------------------------------- message sets (magic 0 and 1)


def _spec_set(keys: list, values: list, stamps: list | None, magic: int, empty_as_null: bool, base: int) -> bytes:
    def field(x: bytes | None) -> bytes | None:
        return None if x is None or (empty_as_null and not x) else x

    entries = [
        spec_entry(base + i, magic, 0, field(k), field(v), stamps[i] if stamps is not None else -1)
        for i, (k, v) in enumerate(zip(keys, values, strict=True))
    ]
    return bytes(MESSAGE_SET.build({"entries": entries}))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    cols=columns(odd=False) | columns(odd=True),
    magic=st.sampled_from([0, 1]),
    empty_as_null=st.booleans(),
    base_offset=st.integers(0, 2**40) | st.sampled_from([2**63 - 30, 2**63 - 1]),
    codec=st.sampled_from([Codec.NONE, Codec.NONE, Codec.SNAPPY, Codec.LZ4]),
)
def test_message_sets_equal_the_python_builder_and_the_spec(
    cols, magic: int, empty_as_null: bool, base_offset: int, codec: Codec
) -> None:
    keys, values, stamps = cols
    messages = list(zip(keys, values, stamps, strict=True))
    each = _on_each(
        lambda: build_message_set(
            messages, magic=magic, codec=codec, empty_as_null=empty_as_null, base_offset=base_offset
        )
    )
    assert each == [each[0]] * len(each)
    by_columns = _on_each(
        lambda: build_message_set_columns(
            keys, values, stamps if magic else None, magic=magic, codec=codec, empty_as_null=empty_as_null
        )
    )
    assert by_columns == [by_columns[0]] * len(by_columns)
    if codec is Codec.NONE and isinstance(each[0], bytes):
        spec = _spec_set(keys, values, stamps if magic else None, magic, empty_as_null, base_offset)
        assert each[0] == spec
        if base_offset == 0:
            assert by_columns[0] == spec


@settings(max_examples=100, deadline=None)
@given(cols=columns(odd=False), magic=st.sampled_from([0, 1]), codec=st.sampled_from([Codec.NONE, Codec.SNAPPY]))
def test_kafka_python_reads_the_message_sets(cols, magic: int, codec: Codec) -> None:
    keys, values, stamps = cols
    if not stamps or any(not -(2**63) <= ts < 2**63 for ts in stamps):  # kafka-python fails on an empty snappy set
        return
    for kind in IMPLEMENTATIONS:
        with builders(kind):
            data = build_message_set_columns(keys, values, stamps if magic else None, magic=magic, codec=codec)
        got = []
        records = MemoryRecords(data)
        while records.has_next():
            for r in records.next_batch():
                assert r.validate_crc()
                got.append((r.offset, r.key, r.value, r.timestamp if magic else -1))
        expected = zip(keys, values, stamps if magic else [-1] * len(keys), strict=True)
        assert got == [(i, k, v, ts) for i, (k, v, ts) in enumerate(expected)]


@needs_c
@pytest.mark.parametrize(
    ("keys", "values", "stamps", "magic", "base_offset"),
    [
        ([None], [bytearray(b"v")], None, 0, 0),  # bytes-like, not bytes
        ([memoryview(b"k")], [b"v"], None, 0, 0),
        ([7], [b"v"], None, 0, 0),  # not bytes at all
        ([None], [b"v"], [1.5], 1, 0),  # a timestamp that is not an int
        ([None], [b"v"], [True], 1, 0),
        ([None], [b"v"], [2**63], 1, 0),  # past int64
        ([None], [b"v"], None, 1, 0),  # magic 1 without timestamps
        ([None], [b"v"], [0], 0, 0),  # magic 0 is given None for timestamps
        ([None], [b"v"], None, 2, 0),  # not a message set's magic
        ([None], [b"v"] * 2, None, 0, 0),  # columns of different lengths
        ([None] * 2, [b"v"] * 2, [0], 1, 0),
        ([None] * 2, [b"v"] * 2, None, 0, 2**63 - 1),  # the second offset past int64
        ([None], [b"v"], None, 0, -(2**63) - 1),
        ((None for _ in range(1)), [b"v"], None, 0, 0),  # not a list or tuple
    ],
)
def test_what_the_message_set_encoder_does_not_take_goes_to_python(
    keys: Any, values: Any, stamps: Any, magic: int, base_offset: int
) -> None:
    with pytest.raises(ValueError, match="left to the Python builder"):
        _speedups.message_set(keys, values, stamps, magic, False, base_offset)
    keys = list(keys)
    c, python = _on_each(lambda: messageset._encode(keys, values, stamps, magic, Codec.NONE, False, base_offset, -1))
    assert c == python


@needs_c
def test_the_encoders_check_their_flags() -> None:
    class Bad:
        def __bool__(self) -> bool:
            raise RuntimeError("no truth")

    with pytest.raises(RuntimeError, match="no truth"):
        _speedups.message_set([None], [b"v"], None, 0, Bad(), 0)
    with pytest.raises(RuntimeError, match="no truth"):
        _speedups.record_batch_records([None], [b"v"], [0], Bad())
    with pytest.raises(TypeError):
        _speedups.message_set([None], [b"v"], None, 0)  # type: ignore[call-arg]
