"""bruce.wire.plog: golden vectors, truncation and trailing data, fast parser ≡ schema, builders, MurmurHash3."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bruce.wire import plog
from bruce.wire.errors import MalformedInput, UsageError
from bruce.wire.plog import Command, Fragment, Unboxed

# ---------------------------------------------------------------- MurmurHash3 reference (x86, 32-bit)


def murmur3_reference(data: bytes, seed: int = 0) -> int:
    """Austin Appleby's MurmurHash3_x86_32, written out plainly, for cross-checking the C implementation."""
    mask = 0xFFFFFFFF
    c1, c2 = 0xCC9E2D51, 0x1B873593
    h = seed & mask
    whole = len(data) - len(data) % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        k = (k * c2) & mask
        h ^= k
        h = ((h << 13) | (h >> 19)) & mask
        h = (h * 5 + 0xE6546B64) & mask
    tail = data[whole:]
    if tail:
        k = int.from_bytes(tail, "little")
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        k = (k * c2) & mask
        h ^= k
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    h ^= h >> 16
    return h


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", 0x00000000),
        (b"abc", 0xB3DD93FA),
        (b"Hello, world!", 0xC0363E43),
        (b"The quick brown fox jumps over the lazy dog", 0x2E4FF723),
    ],
)
def test_murmur3_known_vectors(data: bytes, expected: int) -> None:
    assert murmur3_reference(data) == expected
    assert plog.murmur3_32(data) == expected


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_murmur3_matches_reference(data: bytes) -> None:
    assert plog.murmur3_32(data) == murmur3_reference(data)


# ---------------------------------------------------------------- Kafka's murmur2 (plog's producer places keys with it)


@pytest.mark.parametrize(
    ("key", "partition"),
    [(b"", 681), (b"a", 524), (b"ab", 434), (b"abc", 107), (b"123456789", 566), (b"\x00 ", 742)],
)
def test_partition_keys_place_as_kafkas_java_producer_over_1000_partitions(key: bytes, partition: int) -> None:
    """The partitions Kafka's Java DefaultPartitioner gives these keys for a 1000-partition topic."""
    assert plog.plog_partition_key(key) % 1000 == partition


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # kafka-python's package loads its schemas on import
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_murmur2_matches_kafka_python(data: bytes) -> None:
    from kafka.partitioner.default import murmur2 as kafka_python_murmur2  # an independent implementation

    assert plog.murmur2(data) == kafka_python_murmur2(data)
    assert 0 <= plog.plog_partition_key(data) < 2**31


def test_murmur3_all_tail_lengths_of_plogs_own_test_input() -> None:
    raw = b"abcdefghijklmnopqrstuvwxyz"
    for n in range(21):
        assert plog.murmur3_32(raw[:n]) == murmur3_reference(raw[:n])


# ---------------------------------------------------------------- golden vectors

# A fragment with distinctive values: count 2, index 1, 0x123 bytes per fragment, message id "ABCD" backwards,
# total length 0x200 (= 0x123 + 0xDD), checksum 0xDEADBEEF, tags "kt:clicks" and "pk:user-7".
GOLDEN_FRAGMENT = (
    bytes.fromhex(
        "00 01"  # version 0, type 1 (fragment)
        "0002"  # fragment count
        "0001"  # fragment index
        "0123"  # payload length per fragment
        "44434241"  # message id
        "00000200"  # total length
        "DEADBEEF"  # MurmurHash3 of the whole message
        "0013"  # tags length: 19
        "0000"  # reserved
    )
    + b"kt:clicks\0pk:user-7"
    + b"tail"
)

GOLDEN_FRAGMENT_VALUE = Fragment(2, 1, 0x123, 0x44434241, 0x200, 0xDEADBEEF, ("kt:clicks", "pk:user-7"), b"tail")


