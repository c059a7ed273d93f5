"""Compression codecs for message sets (magic 0/1) and record batches (magic 2).

Rules:
- :class:`Codec` numbers are the low three bits of a message's or batch's ``attributes``.
- :func:`compress` writes what the Java client writes: a gzip stream; xerial-framed snappy (32 KiB blocks), or a raw
  snappy block with ``snappy_raw=True`` (what Bruce wrote); one LZ4 frame of independent 64 KiB blocks with no content
  size (``legacy_lz4=True`` gives the KAFKA-1493 header checksum that magic-0 readers expect); one zstd frame.
- :func:`decompress` reads: gzip (concatenated members too); snappy both xerial-framed and raw; LZ4 — with
  ``legacy_lz4=True`` (magic 0) the header checksum may be the KAFKA-1493 one *or* the correct one, otherwise it must
  be correct; zstd (concatenated frames too). The whole input must be consumed.
- Output is bounded: more than ``max_size`` decompressed bytes (a decompression bomb) is :class:`MalformedInput`,
  detected before (snappy, zstd with a declared size) or while decompressing, never after allocating it all. A
  :class:`DecompressionBudget` bounds all the payloads of one input together (many small bombs add up).
- Every decode failure is :class:`MalformedInput`; an unknown codec number in the data too. A codec the caller names
  wrongly in :func:`compress` is :class:`UsageError`.
- Pure: no I/O.
"""

from __future__ import annotations

import struct
import zlib
from enum import IntEnum

import lz4.frame
import snappy
import zstandard

from .errors import MalformedInput, UsageError

__all__ = ["MAX_DECOMPRESSED_SIZE", "Codec", "DecompressionBudget", "compress", "decompress", "xxh32"]

MAX_DECOMPRESSED_SIZE = 64 * 1024 * 1024
"""Default bound on one decompressed payload."""


