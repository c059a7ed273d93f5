"""TCP reassembly of one direction of a connection, by sequence number: segments in, the byte stream out in order.

Rules:
- Sequence numbers are compared modulo 2**32. The stream starts after the SYN's sequence number when the SYN was
  captured, else at the first segment seen. Bytes are numbered from 0 (``offset``) in the stream: what reports name.
- A segment wholly before what was delivered (a retransmission or a duplicate) is dropped and counted; one that
  overlaps it is trimmed. A segment after a hole waits, out of order, until the hole is filled.
- A hole is given up — a :class:`Gap` (where it is and how many bytes were never captured) is delivered in its place
  and the stream goes on after it — as soon as the other side acknowledges bytes past it (:meth:`acked`: they were
  delivered, so they will not come again; an answer is then paired with the request that preceded it); or when more
  than ``max_pending`` bytes wait out of order after it, or the oldest waiting segment is more than ``max_wait``
  seconds of capture time old; or at :meth:`finish`.
- Sans-I/O: :meth:`add` returns what became deliverable, as a list of ``bytes`` chunks and :class:`Gap` marks.
"""

from __future__ import annotations

from dataclasses import dataclass

MOD = 1 << 32
HALF = 1 << 31
MAX_PENDING = 16 << 20  # bytes held out of order per direction
MAX_WAIT = 5.0  # seconds of capture time a hole may stay open while later segments wait


@dataclass(frozen=True, slots=True)
class Gap:
    """Bytes of the stream that were never captured: ``size`` bytes from stream offset ``offset``."""

    offset: int
    size: int
    reason: str  # "hole" (never filled), "acknowledged" (by the other side), "overflow", "timeout"


Piece = bytes | Gap


def _diff(a: int, b: int) -> int:
    """a - b for sequence numbers, as a signed 32-bit distance."""
    d = (a - b) % MOD
    return d - MOD if d >= HALF else d


class Stream:
    """One direction of a TCP connection, reassembled."""

    def __init__(self, *, max_pending: int = MAX_PENDING, max_wait: float = MAX_WAIT) -> None:
        self.max_pending = max_pending
        self.max_wait = max_wait
        self.next_seq: int | None = None  # the sequence number of the next byte to deliver
        self.offset = 0  # stream offset of that byte
        self.pending: dict[int, tuple[bytes, float]] = {}  # out of order: seq -> (payload, capture time)
        self.pending_bytes = 0
        self.duplicates = 0  # segments (or parts) dropped as already delivered
        self.overflows = 0  # holes given up because too much waited after them
        self.finished = False

    def syn(self, seq: int) -> None:
        """The SYN (or SYN-ACK) of this direction: the stream starts at ``seq + 1``."""
        if self.next_seq is None:
            self.next_seq = (seq + 1) % MOD

    def add(self, seq: int, payload: bytes | memoryview, ts: float) -> list[Piece]:
        """A segment's payload at sequence number ``seq``, captured at ``ts``: what is now deliverable in order."""
        if not payload or self.finished:
            return []
        if self.next_seq is None:
            self.next_seq = seq
        out: list[Piece] = []
        ahead = _diff(seq, self.next_seq)
        if ahead < 0:  # starts before what was delivered
            if ahead + len(payload) <= 0:
                self.duplicates += 1
                return out
            payload, seq = payload[-ahead:], self.next_seq
            ahead = 0
        if ahead == 0:
            self._deliver(bytes(payload), out)
            self._drain(out)
        else:
            held = self.pending.get(seq)
            if held is None or len(held[0]) < len(payload):
                self.pending_bytes += len(payload) - (len(held[0]) if held else 0)
                self.pending[seq] = (bytes(payload), held[1] if held else ts)
            else:
                self.duplicates += 1
        while self.pending and (self.pending_bytes > self.max_pending or ts - self._oldest() > self.max_wait):
            self._skip_hole(out, "overflow" if self.pending_bytes > self.max_pending else "timeout")
        return out

    def reached(self, seq: int) -> bool:
        """Was every byte before sequence number ``seq`` delivered (or given up)?"""
        return self.next_seq is not None and _diff(seq, self.next_seq) <= 0

    def acked(self, ack: int) -> list[Piece]:
        """The other side acknowledged every byte before sequence number ``ack``: what it received and this capture
        did not hold is a :class:`Gap`, and what waited after it is delivered."""
        out: list[Piece] = []
        if self.next_seq is None or self.finished:
            return out
        while _diff(ack, self.next_seq) > 0:
            base = self.next_seq
            first = min(self.pending, key=lambda s: _diff(s, base), default=None)
            if first is None or _diff(first, ack) >= 0:  # nothing captured before ``ack``
                size = _diff(ack, base)
                out.append(Gap(self.offset, size, "acknowledged"))
                self.next_seq = ack
                self.offset += size
                self._drain(out)
            else:
                self._skip_hole(out, "acknowledged")
        return out

    def finish(self) -> list[Piece]:
        """The connection ended (FIN, RST or the end of the capture): what still waits, each hole as a :class:`Gap`."""
        out: list[Piece] = []
        while self.pending:
            self._skip_hole(out, "hole")
        self.finished = True
        return out

    def _oldest(self) -> float:
        return min(ts for _, ts in self.pending.values())

    def _deliver(self, data: bytes, out: list[Piece]) -> None:
        out.append(data)
        assert self.next_seq is not None
        self.next_seq = (self.next_seq + len(data)) % MOD
        self.offset += len(data)

    def _drain(self, out: list[Piece]) -> None:
        """Deliver the waiting segments that now follow on (trimming overlaps, dropping what was delivered)."""
        progress = True
        while progress and self.pending:
            progress = False
            assert self.next_seq is not None
            for seq in list(self.pending):
                ahead = _diff(seq, self.next_seq)
                if ahead > 0:
                    continue
                data, _ = self.pending.pop(seq)
                self.pending_bytes -= len(data)
                if ahead + len(data) > 0:
                    self._deliver(data[-ahead:] if ahead else data, out)
                    progress = True
                else:
                    self.duplicates += 1

    def _skip_hole(self, out: list[Piece], reason: str) -> None:
        """Give up the hole before the earliest waiting segment: a Gap, then deliver what follows."""
        assert self.next_seq is not None
        base = self.next_seq
        first = min(self.pending, key=lambda s: _diff(s, base))
        size = _diff(first, base)
        if reason == "overflow":
            self.overflows += 1
        out.append(Gap(self.offset, size, reason))
        self.next_seq = first
        self.offset += size
        self._drain(out)
