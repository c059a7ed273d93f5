"""One object per message end to end: the daemon's HeldMessage is the producer's Message plus topic, receive time and
budget charge, and its constructor sets every producer field exactly as the producer's constructor does."""

from __future__ import annotations

import pytest

from bruce.producer.message import Message as ProducerMessage
from bruce.producer.message import resolve_delivered, resolve_failed
from bruce.producer.reasons import DiscardReason
from bruce.proxy.messages.message import MESSAGE_OVERHEAD, HeldMessage


def producer_slots() -> list[str]:
    return [s for cls in ProducerMessage.__mro__ for s in getattr(cls, "__slots__", ())]


@pytest.mark.parametrize(
    ("key", "value", "partition_key"), [(b"", b"", None), (b"k", b"value", None), (b"", b"v" * 300, 0x444)]
)
def test_every_producer_field_is_set_as_the_producer_does(key: bytes, value: bytes, partition_key: int | None) -> None:
    ours = HeldMessage("clicks", key, value, 0x123, partition_key, 12.5)
    theirs = ProducerMessage(key, value, 0x123, None, partition_key)
    for name in producer_slots():
        assert getattr(ours, name) == getattr(theirs, name), name
    assert (ours.topic, ours.received, ours.charge) == ("clicks", 12.5, len(key) + len(value) + MESSAGE_OVERHEAD)
    assert isinstance(ours, ProducerMessage)


def test_the_producer_resolves_it_like_its_own() -> None:
    delivered = HeldMessage("t", b"", b"a", 1, None, 0.0)
    failed = HeldMessage("t", b"", b"b", 1, None, 0.0)
    resolve_delivered([delivered], 3, 0x444)
    resolve_failed([failed], DiscardReason.KAFKA_ERROR_ACK, "t")
    assert delivered.done and delivered.result() == (3, 0x444)
    assert failed.done and failed.error is not None and failed.error.reason == DiscardReason.KAFKA_ERROR_ACK


def test_a_null_key_is_held_as_null_and_charged_as_empty() -> None:
    m = HeldMessage("t", None, b"value", 1, None, 0.0)
    assert (m.key, m.size, m.charge) == (None, 5, 5 + MESSAGE_OVERHEAD)
    assert "key=0B value=5B" in repr(m)


def test_no_instance_dict() -> None:
    m = HeldMessage("t", b"", b"", 1, None, 0.0)
    with pytest.raises(AttributeError):
        m.extra = 1  # type: ignore[attr-defined]
