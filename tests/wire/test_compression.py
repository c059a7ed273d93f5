"""Compression codecs: round trips, the exact frames Kafka clients write, KAFKA-1493, bounds, and damaged input."""

from __future__ import annotations

import os
import struct
import zlib

import lz4.frame
import pytest
import snappy
import xxhash
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec

from bruce.wire.compression import Codec, DecompressionBudget, compress, decompress, xxh32
from bruce.wire.errors import MalformedInput, UsageError

from .streams import assert_only_malformed, assert_strict_framing, truncations, with_trailing

CODECS = list(Codec)
COMPRESSING = [c for c in Codec if c is not Codec.NONE]
SAMPLE = os.urandom(3000) + b"bruce " * 20_000  # incompressible head, compressible tail: 123 KB


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("legacy_lz4", [False, True])
@settings(max_examples=40, deadline=None)
@given(data=st.binary(max_size=5000))
def test_round_trip(codec: Codec, legacy_lz4: bool, data: bytes) -> None:
    assert decompress(codec, compress(codec, data, legacy_lz4=legacy_lz4), legacy_lz4=legacy_lz4) == data


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_large(codec: Codec) -> None:
    assert decompress(codec, compress(codec, SAMPLE)) == SAMPLE


def test_codec_numbers_are_the_attribute_bits() -> None:
    assert [int(c) for c in Codec] == [0, 1, 2, 3, 4]


def test_gzip_is_a_gzip_stream_without_timestamp() -> None:
    out = compress(Codec.GZIP, b"payload")
    assert out[:4] == b"\x1f\x8b\x08\x00" and out[4:8] == b"\x00\x00\x00\x00"  # magic, deflate, no flags, mtime 0
    assert zlib.decompress(out, 31) == b"payload"


def test_gzip_reads_concatenated_members() -> None:
    both = compress(Codec.GZIP, b"first ") + compress(Codec.GZIP, b"second")
    assert decompress(Codec.GZIP, both) == b"first second"


def test_snappy_is_xerial_framed_in_32k_blocks() -> None:
    data = bytes(range(256)) * 400  # 102,400 bytes: blocks of 32 KiB, 32 KiB, 32 KiB, 4 KiB
    out = compress(Codec.SNAPPY, data)
    assert out[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    pos, blocks = 16, []
    while pos < len(out):
        (n,) = struct.unpack_from(">i", out, pos)
        blocks.append(snappy.uncompress(out[pos + 4 : pos + 4 + n]))
        pos += 4 + n
    assert [len(b) for b in blocks] == [32768, 32768, 32768, 4096]
    assert b"".join(blocks) == data


def test_snappy_reads_raw_blocks_as_bruce_wrote_them() -> None:
    raw = compress(Codec.SNAPPY, SAMPLE, snappy_raw=True)
    assert raw == snappy.compress(SAMPLE)
    assert decompress(Codec.SNAPPY, raw) == SAMPLE


def test_lz4_frame_header_as_the_java_client_writes() -> None:
    out = compress(Codec.LZ4, b"payload")
    assert out[:4] == b"\x04\x22\x4d\x18"
    assert out[4] == 0x60  # version 01, independent blocks, no block/content checksum, no content size
    assert out[5] == 0x40  # 64 KiB maximum block size
    assert out[6] == (xxhash.xxh32_intdigest(out[4:6]) >> 8) & 0xFF  # correct header checksum


def test_lz4_legacy_frame_has_the_kafka_1493_checksum() -> None:
    out = compress(Codec.LZ4, b"payload", legacy_lz4=True)
    assert out[6] == (xxhash.xxh32_intdigest(out[:6]) >> 8) & 0xFF  # hashes the magic too
    assert out[6] != (xxhash.xxh32_intdigest(out[4:6]) >> 8) & 0xFF
    with pytest.raises(MalformedInput):
        decompress(Codec.LZ4, out)  # a modern reader rejects it
    assert decompress(Codec.LZ4, out, legacy_lz4=True) == b"payload"


def test_lz4_legacy_reader_accepts_correct_frames_too() -> None:
    assert decompress(Codec.LZ4, compress(Codec.LZ4, SAMPLE), legacy_lz4=True) == SAMPLE


def test_lz4_legacy_reader_rejects_a_wrong_checksum() -> None:
    out = bytearray(compress(Codec.LZ4, b"payload"))
    out[6] ^= 0x5A
    with pytest.raises(MalformedInput):
        decompress(Codec.LZ4, bytes(out), legacy_lz4=True)


def test_zstd_reads_concatenated_frames() -> None:
    both = compress(Codec.ZSTD, b"first ") + compress(Codec.ZSTD, b"second")
    assert decompress(Codec.ZSTD, both) == b"first second"


@given(st.binary(max_size=200), st.integers(0, 2**32 - 1))
def test_xxh32_matches_the_reference(data: bytes, seed: int) -> None:
    assert xxh32(data, seed) == xxhash.xxh32_intdigest(data, seed)


# ---------------------------------------------------------------- interop with kafka-python's codecs

_THEIR_ENCODERS = {
    Codec.GZIP: kafka_codec.gzip_encode,
    Codec.SNAPPY: kafka_codec.snappy_encode,
    Codec.LZ4: kafka_codec.lz4_encode,
    Codec.ZSTD: kafka_codec.zstd_encode,
}
_THEIR_DECODERS = {
    Codec.GZIP: kafka_codec.gzip_decode,
    Codec.SNAPPY: kafka_codec.snappy_decode,
    Codec.LZ4: kafka_codec.lz4_decode,
    Codec.ZSTD: kafka_codec.zstd_decode,
}


@pytest.mark.parametrize("codec", COMPRESSING)
def test_kafka_python_reads_ours_and_we_read_theirs(codec: Codec) -> None:
    assert _THEIR_DECODERS[codec](compress(codec, SAMPLE)) == SAMPLE
    assert decompress(codec, _THEIR_ENCODERS[codec](SAMPLE)) == SAMPLE


def test_kafka_python_legacy_lz4_both_ways() -> None:
    assert kafka_codec.lz4_decode_old_kafka(compress(Codec.LZ4, SAMPLE, legacy_lz4=True)) == SAMPLE
    assert decompress(Codec.LZ4, kafka_codec.lz4_encode_old_kafka(SAMPLE), legacy_lz4=True) == SAMPLE


def test_kafka_python_raw_snappy() -> None:
    assert decompress(Codec.SNAPPY, kafka_codec.snappy_encode(SAMPLE, xerial_compatible=False)) == SAMPLE


# ---------------------------------------------------------------- bounds and damaged input


@pytest.mark.parametrize("codec", CODECS)
def test_output_is_bounded(codec: Codec) -> None:
    data = compress(codec, SAMPLE)
    assert decompress(codec, data, max_size=len(SAMPLE)) == SAMPLE
    with pytest.raises(MalformedInput) as e:
        decompress(codec, data, max_size=len(SAMPLE) - 1)
    assert e.value.reason == "DECOMPRESSED_TOO_LARGE"


@pytest.mark.parametrize("codec", COMPRESSING)
def test_a_decompression_bomb_is_rejected(codec: Codec) -> None:
    bomb = compress(codec, bytes(64 << 20))  # 64 MiB of zeros
    with pytest.raises(MalformedInput, match="more than"):
        decompress(codec, bomb, max_size=1 << 20)


def test_zstd_bomb_without_a_declared_size_is_stopped_while_decompressing() -> None:
    bomb = zstandard.ZstdCompressor(write_content_size=False).compress(bytes(256 << 20))
    with pytest.raises(MalformedInput, match="more than"):
        decompress(Codec.ZSTD, bomb, max_size=1 << 20)


def test_zstd_declared_size_is_checked_before_decompressing() -> None:
    frame = zstandard.ZstdCompressor().compress(bytes(1 << 20))
    assert zstandard.frame_content_size(frame) == 1 << 20
    with pytest.raises(MalformedInput, match="more than"):
        decompress(Codec.ZSTD, frame, max_size=1000)


def test_snappy_declared_length_is_checked_before_decompressing() -> None:
    lying = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F]) + b"\x00" * 10  # declares 4 GiB
    with pytest.raises(MalformedInput, match="more than"):
        decompress(Codec.SNAPPY, lying)


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.LZ4, Codec.ZSTD])
@pytest.mark.parametrize("legacy_lz4", [False, True])
def test_framed_codecs_reject_every_truncation_and_trailing_data(codec: Codec, legacy_lz4: bool) -> None:
    data = compress(codec, b"distinctive payload 0x123 " * 40, legacy_lz4=legacy_lz4)
    assert assert_strict_framing(lambda d: decompress(codec, d, legacy_lz4=legacy_lz4), data)


