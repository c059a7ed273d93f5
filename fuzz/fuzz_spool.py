"""Fuzz spool recovery: any bytes as a segment file give only the documented outcomes (docs/spool.md "Recovery");
and the record encoder: the C one and the Python one agree on any burst.

Byte 0 of the input chooses how the rest is used. Bit 3 set: the rest describes a burst (messages whose fields may
be of the wrong type or out of range, a first sequence near the edges), and ``encode_burst`` (the C encoder where it
is built) must give the bytes ``encode_burst_python`` gives, or the same ``UsageError``. Otherwise: bit 0 = it is
the newest segment (a torn tail may be truncated), bit 1 = put a valid header (base sequence 0x444) in front, bit 2 =
fix up every frame's CRC-32C that fits (so mutations reach the field checks). Invariants: ``scan_segment`` never
raises; records come in increasing sequence order above the base, each one decodes again at its offset, identically
through the construct spec; records and skipped regions are ordered and do not overlap; a torn tail is reported only
for the newest segment and only after the last record; and recovery is stable: scanning the truncated file again
gives the same records and no torn tail.
Run: ``python fuzz/fuzz_spool.py fuzz/corpus/spool -max_total_time=60``.
"""

from __future__ import annotations

import struct
import sys

import atheris

with atheris.instrument_imports(include=["bruce.proxy.spool", "bruce.wire"]):
    from bruce.proxy.spool.format import (
        HEADER_SIZE,
        decode_frame,
        decode_frame_schema,
        encode_burst,
        encode_burst_python,
        encode_header,
    )
    from bruce.proxy.spool.scan import scan_segment
    from bruce.wire.crc import crc32c
    from bruce.wire.errors import UsageError

BASE = 0x444
FIRSTS = (0, 1, 2**63, 2**64 - 9, 2**64 - 2, 2**64 - 1, 2**64, -1)


def _field(fdp: atheris.FuzzedDataProvider, kind: str) -> object:
    """A value for one field: mostly of the right type, sometimes not (the encoders must agree on those too)."""
    pick = fdp.ConsumeIntInRange(0, 15)
    if pick == 0:
        return None
    if pick == 1:
        return fdp.ConsumeUnicodeNoSurrogates(4)
    if pick == 2:
        return bytearray(fdp.ConsumeBytes(4))
    if pick == 3:
        return fdp.ConsumeFloat()
    if kind == "bytes":
        return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 300))
    return fdp.ConsumeIntInRange(-(2**64), 2**64)


def _encode_check(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    first = FIRSTS[fdp.ConsumeIntInRange(0, len(FIRSTS) - 1)] if fdp.ConsumeBool() else fdp.ConsumeIntInRange(0, 2**64)
    burst: list[object] = []
    for _ in range(fdp.ConsumeIntInRange(0, 8)):
        fields = [_field(fdp, kind) for kind in ("bytes", "int", "bytes", "bytes", "int")]
        burst.append(tuple(fields) if fdp.ConsumeIntInRange(0, 9) else fields)
    outcomes = []
    for encode in (encode_burst, encode_burst_python):
        try:
            outcomes.append(encode(first, burst))  # type: ignore[arg-type]  # wrong types on purpose
        except UsageError as e:
            outcomes.append(f"UsageError: {e}")
    assert outcomes[0] == outcomes[1], outcomes


def _fix_crcs(data: bytes) -> bytes:
    out = bytearray(data)
    pos = HEADER_SIZE
    while pos + 8 <= len(out):
        length = struct.unpack_from(">I", out, pos)[0]
        if pos + 8 + length > len(out):
            break
        struct.pack_into(">I", out, pos + 4, crc32c(bytes(out[pos + 8 : pos + 8 + length])))
        pos += 8 + length
    return bytes(out)


def test_one_input(data: bytes) -> None:
    if not data:
        return
    mode, data = data[0], data[1:]
    if mode & 8:
        _encode_check(data)
        return
    last = bool(mode & 1)
    if mode & 2:
        data = encode_header(BASE, 0) + data
    if mode & 4:
        data = _fix_crcs(data)
    scan = scan_segment(data, name_base=BASE, last=last)
    assert scan.base_sequence == BASE
    previous = BASE - 1
    end = HEADER_SIZE
    for record in scan.records:
        assert record.sequence > previous, (record.sequence, previous)
        assert record.offset >= end
        assert decode_frame(data, record.offset) == record
        assert decode_frame_schema(data, record.offset) == record
        previous, end = record.sequence, record.offset + record.size
    starts = {r.offset for r in scan.records}
    for region in scan.corrupt:
        assert region.count >= 0 and HEADER_SIZE <= region.offset < len(data) and region.offset not in starts
    if scan.unreadable:
        assert not scan.records and not scan.corrupt and scan.truncate_at is None
    if scan.truncate_at is not None:
        assert last, "a torn tail in a segment that is not the newest"
        assert scan.truncate_at == 0 or scan.truncate_at >= end
        again = scan_segment(data[: scan.truncate_at], name_base=BASE, last=True)
        assert again.records == scan.records
        assert [(c.offset, c.count) for c in again.corrupt] == [(c.offset, c.count) for c in scan.corrupt]
        assert again.truncate_at is None or again.truncate_at == scan.truncate_at == 0


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
