"""Compact storage of held messages: a ready batch of the daemon's messages as one bytes arena plus small arrays,
instead of one Python object (and one ``bytes`` per key and value) per message.

Rules:
- A :class:`PackedBatch` holds what its messages need to be sent, rerouted, reported and accounted for: one topic,
  the keys and values back to back in one ``bytes``, and per message an end offset, a key length (-1: no key), a
  timestamp (as an offset from the batch's first, when all fit 32 bits) and, when any message has one, a partition
  key, and when any message has a spool sequence (``spool_seq``), the sequences: as 4-byte offsets from the
  batch's lowest (-1: none) when they fit, else 8 bytes each (a batch may mix bursts and memory-only messages).
  The receive time is the batch's (batch age is all that needs it, and it is spent once a batch is ready).
- Its charge in the memory budget is what it really occupies: key + value + :data:`INDEX_BYTES` per message
  (:data:`KEYED_INDEX_BYTES` when partition keys are kept, and 4 or 8 bytes more with sequences) +
  :data:`BATCH_BYTES` per batch (its objects' headers; :data:`SEQS_BATCH_BYTES` more with sequences).
  tests/proxy/routing/test_routing_packed.py measures it with tracemalloc.
- :meth:`Packer.pack` turns a batch of loose messages into one; it packs only what it can restore exactly: fresh
  messages (no failed attempt, not a possible duplicate, no headers, not pinned) whose packing saves budget, and
  releases the difference between their loose charges and the packed charge from the budget at once.
- :meth:`PackedBatch.unpack` gives the messages back as loose :class:`~bruce.proxy.messages.message.Message` objects,
  equal field by field to what was packed (``received`` aside: the batch's), whose charges add up to the packed charge:
  so whoever settles them releases exactly what the batch held. The producer's queues unpack a batch when it is
  about to be sent or rerouted (see :mod:`bruce.producer.queues.partition_queue`).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import cast

from bruce.producer import Message as ProducerMessage

from ..messages import HeldMessage, MessageBudget

INDEX_BYTES = 12  # per message: end offset, key length and timestamp offset, 4 bytes each
KEYED_INDEX_BYTES = INDEX_BYTES + 8  # and a partition key (8 bytes: any 32-bit key, signed or not, and "none")
BATCH_BYTES = 640  # per batch: the object, the arena's and the arrays' headers and allocator rounding
SEQS_BATCH_BYTES = 96  # per batch with spool sequences: their array's header and rounding
PACK_MIN = 8  # fewer messages than this stay loose (packing them would save little)
_NO_KEY = -(2**63)  # partition key "none" (AnyPartition) in a keyed batch
_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1
_MAX_ARENA = 2**32 - 1  # end offsets are 32-bit


class PackedBatch:
    """One topic's ready messages, packed (see the module rules). ``len()`` is its message count."""

    __slots__ = ("base", "charge", "data", "ends", "keys", "pkeys", "received", "seq_base", "seqs", "stamps", "topic")

    def __init__(
        self,
        topic: str,
        data: bytes,
        ends: array[int],
        keys: array[int],
        stamps: array[int],
        base: int,
        pkeys: array[int] | None,
        received: float,
        seqs: array[int] | None = None,
        seq_base: int = 0,
    ) -> None:
        self.topic = topic
        self.data = data
        self.ends = ends
        self.keys = keys
        self.stamps = stamps
        self.base = base
        self.pkeys = pkeys
        self.received = received
        self.seqs = seqs
        self.seq_base = seq_base
        self.charge = packed_charge(len(data), len(ends), pkeys is not None, 0 if seqs is None else seqs.itemsize)

    def __len__(self) -> int:
        return len(self.ends)

    def unpack(self) -> list[ProducerMessage]:
        """The loose messages, in order; their charges add up to :attr:`charge` (the batch's share on the first)."""
        topic, data, base, received = self.topic, self.data, self.base, self.received
        seqs = self.seqs
        keyed, seq_bytes = self.pkeys is not None, 0 if seqs is None else seqs.itemsize
        batch_share = packed_charge(0, 0, keyed, seq_bytes)
        per = packed_charge(0, 1, keyed, seq_bytes) - batch_share
        pkeys = self.pkeys if self.pkeys is not None else [None] * len(self.ends)
        out: list[HeldMessage] = []
        append = out.append
        start = 0
        for end, klen, stamp, pkey in zip(self.ends, self.keys, self.stamps, pkeys, strict=True):
            if klen < 0:
                key = None
                value = data[start:end]
            else:
                split = start + klen
                key = data[start:split]
                value = data[split:end]
            m = HeldMessage(topic, key, value, base + stamp, None if pkey == _NO_KEY else pkey, received)
            m.charge = end - start + per
            append(m)
            start = end
        if seqs is not None:
            seq_base = self.seq_base
            for m, seq in zip(out, seqs, strict=True):
                m.spool_seq = seq + seq_base if seq >= 0 else -1
        if out:
            out[0].charge += batch_share
        return cast("list[ProducerMessage]", out)  # the producer's queues hold a Producer[HeldMessage]'s as Messages

    def __repr__(self) -> str:
        return f"<PackedBatch {self.topic!r} {len(self)} messages {len(self.data)} B charge={self.charge}>"


