"""Arrow-layout columns made by hand (no pyarrow): what a writer hands to bruce.wire's column encoder, in every layout
Arrow allows (a slice's first row, int64 offsets, validity bits or none, null slots over bytes, null header lists)."""

from __future__ import annotations

from array import array
from typing import Any

from bruce.wire.column_batch import HeaderColumn, ProduceColumns
from bruce.wire.columns import BinaryColumn


def binary(values: list[bytes | None], *, first: int = 0, wide: bool = False, bits: bool = False, junk: bool = False):
    """``values`` in Arrow's binary layout after ``first`` rows of other values; ``bits``: a validity bitmap even
    without nulls; ``junk``: null slots that cover bytes (Arrow allows it)."""
    rows = [b"before"] * first + values
    data, offsets, valid = bytearray(), [0], bytearray((len(rows) + 7) // 8 + 1)
    for i, v in enumerate(rows):
        if v is None:
            data += b"??" if junk else b""
        else:
            data += v
            valid[i >> 3] |= 1 << (i & 7)
        offsets.append(len(data))
    validity = bytes(valid) if bits or None in values else None
    raw = array("q" if wide else "i", offsets).tobytes()
    return BinaryColumn(len(values), values.count(None), validity, raw, bytes(data), first, wide)


Headers = tuple[tuple[str, bytes | None], ...] | None


def header_column(rows: list[Headers], *, first: int = 0, layout: dict[str, Any]) -> HeaderColumn:
    """Each row's headers (None: a null list) as Arrow's list<struct<key, value>>, after ``first`` rows of others."""
    before: list[Headers] = [(("x", b"y"),)] * first
    offsets, names, values, valid = [0], [], [], bytearray((first + len(rows) + 7) // 8 + 1)
    for i, items in enumerate(before + rows):
        if items is not None:
            valid[i >> 3] |= 1 << (i & 7)
            for name, value in items:
                names.append(name.encode())
                values.append(value)
        elif layout["junk"]:  # a null list over a non-empty segment
            names.append(b"ignored")
            values.append(None)
        offsets.append(len(names))
    validity = bytes(valid) if layout["bits"] or None in rows else None
    keys, vals = binary(names, **layout), binary(values, **layout)
    return HeaderColumn(len(rows), validity, array("i", offsets).tobytes(), keys, vals, first)


def table(
    values: list[bytes | None],
    keys: list[bytes | None] | None = None,
    stamps: list[int] | None = None,
    headers: list[Headers] | None = None,
) -> ProduceColumns:
    """Columns of these rows in the plainest layout."""
    layout = {"first": 0, "wide": False, "bits": False, "junk": False}
    return ProduceColumns(
        len(values),
        binary(values),
        None if keys is None else binary(keys),
        None if stamps is None else array("q", stamps).tobytes(),
        None if headers is None else header_column(headers, layout=layout),
    )
