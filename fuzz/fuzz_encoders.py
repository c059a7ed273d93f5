"""Fuzz bruce.wire's C encoders (wire/_speedups.c, wire/_encode.c) against the Python builders.

The input describes columns (keys, values, timestamps) whose fields may be of the wrong type or out of range,
timestamps near a base or at the edges of int64, a magic, a base offset and the empty-as-null flag. Invariants:
the C encoders raise nothing but ValueError (the input left to Python); whatever they build, the Python builder
builds too, byte for byte: ``record_batch_records`` the records of ``build_record_batch`` (the batch after its
header), ``message_set`` the set of the Python loop. Without the extension (BRUCE_NO_EXTENSIONS=1) only the Python
builders run, which must then raise nothing but UsageError.
Run: ``python fuzz/fuzz_encoders.py fuzz/corpus/encoders -max_total_time=60``.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable
from itertools import repeat
from typing import Any

import atheris

with atheris.instrument_imports(include=["bruce.wire"]):
    from array import array

    from bruce.wire import column_batch, speedups
    from bruce.wire.columns import BinaryColumn
    from bruce.wire.errors import UsageError
    from bruce.wire.messageset import _build_columns_python
    from bruce.wire.recordbatch import build_record_batch, finish_in_place
    from bruce.wire.recordbatch_schema import HEADER_SIZE

EDGES = (0, -1, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 1_700_000_000_000)
INT64_EDGES = [e for e in EDGES if -(2**63) <= e < 2**63]


def _field(fdp: atheris.FuzzedDataProvider) -> object:
    """A key or value: mostly bytes or None, sometimes not (the encoders must agree on those too)."""
    pick = fdp.ConsumeIntInRange(0, 15)
    if pick == 0:
        return None
    if pick == 1:
        return fdp.ConsumeUnicodeNoSurrogates(4)
    if pick == 2:
        return bytearray(fdp.ConsumeBytes(4))
    if pick == 3:
        return memoryview(fdp.ConsumeBytes(4))
    if pick == 4:
        return fdp.ConsumeInt(2)
    return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 300))


def _stamp(fdp: atheris.FuzzedDataProvider, base: int) -> object:
    pick = fdp.ConsumeIntInRange(0, 15)
    if pick == 0:
        return EDGES[fdp.ConsumeIntInRange(0, len(EDGES) - 1)]
    if pick == 1:
        return fdp.ConsumeFloat()
    if pick == 2:
        return fdp.ConsumeBool()  # a bool is an int to Python, not to the C encoders
    return base + fdp.ConsumeIntInRange(-5, 5000)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    empty_as_null = fdp.ConsumeBool()
    magic = fdp.ConsumeIntInRange(0, 2)
    base_offset = EDGES[fdp.ConsumeIntInRange(0, len(EDGES) - 1)] if fdp.ConsumeBool() else fdp.ConsumeInt(4)
    base = EDGES[fdp.ConsumeIntInRange(0, len(EDGES) - 1)] if fdp.ConsumeBool() else fdp.ConsumeInt(6)
    n = fdp.ConsumeIntInRange(0, 12)
    keys = [_field(fdp) for _ in range(n)]
    values = [_field(fdp) for _ in range(n)]
    stamps = [base] + [_stamp(fdp, base) for _ in range(n - 1)] if n else []

    records = [
        ((k or None) if empty_as_null else k, (v or None) if empty_as_null else v, ts, None)
        for k, v, ts in zip(keys, values, stamps, strict=True)
    ]
    try:
        batch: bytes | None = build_record_batch(records)  # type: ignore[arg-type]  # wrong types on purpose
    except UsageError:
        batch = None
    if speedups.record_batch_records is not None:
        try:
            got = speedups.record_batch_records(keys, values, stamps, empty_as_null)  # type: ignore[arg-type]
        except ValueError as e:
            assert type(e) is ValueError, e  # left to Python, nothing else
        else:
            assert batch is not None and got == (batch[HEADER_SIZE:], stamps[0], max(stamps)), (got, batch)  # type: ignore[type-var]

    set_stamps = stamps if magic else None
    try:
        each = set_stamps if set_stamps is not None else repeat(-1)
        plain: bytes | None = _build_columns_python(keys, values, each, magic, empty_as_null, base_offset)  # type: ignore[arg-type]
    except (struct.error, TypeError):  # what the Python builder's caller turns into UsageError
        plain = None
    if speedups.message_set is not None:
        try:
            built = speedups.message_set(keys, values, set_stamps, magic, empty_as_null, base_offset)  # type: ignore[arg-type]
        except ValueError as e:
            assert type(e) is ValueError, e
        else:
            assert magic in (0, 1) and built == plain, (built, plain)
    test_columns(fdp)  # the rest of the input describes columns


def _buffer(fdp: atheris.FuzzedDataProvider, good: bytes) -> bytes:
    """``good`` (a well-formed buffer), or raw bytes of a drawn length."""
    return good if fdp.ConsumeIntInRange(0, 3) else fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 24))


def _column(fdp: atheris.FuzzedDataProvider, count: int) -> BinaryColumn:
    first, wide = fdp.ConsumeIntInRange(0, 3), fdp.ConsumeBool()
    rows = [
        None if fdp.ConsumeIntInRange(0, 3) == 0 else fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 6))
        for _ in range(first + count)
    ]
    data, offsets, bits = bytearray(), [0], bytearray((first + count + 7) // 8)
    for i, v in enumerate(rows):
        data += v or b""
        offsets.append(len(data))
        bits[i >> 3] |= (v is not None) << (i & 7)
    validity = _buffer(fdp, bytes(bits)) if fdp.ConsumeBool() else None
    raw = array("q" if wide else "i", offsets).tobytes()
    return BinaryColumn(count, 0, validity, _buffer(fdp, raw), _buffer(fdp, bytes(data)), first, wide)


def _headers(fdp: atheris.FuzzedDataProvider, count: int) -> column_batch.HeaderColumn:
    first = fdp.ConsumeIntInRange(0, 2)
    n = fdp.ConsumeIntInRange(0, 6)
    ends = sorted(fdp.ConsumeIntInRange(0, n) for _ in range(first + count))
    good = array("i", [0, *ends]).tobytes()
    validity = _buffer(fdp, bytes([fdp.ConsumeIntInRange(0, 255)] * 2)) if fdp.ConsumeBool() else None
    return column_batch.HeaderColumn(count, validity, _buffer(fdp, good), _column(fdp, n), _column(fdp, n), first)


def _outcome(call: Callable[[], Any], allowed: type[Exception]) -> Any:
    try:
        return call()
    except allowed as e:
        return e


def test_columns(fdp: atheris.FuzzedDataProvider) -> None:
    count = fdp.ConsumeIntInRange(0, 6)
    stamps = None
    if fdp.ConsumeBool():
        good = array("q", [fdp.ConsumeIntInRange(-5, 5000) for _ in range(count)]).tobytes()
        stamps = (
            _buffer(fdp, good)
            if fdp.ConsumeBool()
            else array("q", [INT64_EDGES[i % len(INT64_EDGES)] for i in range(count)]).tobytes()
        )
    keys = _column(fdp, count) if fdp.ConsumeBool() else None
    heads = _headers(fdp, count) if fdp.ConsumeBool() else None
    columns = column_batch.ProduceColumns(count, _column(fdp, count), keys, stamps, heads)
    one = None if stamps is not None else EDGES[fdp.ConsumeIntInRange(0, len(EDGES) - 1)]
    start, stop = fdp.ConsumeIntInRange(0, count), fdp.ConsumeIntInRange(0, count)

    sizes = _outcome(lambda: column_batch.column_sizes_python(columns), UsageError)
    built = _outcome(
        lambda: (
            column_batch.build_column_batch_python(columns, start, stop, timestamp=one, codec=0, level=None)
            if start < stop
            else None
        ),
        UsageError,
    )
    murmur = _outcome(lambda: column_batch.murmur2_column_python(columns.values), UsageError)
    if speedups.column_sizes is None or speedups.column_records is None or speedups.murmur2_column is None:
        return
    parts = column_batch._binary_parts(columns.values), column_batch._key_parts(columns.keys)
    heads_in = column_batch._header_parts(columns.headers)
    got = _outcome(lambda: speedups.column_sizes(*parts, heads_in, stamps, count), ValueError)
    if not isinstance(got, ValueError):
        assert not isinstance(sizes, UsageError), (got, sizes)
        assert (list(memoryview(got[0]).cast("q")), *got[1:]) == (
            list(sizes.ends),
            sizes.biggest,
            sizes.min_timestamp,
            sizes.max_timestamp,
        ), (got, sizes)
    if start < stop:
        stamp = one if one is not None else stamps
        records = _outcome(
            lambda: speedups.column_records(*parts, heads_in, stamp, count, start, stop, HEADER_SIZE), ValueError
        )
        if not isinstance(records, ValueError):
            assert not isinstance(built, UsageError), (records, built)
            batch = finish_in_place(records[0], stop - start, 0, records[1], records[2])
            assert bytes(batch) == built
    hashes = _outcome(lambda: speedups.murmur2_column(parts[0]), ValueError)
    if not isinstance(hashes, ValueError):
        assert hashes == murmur, (hashes, murmur)


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
