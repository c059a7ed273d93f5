"""Per-listener statistics in plog's STAT JSON shape.

Rules:
- Field names are plog's where plog has one (``udp_simple_messages``, ``v0_invalid_type``, ``v0_fragments``,
  ``dropped_fragments``, ``defragmenter.evictions``, ``handlers[].seen_messages`` / ``failed_to_send``, ...); fields
  plog lacks are added beside them with self-explanatory names. Monitoring written for plog keeps working.
- Bucketed counters use plog's log2 buckets: ``bit_length(n)`` (0 for 0, 1 for 1, 2 for 2-3, 3 for 4-7, ... 16), so a
  u16 needs 17 buckets. ``v0_fragments`` is bucketed by fragment index, ``v0_invalid_checksum`` by fragment count - 1;
  ``v0_invalid_fragments`` and ``dropped_fragments`` are triangular: row ``bucket(count - 1)``, column
  ``bucket(index)``.
- plog's packet-loss hole detection is not implemented: ``holes_from_dead_port`` / ``holes_from_new_message`` are
  reported as 0, as plog reports them when detection is disabled; ``unhandled_objects`` (a plog pipeline artefact)
  likewise; ``exceptions`` too, since an unexpected error stops the daemon instead of being counted.
- Every malformed packet is counted under exactly one field, chosen by its ``reason`` (:meth:`PlogStats.malformed`).
- Plain counters for one event loop; no I/O. :meth:`PlogStats.to_json` renders the STAT reply;
  :meth:`PlogStats.counters` gives every counter flat, as the status pages show them (``PlogUdpSimpleMessages``,
  bucketed arrays summed).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from bruce.wire import plog

from ..config import package_version

BUCKETS = 17  # log2 buckets for values 0..65535

# Which counter each malformed-packet reason lands in (plog's counter where plog has one).
_MALFORMED_FIELD = {
    plog.PLOG_EMPTY: "udp_empty_packets",
    plog.PLOG_INVALID_VERSION: "udp_invalid_version",
    plog.PLOG_INVALID_TYPE: "v0_invalid_type",
    plog.PLOG_BAD_COMMAND: "unknown_command",  # plog: a command too short to read is an unknown command
    plog.PLOG_BAD_FRAGMENT_HEADER: "v0_invalid_multipart_header",
    plog.PLOG_BAD_TAGS: "v0_invalid_multipart_header",
}


def bucket(n: int) -> int:
    """plog's log2 bucket of a non-negative int."""
    return n.bit_length()


def _bucket_sizes(count: int) -> list[int]:
    """How many of the indices 0..count-1 fall in each bucket."""
    sizes = [0] * BUCKETS
    sizes[0] = 1
    for b in range(1, bucket(count - 1) + 1):
        low = 1 << (b - 1)
        sizes[b] = min((1 << b) - 1, count - 1) - low + 1
    return sizes


def _buckets() -> list[int]:
    return [0] * BUCKETS


def _triangle() -> list[list[int]]:
    return [[0] * (row + 1) for row in range(BUCKETS)]


