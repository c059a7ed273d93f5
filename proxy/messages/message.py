"""The daemon's in-memory message: one datagram's content from intake until its fate is known.

Rules:
- :class:`HeldMessage` *is* a :class:`bruce.producer.Message` (the producer queues, encodes and resolves it as it is,
  a ``Producer[HeldMessage]`` giving it back to the daemon's sink typed as such) with the daemon's own fields added:
  ``topic``, ``received``, ``charge`` and ``spool_seq``.
  A batch that waits for a broker is held packed instead (:mod:`bruce.proxy.routing.packed`) and becomes objects again
  (equal field by field) when it is sent.
- One object per message while it moves, and one constructor: the producer's sets its fields, this class's its own
  (``topic``, ``received``, ``charge``, ``spool_seq``), with ``__slots__``. ``spool_seq`` is the message's sequence in
  the durable spool (:mod:`bruce.proxy.spool`), or -1 when it has none (no spool, or held in memory only); whoever
  settles its fate marks it done there (:mod:`bruce.proxy.accounting.outcomes`). The intake's fast path
  (:mod:`bruce.proxy.intake.intake_burst`) alone sets the fields itself, to save the constructor's calls on the
  datagram path; tests/proxy/intake/test_intake_layouts.py holds it to this constructor slot by slot. Fields are set
  once by the input that creates the message; nothing here validates them — the inputs do (bruce.wire parses, then the
  budget admits).
- ``partition_key`` is ``None`` for AnyPartition messages (the producer picks the partition) and the client's 32-bit
  key for PartitionKey messages (the producer's documented PartitionKey semantics).
- ``timestamp`` is the client's epoch-milliseconds timestamp (it becomes the record's CreateTime and reports show it;
  it is never trusted for batch age); ``received`` is the daemon's ``time.monotonic()`` at receipt, from which batch
  age is measured.
- ``charge`` is what the message holds in the memory budget (:mod:`bruce.proxy.messages.budget`); whoever settles the
  message's fate (delivered or discarded) releases exactly that amount once.
"""

from __future__ import annotations

from bruce.producer import Message as ProducerMessage

# The memory a held message occupies besides its key and value bytes, on 64-bit CPython 3.11: the HeldMessage object
# (14 slots with its GC header), the headers and 16-byte rounding of the key and value ``bytes`` (up to 48 B each),
# the ``int`` timestamp, partition key, size and charge (32 B each), the float receive time, and a list slot, rounded
# up with a margin for the router's and batcher's containers. Topics are shared strings, so they are not charged.
# tests/proxy/intake/test_intake_budget.py measures it with tracemalloc.
MESSAGE_OVERHEAD = 400


def message_charge(key: bytes | None, value: bytes) -> int:
    """The bytes of budget a message with this key and value holds: key + value + :data:`MESSAGE_OVERHEAD`."""
    return (len(key) if key else 0) + len(value) + MESSAGE_OVERHEAD


class HeldMessage(ProducerMessage):
    """One message held by the daemon.

    >>> m = HeldMessage("clicks", b"", b"hello", 1700000000000, None, 12.5)
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
        ProducerMessage.__init__(self, key, value, timestamp, None, partition_key)
        self.topic = topic
        self.received = received
        self.spool_seq = -1
        self.charge = self.size + MESSAGE_OVERHEAD

    def __repr__(self) -> str:
        pk = "" if self.partition_key is None else f" partition_key={self.partition_key}"
        key = len(self.key) if self.key else 0
        return f"<HeldMessage topic={self.topic!r}{pk} key={key}B value={len(self.value)}B ts={self.timestamp}>"
