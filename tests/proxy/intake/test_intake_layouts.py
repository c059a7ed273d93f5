"""The intake's fast path (datagrams that repeat a layout, proxy/intake/intake_burst.py) gives every datagram the
outcome and the message fields ``parse_datagram`` gives it: same length but another topic, key size, flags or API key,
topics too long to keep, and a limit lowered after a layout was learned."""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest

import bruce.proxy.intake.intake_burst as intake_burst
from bruce.producer.reasons import DiscardReason
from bruce.proxy.intake.intake import DatagramIntake
from bruce.wire.datagram import build_any_partition, build_partition_key, parse_datagram

TS = 1_700_000_000_000


def fields(intake: DatagramIntake) -> list[tuple]:
    return [(m.topic, m.key, m.value, m.timestamp, m.partition_key, m.size, m.charge) for m in intake.sink.messages]


def expected(datagrams: list[bytes]) -> list[tuple]:
    out = []
    for d in datagrams:
        _, topic, ts, key, value, pk = parse_datagram(d)
        size = len(key) + len(value)
        out.append((topic.decode(), key, value, ts, pk, size, size + 400))
    return out


def test_same_length_datagrams_take_their_own_fields(make_intake: Callable[..., DatagramIntake]) -> None:
    intake = make_intake()
    same = [build_any_partition("clicks", b"v%03d" % i, key=b"k%d" % (i % 10), timestamp=TS + i) for i in range(20)] + [
        build_any_partition("clicks", b"v0000", key=b"k", timestamp=TS),  # another key size, same length
        build_any_partition("clicks", b"v000", key=b"k0", timestamp=TS),  # the first layout again
        build_any_partition("clickz", b"v000", key=b"k0", timestamp=TS),  # another topic, same length
        build_partition_key("cl", b"v000", key=b"k0", partition_key=7, timestamp=TS),  # PartitionKey, same length
    ]
    assert len({len(d) for d in same}) == 1
    bad_flags = same[0][:8] + struct.pack(">h", 1) + same[0][10:]
    bad_api = same[0][:4] + struct.pack(">h", 300) + same[0][6:]
    intake.feed(same[:10], 1.0)  # the layout is learned here
    intake.feed([*same[10:], bad_flags, bad_api], 2.0)
    assert fields(intake) == expected(same)
    assert [(r, d) for r, _, d in intake.sink.unparsed] == [
        (DiscardReason.MALFORMED, None),
        (DiscardReason.API_KEY, 300),
    ]
    assert [m.received for m in intake.sink.messages] == [1.0] * 10 + [2.0] * 14


def test_long_topics_are_parsed_every_time(make_intake: Callable[..., DatagramIntake]) -> None:
    intake = make_intake()
    topic = "t" * (intake_burst.LAYOUT_TOPIC_MAX + 1)
    datagrams = [build_any_partition(topic, b"v%d" % i, timestamp=TS) for i in range(5)]
    intake.feed(datagrams, 1.0)
    assert fields(intake) == expected(datagrams)
    assert not intake.bursts._layouts  # internal: the bound under test


def test_a_lowered_limit_applies_to_learned_layouts(make_intake: Callable[..., DatagramIntake]) -> None:
    intake = make_intake()
    datagram = build_any_partition("clicks", b"v" * 50, timestamp=TS)
    intake.feed([datagram], 1.0)
    intake.max_input_msg_size = len(datagram) - 1
    intake.feed([datagram], 2.0)
    assert len(intake.sink.messages) == 1
    assert [r for r, _, _ in intake.sink.unparsed] == [DiscardReason.LONG_MSG]


def test_two_topics_of_one_length_do_not_relearn_every_datagram(
    make_intake: Callable[..., DatagramIntake], monkeypatch: pytest.MonkeyPatch
) -> None:
    learned = []
    real = intake_burst.any_partition_layout
    monkeypatch.setattr(intake_burst, "any_partition_layout", lambda *a: learned.append(a) or real(*a))
    intake = make_intake()
    datagrams = [build_any_partition("topicA" if i % 2 else "topicB", b"v%03d" % i, timestamp=TS) for i in range(640)]
    assert len({len(d) for d in datagrams}) == 1
    intake.feed(datagrams, 1.0)
    assert fields(intake) == expected(datagrams)
    # one layout at first, then one more each time the other topic missed LAYOUT_MISSES times: 320 misses → 5
    assert len(learned) == 1 + 320 // intake_burst.LAYOUT_MISSES


@pytest.mark.parametrize("key", [b"", b"key"])
def test_the_fast_path_sets_every_slot_as_the_constructor_does(
    make_intake: Callable[..., DatagramIntake], key: bytes
) -> None:
    """The fast path builds its messages without calling ``HeldMessage``: every slot (the producer's and the daemon's)
    must hold what the constructor would have put there."""
    from bruce.proxy.messages.message import HeldMessage

    intake = make_intake()
    datagrams = [build_any_partition("clicks", b"value-%d" % i, key=key, timestamp=TS + i) for i in range(3)]
    intake.feed(datagrams, 12.5)
    assert len(intake.sink.messages) == 3  # the first learns the layout, the next two take the fast path
    slots = [s for cls in HeldMessage.__mro__ for s in getattr(cls, "__slots__", ())]
    for m, d in zip(intake.sink.messages, datagrams, strict=True):
        _, topic, ts, k, value, pk = parse_datagram(d)
        built = HeldMessage(topic.decode(), k, value, ts, pk, 12.5)
        for name in slots:
            assert getattr(m, name) == getattr(built, name), name
