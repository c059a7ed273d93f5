"""CRC-32 and CRC-32C: standard check values, continuation, and the two CRC-32C implementations agree."""

from __future__ import annotations

import importlib
import sys
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

import bruce.wire.crc as crc_module
from bruce.wire.crc import CRC32C_IMPLEMENTATION, crc32, crc32c, crc32c_crcmod

CHECK = b"123456789"


def test_check_values() -> None:
    assert crc32(CHECK) == 0xCBF43926
    assert crc32c(CHECK) == 0xE3069283
    assert crc32c_crcmod(CHECK) == 0xE3069283
    assert crc32c(b"") == crc32c_crcmod(b"") == 0


def test_the_hardware_implementation_is_in_use() -> None:
    assert CRC32C_IMPLEMENTATION == "crc32c"


@given(st.binary(max_size=4096), st.integers(0, 4096))
def test_crc32c_implementations_agree(data: bytes, cut: int) -> None:
    assert crc32c(data) == crc32c_crcmod(data)
    head, tail = data[:cut], data[cut:]
    assert crc32c(tail, crc32c(head)) == crc32c(data) == crc32c_crcmod(tail, crc32c_crcmod(head))
    assert crc32c_crcmod(memoryview(data)) == crc32c(data)


@given(st.binary(max_size=4096), st.integers(0, 4096))
def test_crc32_is_zlib_and_continues(data: bytes, cut: int) -> None:
    assert crc32(data) == zlib.crc32(data)
    assert crc32(data[cut:], crc32(data[:cut])) == crc32(data)


def test_falls_back_to_crcmod_without_the_crc32c_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "crc32c", None)  # makes `import crc32c` fail
    try:
        fallback = importlib.reload(crc_module)
        assert fallback.CRC32C_IMPLEMENTATION == "crcmod"
        assert fallback.crc32c(CHECK) == 0xE3069283
    finally:
        monkeypatch.undo()
        importlib.reload(crc_module)
    assert crc_module.CRC32C_IMPLEMENTATION == "crc32c"
