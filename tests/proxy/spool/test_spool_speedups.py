"""The spool's C record encoder: built, byte-equal to the Python encoder and the spec, and never the one that errs."""

from __future__ import annotations

import os
import subprocess
import sys

import crc32c as crc32c_package
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bruce.proxy.spool import format
from bruce.proxy.spool.format import SpoolMessage, encode_burst, encode_burst_python, encode_burst_schema
from bruce.wire.errors import UsageError

# Installing the package builds the extension wherever a C compiler is (every CI machine): its absence is a failure
# here, not a skip. BRUCE_NO_EXTENSIONS=1 runs the suite on the Python encoder alone.
PURE = bool(os.environ.get("BRUCE_NO_EXTENSIONS"))
if not PURE:
    from bruce.proxy.spool import _speedups


def test_the_c_encoder_is_built_and_used() -> None:
    if PURE:
        assert format._encode_burst_c is None
        return
    assert format._encode_burst_c is _speedups.encode_burst


def test_no_extensions_leaves_the_c_encoder_out() -> None:
    code = "from bruce.proxy.spool import format; print(format._encode_burst_c is None)"
    env = {**os.environ, "BRUCE_NO_EXTENSIONS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"


needs_c = pytest.mark.skipif(PURE, reason="BRUCE_NO_EXTENSIONS=1: the C encoder is left out on purpose")

plain_messages = st.tuples(  # the plain tuples the intake builds
    st.binary(min_size=1, max_size=20),
    st.none() | st.integers(-(2**31), 2**31 - 1),
    st.none() | st.binary(max_size=20),
    st.binary(max_size=300),
    st.integers(-(2**63), 2**63 - 1),
)
sequences = st.sampled_from([0, 1, 2**63, 2**64 - 300, 2**64 - 1]) | st.integers(0, 2**64 - 1)


@needs_c
@settings(max_examples=400, deadline=None)
@given(first=sequences, burst=st.lists(plain_messages | plain_messages.map(lambda m: SpoolMessage(*m)), max_size=24))
def test_c_encoder_equals_the_python_encoder_and_the_spec(first: int, burst: list[tuple]) -> None:
    try:
        expected: bytes | str = encode_burst_python(first, burst)
    except UsageError as e:  # only a sequence past 2**64 can fail here
        expected = str(e)
    try:
        got: bytes | str = encode_burst(first, burst)
    except UsageError as e:
        got = str(e)
    assert got == expected
    if isinstance(expected, bytes):
        assert expected == encode_burst_schema(first, [SpoolMessage(*m) for m in burst])
        if first < 2**64 - 1:  # a first sequence of 2**64 - 1 is left to Python (the C side's error marker)
            assert _speedups.encode_burst(first, burst) == expected


@needs_c
@pytest.mark.parametrize(
    "burst",
    [
        [(bytearray(b"t"), None, None, b"v", 0)],  # bytes-like, not bytes
        [(b"t", None, None, memoryview(b"v"), 0)],
        [[b"t", None, None, b"v", 0]],  # a list, not a tuple
        [(b"t", True, None, b"v", 0)],  # a bool partition key
    ],
)
def test_what_the_c_encoder_does_not_take_goes_to_python(burst: list) -> None:
    with pytest.raises(ValueError):
        _speedups.encode_burst(7, burst)
    try:
        expected: bytes | str = encode_burst_python(7, burst)
    except UsageError as e:
        expected = str(e)
    try:
        got: bytes | str = encode_burst(7, burst)
    except UsageError as e:
        got = str(e)
    assert got == expected


@needs_c
def test_a_burst_that_is_not_a_list_or_tuple_goes_to_python() -> None:
    burst = [(b"t", None, None, b"v", 0)] * 3
    assert encode_burst(7, iter(burst)) == encode_burst_python(7, burst)  # type: ignore[arg-type]


@needs_c
@pytest.mark.parametrize(
    "bad",
    [
        (b"", None, None, b"v", 0),  # no topic
        (b"t" * 65536, None, None, b"v", 0),  # topic too long
        (b"t", 2**31, None, b"v", 0),  # partition key out of range
        (b"t", -(2**31) - 1, None, b"v", 0),
        (b"t", None, None, b"v", 2**63),  # timestamp out of range
        (b"t", None, None, None, 0),  # no value
        (b"t", None, 5, b"v", 0),  # a key that is not bytes
        ("t", None, None, b"v", 0),  # a topic that is not bytes
        (b"t", None, None, b"v", 1.5),  # a timestamp that is not an int
    ],
)
def test_the_error_for_a_bad_message_is_the_python_encoders(bad: tuple) -> None:
    burst = [(b"ok", None, None, b"", 0), bad]
    with pytest.raises(UsageError) as python_error:
        encode_burst_python(0, burst)
    with pytest.raises(UsageError) as error:
        encode_burst(0, burst)
    assert str(error.value) == str(python_error.value)


@needs_c
def test_sequences_past_64_bits_are_the_python_encoders_error() -> None:
    with pytest.raises(UsageError, match="cannot be spooled"):
        encode_burst(2**64 - 1, [(b"t", None, None, b"", 0)] * 2)
    assert encode_burst(2**64 - 2, [(b"t", None, None, b"", 0)] * 2) == encode_burst_python(
        2**64 - 2, [(b"t", None, None, b"", 0)] * 2
    )


@needs_c
@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200))
def test_both_crc_paths_equal_the_crc32c_package(data: bytes) -> None:
    assert _speedups.crc32c(data) == crc32c_package.crc32c(data)
    assert _speedups.crc32c_table(data) == crc32c_package.crc32c(data)


@needs_c
def test_crc_of_a_large_buffer_and_the_check_value() -> None:
    assert _speedups.crc32c(b"123456789") == 0xE3069283  # the published CRC-32C check value
    big = os.urandom(1 << 20)
    assert _speedups.crc32c(big) == _speedups.crc32c_table(big) == crc32c_package.crc32c(big)
