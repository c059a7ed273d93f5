"""The daemon's in-memory message: one datagram's content from intake until its fate is known.

Rules:
- One object per message while it moves: :class:`Message` *is* a :class:`bruce.producer.Message` (the producer
  queues, encodes and resolves it as it is) with the daemon's own fields added: ``topic``, ``received`` and ``charge``.
  A batch that waits for a broker is held packed instead (:mod:`bruce.proxy.routing.packed`) and becomes objects again
  (equal field by field) when it is sent.
- The smallest fast object: ``__slots__``, and a constructor that sets every field itself rather than calling the
  producer's (one call less per datagram on the hot path). ``spool_seq`` is the message's sequence in the durable spool
  (:mod:`bruce.proxy.spool`), or -1 when it has none (no spool, or held in memory only); whoever settles its fate marks
  it done there (:mod:`bruce.proxy.accounting.outcomes`). tests/proxy/routing/test_routing_message.py checks that the
  result equals what the producer's constructor builds, field by field, so a field added there cannot go unset here. The
  intake's fast path (:mod:`bruce.proxy.intake.intake_burst`) sets the same fields without calling the constructor;
  tests/proxy/intake/test_intake_layouts.py holds it to the constructor slot by slot. Fields are set once by the input
  that creates the message; nothing here validates them — the inputs do (bruce.wire parses, then the budget admits).
- ``partition_key`` is ``None`` for AnyPartition messages (the producer picks the partition) and the client's 32-bit
  key for PartitionKey messages (the producer's documented PartitionKey semantics).
- ``timestamp`` is the client's epoch-milliseconds timestamp (it becomes the record's CreateTime and reports show it;
  it is never trusted for batch age); ``received`` is the daemon's ``time.monotonic()`` at receipt, from which batch
  age is measured.
- ``charge`` is what the message holds in the memory budget (:mod:`bruce.proxy.intake.budget`); whoever settles the
  message's fate (delivered or discarded) releases exactly that amount once.
"""

from __future__ import annotations

from bruce.producer import Message as ProducerMessage

# The memory a held message occupies besides its key and value bytes, on 64-bit CPython 3.11: the Message object
# (14 slots with its GC header), the headers and 16-byte rounding of the key and value ``bytes`` (up to 48 B each),
# the ``int`` timestamp, partition key, size and charge (32 B each), the float receive time, and a list slot, rounded
# up with a margin for the router's and batcher's containers. Topics are shared strings, so they are not charged.
# tests/proxy/intake/test_intake_budget.py measures it with tracemalloc.
MESSAGE_OVERHEAD = 400


def message_charge(key: bytes | None, value: bytes) -> int:
    """The bytes of budget a message with this key and value holds: key + value + :data:`MESSAGE_OVERHEAD`."""
    return (len(key) if key else 0) + len(value) + MESSAGE_OVERHEAD


class Message(ProducerMessage):
    """One message held by the daemon.

    >>> m = Message("clicks", b"", b"hello", 1700000000000, None, 12.5)
    >>> (m.topic, m.value, m.partition_key, m.size, m.charge)
    ('clicks', b'hello', None, 5, 405)
    """

    __slots__ = ("charge", "received", "spool_seq", "topic")

    topic: str
    value: bytes  # never None here (the producer's may be: a tombstone)
    received: float
    charge: int
    spool_seq: int

    def __init__(
        self,
        topic: str,
        key: bytes | None,
        value: bytes,
        timestamp: int,
        partition_key: int | None,
        received: float,
    ) -> None:
        self.topic = topic
        self.key = key
        self.value = value
        self.timestamp = timestamp
        self.partition_key = partition_key
        self.received = received
        self.spool_seq = -1
        # The producer's fields, as its constructor sets them.
        self.headers = None
        self.pinned = False
        self.size = size = (len(key) if key else 0) + len(value)
        self.charge = size + MESSAGE_OVERHEAD
        self.attempts = 0
        self.possible_duplicate = False
        self.partition = -1
        self._fate = None

    def __repr__(self) -> str:
        pk = "" if self.partition_key is None else f" partition_key={self.partition_key}"
        key = len(self.key) if self.key else 0
        return f"<Message topic={self.topic!r}{pk} key={key}B value={len(self.value)}B ts={self.timestamp}>"
