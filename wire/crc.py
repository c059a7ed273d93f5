"""Checksums: CRC-32 (message sets, magic 0/1) and CRC-32C (RecordBatch v2).

Rules:
- Both take bytes-like data and an optional running ``value`` so a checksum can be computed over several pieces; both
  return an unsigned 32-bit int.
- CRC-32C uses the hardware-accelerated ``crc32c`` package; if it cannot be imported, crcmod's C implementation
  (:func:`crc32c_crcmod`) computes the same function — ``tests/wire/test_crc.py`` proves the two agree. Which one is in
  use is :data:`CRC32C_IMPLEMENTATION`.
- Pure: no I/O.
"""

from __future__ import annotations

import zlib

import crcmod.predefined

__all__ = ["CRC32C_IMPLEMENTATION", "crc32", "crc32c", "crc32c_crcmod"]

Buffer = bytes | bytearray | memoryview


def crc32(data: Buffer, value: int = 0) -> int:
    """CRC-32 (IEEE 802.3, as zlib computes it) of ``data``, continuing from ``value``."""
    return zlib.crc32(data, value)


_crcmod_fun = crcmod.predefined.mkPredefinedCrcFun("crc-32c")


def crc32c_crcmod(data: Buffer, value: int = 0) -> int:
    """CRC-32C (Castagnoli) through crcmod's C extension, continuing from ``value``."""
    crc: int = _crcmod_fun(bytes(data) if isinstance(data, memoryview) else data, value)
    return crc


try:  # hardware CRC-32C (SSE4.2 / ARMv8): crc32c(data, value=0) -> int
    from crc32c import crc32c

    CRC32C_IMPLEMENTATION = "crc32c"
except ImportError:  # pragma: no cover - the fallback itself is tested directly as crc32c_crcmod
    crc32c = crc32c_crcmod  # type: ignore[assignment]  # the same call: crc32c's third parameter is never passed
    CRC32C_IMPLEMENTATION = "crcmod"