@dataclass(slots=True)
class PlogStats:
    """The counters of one listener."""

    listener: str
    clock: Callable[[], float] = time.monotonic
    started: float = field(init=False)
    # plog's counters
    udp_simple_messages: int = 0
    udp_invalid_version: int = 0
    v0_invalid_type: int = 0
    v0_invalid_multipart_header: int = 0
    unknown_command: int = 0
    v0_commands: int = 0
    v0_multipart_messages: int = 0
    v0_fragments: list[int] = field(default_factory=_buckets)
    v0_invalid_checksum: list[int] = field(default_factory=_buckets)
    v0_invalid_fragments: list[list[int]] = field(default_factory=_triangle)
    dropped_fragments: list[list[int]] = field(default_factory=_triangle)
    defrag_hits: int = 0
    defrag_misses: int = 0
    defrag_evictions: int = 0  # plog's defragmenter.evictions: dropped for room or expired
    seen_messages: int = 0  # handed to the sink
    failed_to_send: int = 0  # the sink did not accept them
    # ours
    udp_empty_packets: int = 0
    kill_refused: int = 0  # KILL while the listener does not enable it (also counted as unknown_command)
    defrag_expired: int = 0
    defrag_too_large: int = 0  # could never fit the reassembly buffer
    defrag_duplicates: int = 0
    no_topic: int = 0  # the listener has no topic and the message had no kt: tag
    tcp_lines: int = 0
    tcp_line_too_long: int = 0
    tcp_partial_lines: int = 0  # an unterminated line cut off by a connection reset
    tcp_connections: int = 0
    tcp_rejected_connections: int = 0  # refused because the listener had max_connections open
    tcp_idle_closed: int = 0  # closed after idle_timeout without a byte
    tcp_line_timeouts: int = 0  # closed because a started line did not end within line_timeout
    tcp_pauses: int = 0  # times a connection stopped reading because the budget was full
    reply_failures: int = 0  # command replies the socket would not send (buffer full, too large)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def malformed(self, reason: str) -> None:
        """Count one malformed packet by its :class:`~bruce.wire.errors.MalformedInput` reason."""
        field = _MALFORMED_FIELD[reason]
        setattr(self, field, getattr(self, field) + 1)

    def fragment(self, index: int) -> None:
        """A fragment with a valid header arrived."""
        self.v0_fragments[bucket(index)] += 1

    def invalid_fragment(self, index: int, count: int) -> None:
        """A fragment that does not fit its message (length, or header differing from its siblings)."""
        self.v0_invalid_fragments[bucket(count - 1)][bucket(index)] += 1

    def invalid_checksum(self, count: int) -> None:
        self.v0_invalid_checksum[bucket(count - 1)] += 1

    def dropped(self, count: int, received: Iterable[int]) -> None:
        """A message of ``count`` fragments was dropped incomplete: count each fragment that never arrived."""
        missing = _bucket_sizes(count)
        for index in received:
            missing[bucket(index)] -= 1
        row = self.dropped_fragments[bucket(count - 1)]
        for b in range(len(row)):
            row[b] += missing[b]

    def to_dict(self, *, pending_messages: int = 0, pending_bytes: int = 0) -> dict[str, Any]:
        """The STAT document. ``pending_*``: the reassembly buffer's current content."""
        return {
            "version": package_version(),
            "uptime": int((self.clock() - self.started) * 1000),
            "listener": self.listener,
            "udp_simple_messages": self.udp_simple_messages,
            "udp_invalid_version": self.udp_invalid_version,
            "udp_empty_packets": self.udp_empty_packets,
            "v0_invalid_type": self.v0_invalid_type,
            "v0_invalid_multipart_header": self.v0_invalid_multipart_header,
            "unknown_command": self.unknown_command,
            "kill_refused": self.kill_refused,
            "v0_commands": self.v0_commands,
            "reply_failures": self.reply_failures,
            "exceptions": 0,
            "unhandled_objects": 0,
            "holes_from_dead_port": 0,
            "holes_from_new_message": 0,
            "v0_multipart_messages": self.v0_multipart_messages,
            "v0_fragments": list(self.v0_fragments),
            "v0_invalid_checksum": list(self.v0_invalid_checksum),
            "v0_invalid_fragments": [list(row) for row in self.v0_invalid_fragments],
            "dropped_fragments": [list(row) for row in self.dropped_fragments],
            "defragmenter": {
                "evictions": self.defrag_evictions,
                "hits": self.defrag_hits,
                "misses": self.defrag_misses,
                "expired": self.defrag_expired,
                "too_large": self.defrag_too_large,
                "duplicates": self.defrag_duplicates,
                "pending_messages": pending_messages,
                "pending_bytes": pending_bytes,
            },
            "tcp": {
                "lines": self.tcp_lines,
                "line_too_long": self.tcp_line_too_long,
                "partial_lines": self.tcp_partial_lines,
                "connections": self.tcp_connections,
                "rejected_connections": self.tcp_rejected_connections,
                "idle_closed": self.tcp_idle_closed,
                "line_timeouts": self.tcp_line_timeouts,
                "pauses": self.tcp_pauses,
            },
            "handlers": [
                {
                    "name": "kafka",
                    "seen_messages": self.seen_messages,
                    "failed_to_send": self.failed_to_send,
                    "no_topic": self.no_topic,
                }
            ],
        }

    def to_json(self, **pending: int) -> bytes:
        """The STAT reply: compact UTF-8 JSON."""
        return json.dumps(self.to_dict(**pending), separators=(",", ":")).encode()

    def counters(self) -> Iterator[tuple[str, int]]:
        """Every counter as ``(CamelCaseName, value)``: ``udp_simple_messages`` → ``PlogUdpSimpleMessages``; the
        bucketed arrays as their totals."""
        for name, label in _COUNTER_NAMES:
            value = getattr(self, name)
            if type(value) is list:
                value = sum(sum(v) if type(v) is list else v for v in value)
            yield label, value


def _camel(name: str) -> str:
    return "Plog" + "".join(part[:1].upper() + part[1:] for part in name.split("_"))


_COUNTER_NAMES = tuple(
    (f.name, _camel(f.name)) for f in fields(PlogStats) if f.name not in ("listener", "clock", "started")
)
