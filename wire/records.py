"""Records as read back from Kafka, whatever their on-wire format (message set magic 0/1, or RecordBatch v2).

Rules: a decoded record is a frozen :class:`Record`; timestamps are epoch milliseconds (-1 when the format has none).
"""

from __future__ import annotations

from dataclasses import dataclass

CREATE_TIME = 0
LOG_APPEND_TIME = 1


@dataclass(frozen=True, slots=True)
class Record:
    """One record: its absolute offset, timestamp, key, value and headers, and the format it came in."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_type: int = CREATE_TIME
    magic: int = 2
