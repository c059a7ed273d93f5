"""Reassembly of plog multipart messages: a bounded buffer of incomplete messages.

Rules:
- A message is identified by (sender host, sender port, message id). A fragment that is alone (count 1) is complete
  and never enters the buffer.
- The buffer holds at most ``capacity`` bytes, measured as the payload bytes received plus a fixed charge per message
  (:data:`ENTRY_OVERHEAD`) and per fragment (:data:`FRAGMENT_OVERHEAD`) for the Python objects that hold them, plus the
  tags. A message whose complete charge could never fit is refused at its first fragment (``defrag_too_large``); to
  make room for a new fragment the least recently touched messages are dropped (``defrag_evictions``). So no sequence
  of packets, however adversarial, makes the buffer exceed its capacity.
- A message not touched for ``expiry`` seconds is dropped (``defrag_expired``, also an eviction as in plog); the
  caller drives expiry by calling :meth:`Defragmenter.expire` now and then (every fragment also does).
- A fragment whose payload length does not fit its index, or whose header differs from the first fragment of its
  message (count, size, total length, checksum), is counted as invalid and ignored; a repeated fragment is counted as
  a duplicate and ignored. The message's tags are those of the last fragment that carried any (plog's client puts
  them on the last fragment).
- A complete message is delivered only if its MurmurHash3 matches the header; otherwise ``v0_invalid_checksum``.
- Every dropped message counts its missing fragments in ``dropped_fragments``.
- Every message ends exactly once: delivered (returned by :meth:`Defragmenter.add`), or reported to ``on_drop`` with
  what ended it (:data:`INVALID_CHECKSUM`, :data:`INCOMPLETE` — expired, evicted for room or cleared —,
  :data:`TOO_LARGE`) and a sample of its bytes; an invalid fragment is reported too (:data:`INVALID_FRAGMENT`), as
  one bad packet. So ``begun == delivered + dropped messages + len(defragmenter)`` at every moment.
- Pure: the clock is injected.
"""

from __future__ import annotations

import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from bruce.wire import KEY_TAG, TOPIC_TAG, Fragment, last_tag, murmur3_32

from .stats import PlogStats

DEFAULT_CAPACITY = 1 << 20  # plog's defrag max_size
DEFAULT_EXPIRY = 10.0  # plog's defrag expire_time, seconds after a message was last touched

# What one pending message and one stored fragment cost besides the payload bytes, measured with tracemalloc on
# CPython 3.11-3.13 (tests/plog/test_plog_defrag.py checks the bound holds): the _Pending object, its dict of fragments,
# the OrderedDict entry and the key tuple (~600 B) for a message; the bytes object header, the int index and the
# dict slot for a fragment (~100 B). Rounded up.
ENTRY_OVERHEAD = 768
FRAGMENT_OVERHEAD = 128

# What ends a message (or a packet) without delivering it, as reported to ``on_drop``.
INVALID_FRAGMENT = "invalid_fragment"  # a fragment that does not fit its message (the packet, not the message)
INVALID_CHECKSUM = "invalid_checksum"  # complete, but its MurmurHash3 does not match
INCOMPLETE = "incomplete"  # expired, evicted to make room, or cleared at shutdown
TOO_LARGE = "too_large"  # could never fit the buffer

OnDrop = Callable[[str, bytes], object]

Sender = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Reassembled:
    """A complete message whose checksum matched."""

    message: bytes
    tags: tuple[str, ...]
    fragment_count: int

    @property
    def topic(self) -> str | None:
        """From the last ``kt:`` tag, if any."""
        return last_tag(self.tags, TOPIC_TAG)

    @property
    def key(self) -> str | None:
        """From the last ``pk:`` tag (the Kafka record key), if any."""
        return last_tag(self.tags, KEY_TAG)


class _Pending:
    """An incomplete message."""

    __slots__ = ("charge", "checksum", "count", "last_seen", "parts", "size", "tags", "tags_charge", "total")

    def __init__(self, first: Fragment, now: float) -> None:
        self.count = first.fragment_count
        self.size = first.fragment_size
        self.total = first.total_length
        self.checksum = first.checksum
        self.parts: dict[int, bytes] = {}
        self.tags: tuple[str, ...] = ()
        self.tags_charge = 0
        self.charge = ENTRY_OVERHEAD
        self.last_seen = now

    def matches(self, f: Fragment) -> bool:
        return (f.fragment_count, f.fragment_size, f.total_length, f.checksum) == (
            self.count,
            self.size,
            self.total,
            self.checksum,
        )


def _tags_charge(tags: tuple[str, ...]) -> int:
    return sys.getsizeof(tags) + sum(sys.getsizeof(t) for t in tags) if tags else 0


def payload_fits(f: Fragment) -> bool:
    """Whether the fragment's payload length is the one its header promises for its index."""
    if f.fragment_count == 1:
        return len(f.payload) == f.total_length
    if f.fragment_index < f.fragment_count - 1:
        return len(f.payload) == f.fragment_size
    return len(f.payload) == f.total_length - f.fragment_size * (f.fragment_count - 1)