def test_golden_fragment() -> None:
    for parse in (plog.parse_packet, plog.parse_packet_schema):
        fragment = parse(GOLDEN_FRAGMENT)
        assert fragment == GOLDEN_FRAGMENT_VALUE
        assert (fragment.topic, fragment.key) == ("clicks", "user-7")
    assert plog.build_packet(GOLDEN_FRAGMENT_VALUE) == GOLDEN_FRAGMENT
    assert plog.build_packet_schema(GOLDEN_FRAGMENT_VALUE) == GOLDEN_FRAGMENT


def test_golden_command_and_unboxed() -> None:
    assert plog.parse_packet(b"\x00\x00ping\x01\x02") == Command("PING", b"\x01\x02")
    assert plog.parse_packet(b"\x00\x00StAt") == Command("STAT", b"")
    assert plog.build_command("PING", b"\x01\x02") == b"\x00\x00PING\x01\x02"
    assert plog.parse_packet(b" starts with a space") == Unboxed(b" starts with a space")
    assert plog.parse_packet(b"\xff\x00") == Unboxed(b"\xff\x00")  # plog: a negative Java byte is also unboxed


def test_reserved_bytes_are_ignored_and_empty_tags_skipped() -> None:
    packet = bytearray(plog.build_fragment(Fragment(1, 0, 5, 1, 5, 0, (), b"hello")))
    packet[22:24] = b"\x12\x34"
    assert plog.parse_packet(bytes(packet)).payload == b"hello"
    tagged = plog.build_fragment(Fragment(1, 0, 5, 1, 0, 0, ("kt:a",), b""))
    doubled = tagged[:20] + struct.pack(">H", 7) + tagged[22:24] + b"\0kt:a\0\0"
    for parse in (plog.parse_packet, plog.parse_packet_schema):
        assert parse(doubled).tags == ("kt:a",)


def test_the_last_tag_wins() -> None:
    f = Fragment(1, 0, 0, 0, 0, 0, ("kt:one", "pk:1", "other", "kt:two"), b"")
    assert (f.topic, f.key) == ("two", "1")
    assert (Fragment(1, 0, 0, 0, 0, 0).topic, Fragment(1, 0, 0, 0, 0, 0).key) == (None, None)


# ---------------------------------------------------------------- rejection, with its reason


def _header(count=2, index=0, size=10, message_id=7, total=15, checksum=0, tags_length=0) -> bytes:
    return b"\x00\x01" + struct.pack(">HHHIiIH", count, index, size, message_id, total, checksum, tags_length) + b"\0\0"


@pytest.mark.parametrize(
    ("packet", "reason"),
    [
        (b"", plog.PLOG_EMPTY),
        (b"\x01", plog.PLOG_INVALID_VERSION),
        (b"\x1f hello", plog.PLOG_INVALID_VERSION),
        (b"\x00", plog.PLOG_INVALID_TYPE),
        (b"\x00\x02", plog.PLOG_INVALID_TYPE),
        (b"\x00\xff" + bytes(30), plog.PLOG_INVALID_TYPE),
        (b"\x00\x00PIN", plog.PLOG_BAD_COMMAND),
        (_header()[:23], plog.PLOG_BAD_FRAGMENT_HEADER),
        (_header(count=0), plog.PLOG_BAD_FRAGMENT_HEADER),
        (_header(index=2), plog.PLOG_BAD_FRAGMENT_HEADER),
        (_header(count=1, total=-1), plog.PLOG_BAD_FRAGMENT_HEADER),
        (_header(count=2, size=10, total=9), plog.PLOG_BAD_FRAGMENT_HEADER),  # below one whole fragment
        (_header(count=2, size=10, total=21), plog.PLOG_BAD_FRAGMENT_HEADER),  # above two fragments
        (_header(tags_length=5) + b"kt:a", plog.PLOG_BAD_FRAGMENT_HEADER),  # tags overrun the packet
        (_header(tags_length=4) + b"kt:\xff", plog.PLOG_BAD_TAGS),
    ],
)
def test_rejections_name_their_reason(packet: bytes, reason: str) -> None:
    for parse in (plog.parse_packet, plog.parse_packet_schema):
        with pytest.raises(MalformedInput) as e:
            parse(packet)
        assert e.value.reason == reason, parse.__name__