class Codec(IntEnum):
    """Compression codec: the value of ``attributes & 0x07``."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


Buffer = bytes | bytearray | memoryview

# ---------------------------------------------------------------- public entry points


def compress(
    codec: Codec | int,
    data: Buffer,
    *,
    legacy_lz4: bool = False,
    snappy_raw: bool = False,
    level: int | None = None,
) -> bytes:
    """Compress ``data`` with ``codec`` as a Kafka client would (see the module rules). ``level`` is the codec's own
    compression level (None = its default; ignored by snappy)."""
    try:
        codec = Codec(codec)
    except ValueError:
        raise UsageError(f"unknown compression codec {codec!r}") from None
    if codec is Codec.NONE:
        return bytes(data)
    if codec is Codec.GZIP:
        gz = zlib.compressobj(6 if level is None else level, zlib.DEFLATED, 31)  # wbits 31: gzip header, mtime 0
        return gz.compress(data) + gz.flush()
    if codec is Codec.SNAPPY:
        return snappy.compress(data) if snappy_raw else _xerial_encode(data)
    if codec is Codec.LZ4:
        return _lz4_encode(data, legacy=legacy_lz4, level=level)
    return zstandard.ZstdCompressor(level=3 if level is None else level).compress(data)


def decompress(
    codec: Codec | int,
    data: Buffer,
    *,
    legacy_lz4: bool = False,
    max_size: int = MAX_DECOMPRESSED_SIZE,
) -> bytes:
    """Decompress ``data`` written with ``codec``: at most ``max_size`` bytes out, else :class:`MalformedInput`."""
    try:
        codec = Codec(codec)
    except ValueError:
        raise MalformedInput(f"unknown compression codec {codec!r}", reason="UNKNOWN_CODEC") from None
    if codec is Codec.NONE:
        if len(data) > max_size:
            raise _too_big(codec, max_size)
        return bytes(data)
    data = bytes(data)
    try:
        if codec is Codec.GZIP:
            return _gzip_decode(data, max_size)
        if codec is Codec.SNAPPY:
            return _snappy_decode(data, max_size)
        if codec is Codec.LZ4:
            return _lz4_decode(data, max_size, legacy=legacy_lz4)
        return _zstd_decode(data, max_size)
    except MalformedInput:
        raise
    except Exception as e:  # any codec library failure on peer data is malformed input
        raise MalformedInput(f"corrupt {codec.name.lower()} data: {e}", reason="CORRUPT_COMPRESSED_DATA") from None


class DecompressionBudget:
    """The bytes that decompression may still produce for one input (a message set, a Fetch response's records):
    every compressed payload in it draws from the same budget."""

    __slots__ = ("remaining",)

    def __init__(self, limit: int) -> None:
        self.remaining = limit

    @classmethod
    def of(cls, limit: int | DecompressionBudget) -> DecompressionBudget:
        """``limit`` itself if it is a budget (shared with the caller), else a new budget of ``limit`` bytes."""
        return limit if isinstance(limit, DecompressionBudget) else cls(limit)

    def decompress(self, codec: Codec | int, data: Buffer, *, legacy_lz4: bool = False) -> bytes:
        """:func:`decompress` bounded by what remains; the output is taken from the budget."""
        out = decompress(codec, data, legacy_lz4=legacy_lz4, max_size=self.remaining)
        self.remaining -= len(out)
        return out


def _too_big(codec: Codec, max_size: int) -> MalformedInput:
    return MalformedInput(
        f"{codec.name.lower()} data decompresses to more than {max_size} bytes", reason="DECOMPRESSED_TOO_LARGE"
    )


def _corrupt(codec: Codec, what: str) -> MalformedInput:
    return MalformedInput(f"corrupt {codec.name.lower()} data: {what}", reason="CORRUPT_COMPRESSED_DATA")


# ---------------------------------------------------------------- gzip


def _gzip_decode(data: bytes, max_size: int) -> bytes:
    out = bytearray()
    while True:
        d = zlib.decompressobj(31)
        out += d.decompress(data, max_size + 1 - len(out))
        if len(out) > max_size:
            raise _too_big(Codec.GZIP, max_size)
        if not d.eof:
            if d.unconsumed_tail:
                raise _too_big(Codec.GZIP, max_size)  # output stopped at the bound with input left over
            raise _corrupt(Codec.GZIP, "truncated stream")
        data = d.unused_data
        if not data:
            return bytes(out)


# ---------------------------------------------------------------- snappy

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)  # format version 1, minimum compatible version 1
_XERIAL_BLOCK = 32 * 1024  # uncompressed bytes per block, as xerial's SnappyOutputStream (the Java client)
_INT32 = struct.Struct(">i")


def _xerial_encode(data: Buffer) -> bytes:
    view = memoryview(data)
    parts = [_XERIAL_HEADER]
    for i in range(0, len(view), _XERIAL_BLOCK):
        block = snappy.compress(bytes(view[i : i + _XERIAL_BLOCK]))
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_decode(data: bytes, max_size: int) -> bytes:
    if len(data) >= 16 and data.startswith(_XERIAL_MAGIC):
        # The version fields are not checked: some writers get their byte order wrong, and v1 is the only framing.
        out = []
        total = 0
        pos = 16
        while pos < len(data):
            if pos + 4 > len(data):
                raise _corrupt(Codec.SNAPPY, "truncated xerial block length")
            (n,) = _INT32.unpack_from(data, pos)
            pos += 4
            if n <= 0 or pos + n > len(data):
                raise _corrupt(Codec.SNAPPY, f"xerial block length {n} does not fit the remaining bytes")
            block = data[pos : pos + n]
            pos += n
            total += _snappy_raw_length(block)
            if total > max_size:
                raise _too_big(Codec.SNAPPY, max_size)
            out.append(snappy.uncompress(block))
        return b"".join(out)
    if _snappy_raw_length(data) > max_size:
        raise _too_big(Codec.SNAPPY, max_size)
    whole: bytes = snappy.uncompress(data)
    return whole


def _snappy_raw_length(block: bytes) -> int:
    """The uncompressed length a raw snappy block declares (its varint preamble), read before decompressing."""
    result = 0
    for i in range(min(5, len(block))):
        b = block[i]
        result |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            return result
    raise _corrupt(Codec.SNAPPY, "bad length preamble")


# ---------------------------------------------------------------- lz4

_LZ4_MAGIC = b"\x04\x22\x4d\x18"


def _lz4_encode(data: Buffer, *, legacy: bool, level: int | None) -> bytes:
    frame: bytes = lz4.frame.compress(
        data,
        compression_level=0 if level is None else level,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
        block_linked=False,  # Kafka's readers before 0.10 cannot read dependent blocks
        content_checksum=False,
        store_size=False,  # nor a content size
    )
    if not legacy:
        return frame
    # Header: magic(4) FLG BD HC. KAFKA-1493: the HC byte hashes the magic too.
    return frame[:6] + bytes([(xxh32(frame[:6]) >> 8) & 0xFF]) + frame[7:]


def _lz4_header_length(data: bytes) -> int:
    if len(data) < 7 or not data.startswith(_LZ4_MAGIC):
        raise _corrupt(Codec.LZ4, "no LZ4 frame header")
    flg = data[4]
    n = 7 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)  # + content size, + dictionary id
    if len(data) < n:
        raise _corrupt(Codec.LZ4, "truncated frame header")
    return n


def _lz4_decode(data: bytes, max_size: int, *, legacy: bool) -> bytes:
    if legacy:
        n = _lz4_header_length(data)
        correct = (xxh32(data[4 : n - 1]) >> 8) & 0xFF
        broken = (xxh32(data[: n - 1]) >> 8) & 0xFF
        if data[n - 1] not in (correct, broken):
            raise _corrupt(Codec.LZ4, "bad frame header checksum")
        data = data[: n - 1] + bytes([correct]) + data[n:]
    d = lz4.frame.LZ4FrameDecompressor()
    out: bytes = d.decompress(data, max_length=max_size + 1)
    if len(out) > max_size or not d.needs_input:
        raise _too_big(Codec.LZ4, max_size)
    if not d.eof:
        raise _corrupt(Codec.LZ4, "truncated frame")
    if d.unused_data:
        raise _corrupt(Codec.LZ4, f"{len(d.unused_data)} bytes after the frame")
    return out


# xxHash32, for LZ4 frame header checksums (a few bytes each; lz4 does not expose it).
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 of ``data`` (pure Python: meant for the few bytes of an LZ4 frame header)."""
    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while pos + 16 <= n:
            for i in range(4):
                lane = int.from_bytes(data[pos : pos + 4], "little")
                v[i] = (_rotl((v[i] + lane * _P2) & _M32, 13) * _P1) & _M32
                pos += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        h = (_rotl((h + int.from_bytes(data[pos : pos + 4], "little") * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h = ((h ^ (h >> 15)) * _P2) & _M32
    h = ((h ^ (h >> 13)) * _P3) & _M32
    return h ^ (h >> 16)


# ---------------------------------------------------------------- zstd

_ZSTD = zstandard.ZstdDecompressor()
_ZSTD_MAX_RATIO = 65536  # a zstd block of a few bytes expands to at most 128 KiB


def _zstd_decode(data: bytes, max_size: int) -> bytes:
    out = bytearray()
    while True:
        declared = zstandard.frame_content_size(data)
        if declared > max_size - len(out):
            raise _too_big(Codec.ZSTD, max_size)
        d = _ZSTD.decompressobj()
        pos = 0
        # Feed the input in pieces small enough that one piece cannot expand far past the bound.
        while pos < len(data) and not d.eof:
            step = max(64, (max_size - len(out)) // _ZSTD_MAX_RATIO)
            out += d.decompress(data[pos : pos + step])
            pos += step
            if len(out) > max_size:
                raise _too_big(Codec.ZSTD, max_size)
        if not d.eof:
            raise _corrupt(Codec.ZSTD, "truncated frame")
        data = d.unused_data + data[pos:]
        if not data:
            return bytes(out)
