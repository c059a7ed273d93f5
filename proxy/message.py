"""The daemon's in-memory message: one datagram's content from intake until its fate is known.

Rules:
- The smallest fast object: a ``__slots__`` class, not a dataclass, because one is built per received datagram on the
  hot path (a frozen dataclass costs ~3x more to create). Fields are set once by the input that creates the message;
  nothing here validates them — the inputs do (bruce.wire parses, then the budget admits).
- ``partition_key`` is ``None`` for AnyPartition messages (the router chooses) and the client's 32-bit key for
  PartitionKey messages.
- ``timestamp`` is the client's epoch-milliseconds timestamp (reports show it; it is never trusted for batch age);
  ``received`` is the daemon's ``time.monotonic()`` at receipt, from which batch age is measured.
- ``charge`` is what the message holds in the memory budget (:mod:`bruce.proxy.budget`); whoever settles the message's
  fate (delivered or discarded) releases exactly that amount once.
"""

from __future__ import annotations

# The memory a held message occupies besides its key and value bytes, on 64-bit CPython 3.11: the Message object
# (96 B with its GC header), the headers and 16-byte rounding of the key and value ``bytes`` (up to 48 B each), the
# ``int`` timestamp, partition key and charge (32 B each), and a list slot, rounded up with a margin for the router's
# and batcher's containers. Topics are shared strings and the receive time is shared per burst, so neither is charged.
# tests/proxy/intake/test_intake_budget.py measures it with tracemalloc.
MESSAGE_OVERHEAD = 320


def message_charge(key: bytes, value: bytes) -> int:
    """The bytes of budget a message with this key and value holds: key + value + :data:`MESSAGE_OVERHEAD`."""
    return len(key) + len(value) + MESSAGE_OVERHEAD


class Message:
    """One message held by the daemon.

    >>> m = Message("clicks", b"", b"hello", 1700000000000, None, 12.5, message_charge(b"", b"hello"))
    >>> (m.topic, m.value, m.partition_key, m.charge)
    ('clicks', b'hello', None, 325)
    """

    __slots__ = ("charge", "key", "partition_key", "received", "timestamp", "topic", "value")

    topic: str
    key: bytes
    value: bytes
    timestamp: int
    partition_key: int | None
    received: float
    charge: int

    def __init__(
        self,
        topic: str,
        key: bytes,
        value: bytes,
        timestamp: int,
        partition_key: int | None,
        received: float,
        charge: int,
    ) -> None:
        self.topic = topic
        self.key = key
        self.value = value
        self.timestamp = timestamp
        self.partition_key = partition_key
        self.received = received
        self.charge = charge

    def __repr__(self) -> str:
        pk = "" if self.partition_key is None else f" partition_key={self.partition_key}"
        return f"<Message topic={self.topic!r}{pk} key={len(self.key)}B value={len(self.value)}B ts={self.timestamp}>"