def test_header_bounds_that_plogs_clients_produce_are_accepted() -> None:
    assert plog.parse_packet(_header(count=2, size=10, total=10) + bytes(10)).total_length == 10  # empty last part
    assert plog.parse_packet(_header(count=2, size=10, total=20) + bytes(10)).total_length == 20  # full last part
    one = plog.parse_packet(_header(count=1, size=64000, total=3, index=0) + b"abc")  # plog-ruby: chunk size 64000
    assert one.payload == b"abc"


def _outcome(parse, data: bytes):
    try:
        return parse(data)
    except MalformedInput as e:
        return ("rejected", e.reason)


SAMPLES = [GOLDEN_FRAGMENT, b"\x00\x00ping tail", b"hello world", _header(tags_length=4) + b"kt:x" + bytes(10)]


@pytest.mark.parametrize("packet", SAMPLES)
def test_truncated_at_every_byte_parses_or_names_a_reason(packet: bytes) -> None:
    for n in range(len(packet) + 1):
        fast = _outcome(plog.parse_packet, packet[:n])
        assert fast == _outcome(plog.parse_packet_schema, packet[:n])
        if isinstance(fast, tuple):
            assert fast[1].startswith("PLOG_")


@pytest.mark.parametrize("packet", SAMPLES)
def test_trailing_data_extends_the_payload(packet: bytes) -> None:
    junk = b"\x00junk\xff"
    before, after = plog.parse_packet(packet), plog.parse_packet(packet + junk)
    assert after == plog.parse_packet_schema(packet + junk)
    tail = {Unboxed: "message", Command: "trail", Fragment: "payload"}[type(before)]
    assert getattr(after, tail) == getattr(before, tail) + junk


# ---------------------------------------------------------------- fast ≡ schema (differential)

fragments = st.builds(
    Fragment,
    fragment_count=st.integers(1, 0xFFFF),
    fragment_index=st.integers(0, 0xFFFF),
    fragment_size=st.integers(0, 0xFFFF),
    message_id=st.integers(0, 0xFFFFFFFF),
    total_length=st.integers(-(2**31), 2**31 - 1),
    checksum=st.integers(0, 0xFFFFFFFF),
    tags=st.lists(st.text(alphabet=st.characters(exclude_characters="\0"), min_size=1, max_size=8), max_size=3).map(
        tuple
    ),
    payload=st.binary(max_size=40),
)
commands = st.builds(
    Command,
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), min_size=4, max_size=4),
    st.binary(max_size=20),
)


def raw_fragment(f: Fragment) -> bytes:
    """Pack any header values, valid or not, without the builder's checks."""
    tags = "\0".join(f.tags).encode("utf-8", "surrogatepass")  # lone surrogates make invalid UTF-8: fine here
    counts = (f.fragment_count, f.fragment_index, f.fragment_size, f.message_id, f.total_length, f.checksum)
    return _header(*counts, tags_length=len(tags)) + tags + f.payload


@st.composite
def consistent_fragments(draw) -> Fragment:
    """Fragments whose header passes the checks (their payload need not fit it)."""
    count = draw(st.integers(1, 0xFFFF))
    size = draw(st.integers(0, 0xFFFF))
    low, high = ((count - 1) * size, min(count * size, 2**31 - 1)) if count > 1 else (0, 2**31 - 1)
    total = draw(st.integers(low, high)) if low <= high else 0
    tags = draw(fragments).tags
    return Fragment(
        count, draw(st.integers(0, count - 1)), size, 0x444, total, 0x123, tags, draw(st.binary(max_size=9))
    )


