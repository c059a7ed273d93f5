"""Fuzz bruce.wire's C encoders (wire/_speedups.c) against the Python builders.

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
from itertools import repeat

import atheris

with atheris.instrument_imports(include=["bruce.wire"]):
    from bruce.wire import speedups
    from bruce.wire.errors import UsageError
    from bruce.wire.messageset import _build_columns_python
    from bruce.wire.recordbatch import build_record_batch
    from bruce.wire.recordbatch_schema import HEADER_SIZE

EDGES = (0, -1, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 1_700_000_000_000)


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


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