def packed_charge(arena: int, count: int, keyed: bool, seq_bytes: int = 0) -> int:
    """The budget charge of a packed batch: ``arena`` bytes of keys and values for ``count`` messages, with
    ``seq_bytes`` per message of spool sequences."""
    per = (KEYED_INDEX_BYTES if keyed else INDEX_BYTES) + seq_bytes
    return arena + count * per + BATCH_BYTES + (SEQS_BATCH_BYTES if seq_bytes else 0)


class Packer:
    """Packs the daemon's ready batches and settles the budget difference (see the module rules)."""

    __slots__ = ("budget",)

    def __init__(self, budget: MessageBudget) -> None:
        self.budget = budget

    def pack(self, topic: str, messages: Sequence[HeldMessage]) -> PackedBatch | None:
        """``messages`` (the daemon's, all of ``topic``) as one :class:`PackedBatch`, or None when they stay loose."""
        n = len(messages)
        if n < PACK_MIN:
            return None
        parts: list[bytes] = []
        ends: list[int] = []
        keys: list[int] = []
        stamps: list[int] = []
        pkeys: list[int] = []
        seqs: list[int] = []
        keyed = False
        loose = 0
        pos = 0
        base = messages[0].timestamp
        received = messages[0].received
        for m in messages:
            if m.attempts or m.possible_duplicate or m.headers is not None or m.pinned:
                return None
            key = m.key
            if key is None:
                keys.append(-1)
            else:
                keys.append(len(key))
                parts.append(key)
            parts.append(m.value)
            pos += m.size
            ends.append(pos)
            stamp = m.timestamp - base
            if not _I32_MIN <= stamp <= _I32_MAX:
                return None
            stamps.append(stamp)
            pkey = m.partition_key
            if pkey is None:
                pkeys.append(_NO_KEY)
            else:
                pkeys.append(pkey)
                keyed = True
            seqs.append(m.spool_seq)
            loose += m.charge
        seq_array, seq_base = _sequences(seqs)
        seq_bytes = 0 if seq_array is None else seq_array.itemsize
        if pos > _MAX_ARENA or packed_charge(pos, n, keyed, seq_bytes) >= loose:
            return None
        batch = PackedBatch(
            topic,
            b"".join(parts),
            array("I", ends),
            array("i", keys),
            array("i", stamps),
            base,
            array("q", pkeys) if keyed else None,
            received,
            seq_array,
            seq_base,
        )
        self.budget.shrink(loose - batch.charge)
        return batch


def _sequences(seqs: list[int]) -> tuple[array[int] | None, int]:
    """Spool sequences as (array, base): None without any; 4-byte offsets from the lowest (-1: none) when they fit,
    else the sequences themselves (base 0)."""
    spooled = [s for s in seqs if s >= 0]
    if not spooled:
        return None, 0
    low = min(spooled)
    if max(spooled) - low <= _I32_MAX:
        return array("i", [s - low if s >= 0 else -1 for s in seqs]), low
    return array("q", seqs), 0