packets = st.one_of(
    st.binary(max_size=60),
    fragments.map(raw_fragment),
    consistent_fragments().map(raw_fragment),
    commands.map(lambda c: plog.build_command(c.name, c.trail)),
)


@st.composite
def mutated(draw) -> bytes:
    """A packet, with a few bytes overwritten and possibly truncated: mostly near-valid input."""
    data = bytearray(draw(packets))
    for _ in range(draw(st.integers(0, 3))):
        if data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    cut = draw(st.integers(0, len(data)))
    return bytes(data[: cut if draw(st.booleans()) else len(data)])


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_fast_parser_equals_schema(data: bytes) -> None:
    fast = _outcome(plog.parse_packet, data)
    event(fast[1] if isinstance(fast, tuple) else type(fast).__name__)
    assert fast == _outcome(plog.parse_packet_schema, data)
    if not isinstance(fast, tuple) and not isinstance(fast, Unboxed):
        assert plog.build_packet(fast) == plog.build_packet_schema(fast)


@settings(max_examples=400, deadline=None)
@given(fragments)
def test_builders_agree_and_round_trip(fragment: Fragment) -> None:
    try:
        built = plog.build_fragment(fragment)
    except UsageError:
        with pytest.raises(UsageError):
            plog.build_packet_schema(fragment)
        return
    assert built == plog.build_packet_schema(fragment)
    parsed = _outcome(plog.parse_packet, built)
    if not isinstance(parsed, tuple):
        assert parsed == fragment


@settings(max_examples=200, deadline=None)
@given(commands)
def test_commands_round_trip_upper_cased(command: Command) -> None:
    built = plog.build_command(command.name, command.trail)
    assert built == plog.build_packet_schema(command)
    assert plog.parse_packet(built) == Command(command.name.upper(), command.trail)


# ---------------------------------------------------------------- build_fragments


@settings(max_examples=200, deadline=None)
@given(
    message=st.binary(max_size=3000),
    size=st.integers(1, 700),
    topic=st.none() | st.text(min_size=1, max_size=10).filter(lambda t: "\0" not in t),
    key=st.none() | st.text(min_size=1, max_size=10).filter(lambda t: "\0" not in t),
)
def test_build_fragments_splits_and_tags_the_last(message: bytes, size: int, topic, key) -> None:
    packets = plog.build_fragments(message, message_id=0x444, fragment_size=size, topic=topic, partition_key=key)
    parsed = [plog.parse_packet(p) for p in packets]
    assert len(parsed) == max(1, -(-len(message) // size))
    assert b"".join(f.payload for f in parsed) == message
    assert all(f.checksum == plog.murmur3_32(message) and f.total_length == len(message) for f in parsed)
    assert [f.fragment_index for f in parsed] == list(range(len(parsed)))
    assert all(f.tags == () for f in parsed[:-1])
    assert (parsed[-1].topic, parsed[-1].key) == (topic, key)


def test_builders_refuse_what_does_not_fit() -> None:
    with pytest.raises(UsageError):
        plog.build_fragments(b"x" * 70000, message_id=1, fragment_size=1)  # more than 65535 fragments
    with pytest.raises(UsageError):
        plog.build_fragments(b"x", message_id=1, fragment_size=0)
    with pytest.raises(UsageError):
        plog.build_fragments(b"x" * 65535, message_id=1, fragment_size=65535)  # over a UDP datagram
    with pytest.raises(UsageError):
        plog.build_fragments(b"x", message_id=2**32, fragment_size=10)
    with pytest.raises(UsageError):
        plog.build_fragments(b"x", message_id=1, fragment_size=10, topic="a\0b")
    with pytest.raises(UsageError):
        plog.build_fragments(b"x", message_id=1, fragment_size=10, partition_key="\ud800")  # not encodable
    with pytest.raises(UsageError):
        plog.build_command("PINGS")
    with pytest.raises(UsageError):
        plog.build_unboxed(b"\x00binary")
    with pytest.raises(UsageError):
        plog.build_unboxed(b"")