class Defragmenter:
    """Reassembles fragments into messages within ``capacity`` bytes; counts into ``stats``."""

    def __init__(
        self,
        stats: PlogStats,
        *,
        capacity: int = DEFAULT_CAPACITY,
        expiry: float = DEFAULT_EXPIRY,
        clock: Callable[[], float] = time.monotonic,
        on_drop: OnDrop | None = None,
    ) -> None:
        """``on_drop(what, sample)`` hears of every message (or invalid fragment) dropped; ``sample`` holds its first
        received bytes."""
        if capacity < ENTRY_OVERHEAD + FRAGMENT_OVERHEAD:
            raise ValueError(f"defragmenter capacity {capacity} is below one fragment's overhead")
        if expiry <= 0:
            raise ValueError(f"defragmenter expiry must be positive, got {expiry}")
        self.stats = stats
        self.capacity = capacity
        self.expiry = expiry
        self._clock = clock
        self._on_drop = on_drop
        self.begun = 0  # messages whose first fragment arrived (a lone fragment included)
        self._pending: OrderedDict[tuple[str, int, int], _Pending] = OrderedDict()  # least recently touched first
        self.used = 0  # bytes charged by pending messages

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, sender: Sender, fragment: Fragment) -> Reassembled | None:
        """Take one fragment (whose header parsed); return the message it completes, if it completes one."""
        now = self._clock()
        self.expire(now)
        if not payload_fits(fragment):
            self._invalid(fragment)
            return None
        if fragment.fragment_count == 1:
            self.begun += 1
            return self._verified(fragment.payload, fragment.checksum, fragment.tags, 1)
        key = (sender[0], sender[1], fragment.message_id)
        entry = self._pending.get(key)
        if entry is None:
            self.stats.defrag_misses += 1
            self.begun += 1
            worst = ENTRY_OVERHEAD + fragment.total_length + fragment.fragment_count * FRAGMENT_OVERHEAD
            if worst + _tags_charge(fragment.tags) > self.capacity:
                self.stats.defrag_too_large += 1
                self.stats.defrag_evictions += 1
                self.stats.dropped(fragment.fragment_count, (fragment.fragment_index,))
                self._report(TOO_LARGE, fragment.payload)
                return None
            entry = _Pending(fragment, now)
            self._pending[key] = entry
            self.used += entry.charge
        else:
            self.stats.defrag_hits += 1
            if not entry.matches(fragment):
                self._invalid(fragment)
                return None
            entry.last_seen = now
            self._pending.move_to_end(key)
            if fragment.fragment_index in entry.parts:
                self.stats.defrag_duplicates += 1
                return None
        self._store(entry, fragment)
        if entry.charge > self.capacity:  # only bigger tags on a later fragment can do this
            self._drop(key, TOO_LARGE)
            self.stats.defrag_too_large += 1
            return None
        if len(entry.parts) < entry.count:
            self._make_room(key)
            return None
        del self._pending[key]
        self.used -= entry.charge
        message = b"".join(entry.parts[i] for i in range(entry.count))
        return self._verified(message, entry.checksum, entry.tags, entry.count)

    def expire(self, now: float | None = None) -> int:
        """Drop the messages not touched for ``expiry`` seconds; return how many."""
        if now is None:
            now = self._clock()
        dropped = 0
        deadline = now - self.expiry
        while self._pending:
            key, entry = next(iter(self._pending.items()))
            if entry.last_seen > deadline:
                break
            self._drop(key, INCOMPLETE)
            self.stats.defrag_expired += 1
            dropped += 1
        return dropped

    def clear(self) -> None:
        """Drop every pending message (at shutdown), counting them as evicted."""
        while self._pending:
            self._drop(next(iter(self._pending)), INCOMPLETE)

    def _store(self, entry: _Pending, fragment: Fragment) -> None:
        entry.parts[fragment.fragment_index] = fragment.payload
        added = len(fragment.payload) + FRAGMENT_OVERHEAD
        if fragment.tags:
            tags_charge = _tags_charge(fragment.tags)
            added += tags_charge - entry.tags_charge
            entry.tags, entry.tags_charge = fragment.tags, tags_charge
        entry.charge += added
        self.used += added

    def _make_room(self, keep: tuple[str, int, int]) -> None:
        """Drop the least recently touched messages (never ``keep``) until the buffer is within capacity."""
        while self.used > self.capacity:
            oldest = next(iter(self._pending))
            if oldest == keep:  # cannot happen: a message's own charge is within capacity (checked above)
                break
            self._drop(oldest, INCOMPLETE)

    def _drop(self, key: tuple[str, int, int], what: str) -> None:
        entry = self._pending.pop(key)
        self.used -= entry.charge
        self.stats.defrag_evictions += 1
        self.stats.dropped(entry.count, entry.parts)
        parts = entry.parts
        self._report(what, parts[min(parts)] if parts else b"")

    def _invalid(self, fragment: Fragment) -> None:
        self.stats.invalid_fragment(fragment.fragment_index, fragment.fragment_count)
        self._report(INVALID_FRAGMENT, fragment.payload)

    def _report(self, what: str, sample: bytes) -> None:
        if self._on_drop is not None:
            self._on_drop(what, sample)

    def _verified(self, message: bytes, checksum: int, tags: tuple[str, ...], count: int) -> Reassembled | None:
        if murmur3_32(message) != checksum:
            self.stats.invalid_checksum(count)
            self._report(INVALID_CHECKSUM, message)
            return None
        self.stats.v0_multipart_messages += 1
        return Reassembled(message, tags, count)
