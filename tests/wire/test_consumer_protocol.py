"""The consumer protocol inside the group APIs: a subscription as librdkafka writes it, annotated field by field;
every version round-trips; a newer version is read with the fields known (what follows ignored), a known version
must end with its last field; any truncation is malformed input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bruce.wire import (
    ConsumerAssignment,
    ConsumerSubscription,
    ConsumerTopicPartitions,
    MalformedInput,
    UsageError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

LIBRDKAFKA_SUBSCRIPTION = bytes.fromhex(
    "0003"  # version 3
    "00000001"
    "0005"
    "636c69636b"  # topics: ["click"]
    "00000000"  # user data: empty (not null)
    "00000001"
    "0005"
    "636c69636b"
    "00000002"
    "00000000"
    "00000123"  # owned partitions: click [0, 0x123]
    "00000444"  # generation id 0x444
    "0004"
    "72616b31"  # rack id "rak1"
)


def test_a_subscription_field_by_field() -> None:
    found = decode_subscription(LIBRDKAFKA_SUBSCRIPTION)
    assert found == ConsumerSubscription(
        version=3,
        topics=("click",),
        user_data=b"",
        owned_partitions=(ConsumerTopicPartitions("click", (0, 0x123)),),
        generation_id=0x444,
        rack_id="rak1",
    )
    assert encode_subscription(found) == LIBRDKAFKA_SUBSCRIPTION


def test_an_assignment_field_by_field() -> None:
    data = bytes.fromhex("0001000000010005636c69636b000000020000000000000123ffffffff")
    found = decode_assignment(data)
    assert found == ConsumerAssignment(1, (ConsumerTopicPartitions("click", (0, 0x123)),), None)
    assert encode_assignment(found) == data


_names = st.text(st.characters(codec="utf-8"), max_size=8)
_int32s = st.lists(st.integers(-(2**31), 2**31 - 1), max_size=3).map(tuple)
_partitions = st.lists(st.builds(ConsumerTopicPartitions, _names, _int32s), max_size=3).map(tuple)


@given(
    version=st.integers(0, 3),
    topics=st.lists(_names, max_size=3).map(tuple),
    user_data=st.none() | st.binary(max_size=8),
    owned=_partitions,
    generation=st.integers(-(2**31), 2**31 - 1),
    rack=st.none() | _names,
)
def test_subscriptions_round_trip_in_every_version(
    version: int,
    topics: tuple[str, ...],
    user_data: bytes | None,
    owned: tuple[ConsumerTopicPartitions, ...],
    generation: int,
    rack: str | None,
) -> None:
    value = ConsumerSubscription(
        version,
        topics,
        user_data,
        owned if version >= 1 else (),
        generation if version >= 2 else -1,
        rack if version >= 3 else None,
    )
    assert decode_subscription(encode_subscription(value)) == value


@given(version=st.integers(0, 3), assigned=_partitions, user_data=st.none() | st.binary(max_size=8))
def test_assignments_round_trip_in_every_version(
    version: int, assigned: tuple[ConsumerTopicPartitions, ...], user_data: bytes | None
) -> None:
    value = ConsumerAssignment(version, assigned, user_data)
    assert decode_assignment(encode_assignment(value)) == value


def test_a_newer_version_is_read_with_the_fields_known() -> None:
    newer = b"\x00\x07" + LIBRDKAFKA_SUBSCRIPTION[2:] + b"\x01\x02\x03"  # version 7, a field added at the end
    found = decode_subscription(newer)
    assert (found.version, found.topics, found.rack_id) == (7, ("click",), "rak1")
    with pytest.raises(MalformedInput):
        decode_subscription(LIBRDKAFKA_SUBSCRIPTION + b"\x00")  # version 3 ends with its rack id


def test_every_truncation_and_a_negative_version_are_malformed() -> None:
    for n in range(len(LIBRDKAFKA_SUBSCRIPTION)):
        with pytest.raises(MalformedInput):
            decode_subscription(LIBRDKAFKA_SUBSCRIPTION[:n])
    with pytest.raises(MalformedInput):
        decode_assignment(b"\xff\xff" + LIBRDKAFKA_SUBSCRIPTION[2:])
    with pytest.raises(UsageError):
        encode_assignment(ConsumerAssignment(4, ()))