@pytest.mark.parametrize("snappy_raw", [False, True])
def test_snappy_damage_is_only_ever_malformed(snappy_raw: bool) -> None:
    data = compress(Codec.SNAPPY, b"distinctive payload 0x444 " * 2000, snappy_raw=snappy_raw)
    inputs = [*truncations(data), *with_trailing(data)]
    assert_only_malformed(lambda d: decompress(Codec.SNAPPY, d), inputs)
    if snappy_raw:  # a raw block declares its length: every cut is detected
        assert all(_rejects(Codec.SNAPPY, d) for d in truncations(data))


def _rejects(codec: Codec, data: bytes) -> bool:
    try:
        decompress(codec, data)
    except MalformedInput:
        return True
    return False


@pytest.mark.parametrize("codec", COMPRESSING)
@pytest.mark.parametrize("legacy_lz4", [False, True])
@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=300))
def test_garbage_is_only_ever_malformed(codec: Codec, legacy_lz4: bool, data: bytes) -> None:
    assert_only_malformed(lambda d: decompress(codec, d, legacy_lz4=legacy_lz4, max_size=1 << 16), [data])


@pytest.mark.parametrize("codec", COMPRESSING)
def test_every_single_byte_corruption_is_only_ever_malformed(codec: Codec) -> None:
    data = compress(codec, b"0x123 0x444 " * 30)
    damaged = [data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1 :] for i in range(len(data))]
    assert_only_malformed(lambda d: decompress(codec, d, max_size=1 << 16), damaged)


def test_unknown_codec() -> None:
    with pytest.raises(MalformedInput) as e:
        decompress(7, b"x")
    assert e.value.reason == "UNKNOWN_CODEC"
    with pytest.raises(UsageError):
        compress(7, b"x")


def test_lz4_reads_frames_with_linked_blocks() -> None:
    linked = lz4.frame.compress(SAMPLE, block_linked=True)
    assert decompress(Codec.LZ4, linked) == SAMPLE  # other writers' valid frames are read too


def test_a_budget_bounds_several_payloads_together() -> None:
    blob = compress(Codec.ZSTD, bytes(1000))
    budget = DecompressionBudget(2500)
    assert budget.decompress(Codec.ZSTD, blob) == bytes(1000) and budget.remaining == 1500
    assert DecompressionBudget.of(budget) is budget and DecompressionBudget.of(7).remaining == 7
    budget.decompress(Codec.ZSTD, blob)
    with pytest.raises(MalformedInput) as info:
        budget.decompress(Codec.ZSTD, blob)
    assert info.value.reason == "DECOMPRESSED_TOO_LARGE"
