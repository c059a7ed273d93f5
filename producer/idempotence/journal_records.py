"""The batch journal's files and records: their format and encoding (:mod:`bruce.producer.idempotence.journal` writes
them, :mod:`bruce.producer.idempotence.journal_reader` reads them back at the next start).

Rules:
- Files ``NNNNNNNNNNNNNNNNNNNN.batches`` (20 digits: the file's number, +1 per new file) in ``directory``; any other
  name is ignored (the daemon's spool directory holds its segments beside them). Big-endian throughout.
- Version 2 (written): a 32-byte header, then records back to back. Header: magic ``BSPB``, version u16 (2), flags
  u16 (0), then the file's *extent*, rewritten in place by the writer: ``end`` u64 (the file's bytes the writer
  vouches for: every record before it was written whole — updated after each SENT, OFF and GAP record, so before
  any batch goes out), ``outstanding`` u64 (messages of the journal's batches sent and not finished, then),
  ``state`` u32 (:data:`NEXT`: the writer went on in the file numbered one more; :data:`OFF`: batches may have gone
  out unjournaled since), and CRC-32C u32 of the 28 bytes before it. Version 1 (earlier bruce): an 8-byte header
  (magic, version 1, flags 0) and the same records, with no extent: it is read, but cannot vouch for its end.
- Records: ``length u32, crc32c(body) u32, body``; the body's first byte is its kind. SENT (``S``) before a batch
  goes out whenever its identity is new (first send, or a resend after an epoch bump renumbered it): the batch's
  journal id (unique across runs), producer id, epoch, topic, partition, base sequence, record count, the offset last
  acknowledged in that partition (-1: none known; the batch can only be stored after it), the spool sequences of its
  messages as runs ``(first, count)``, and an optional payload (the library's: the encoded batch, which it has
  nowhere else). FINISHED (``F``) once the batch's fate is known: acknowledged (its base offset; -2 for a duplicate's
  answer, whose offset is not given) or given up (-1). OFF (``X``): from here on batches may be sent unjournaled
  (idempotence ended). GAP (``G``, u64): records of this journal were lost while it ran (a file deleted or replaced
  under it): the spool sequences up to the one given may belong to batches it can no longer tell about.
- Pure: encoding and decoding only; no I/O here but listing the directory.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from bruce.wire import crc32c

SUFFIX = ".batches"
MAGIC = b"BSPB"
VERSION = 2
V1_HEADER_BYTES = 8
HEADER_BYTES = 32
EXTENT_AT = 8  # the extent's offset in the header
NEXT = 1  # state bit: the writer went on in the next file (this one takes no more records)
OFF = 2  # state bit: batches may have gone out unjournaled since this was set
UNREADABLE_TOP = 2**63  # the highest spool sequence of a file that could not be read: never known to be passed
_HEAD = struct.Struct(">4sHH")
_EXTENT = struct.Struct(">QQI")  # end, outstanding, state
_CRC = struct.Struct(">I")
FRAME = struct.Struct(">II")
_SENT = struct.Struct(">cQqhiiiqHI")  # kind, id, pid, epoch, partition, base sequence, count, known offset, topic, runs
_RUN = struct.Struct(">QI")
_FINISHED = struct.Struct(">cQq")  # kind, id, offset
_GAP = struct.Struct(">cq")  # kind, the highest spool sequence the lost records may name
_OFF = b"X"
_PAYLOAD = struct.Struct(">I")
KINDS = frozenset(b"SFXG")

TopicPartition = tuple[str, int]


class Extent(NamedTuple):
    """What a version 2 file's header vouches for (see the module rules)."""

    end: int
    outstanding: int
    state: int


@dataclass(slots=True)
class JournalEntry:
    """One batch's latest SENT record."""

    batch_id: int
    producer_id: int
    producer_epoch: int
    topic: str
    partition: int
    base_sequence: int
    count: int
    known_offset: int
    runs: list[tuple[int, int]]
    payload: bytes = b""
    file: int = 0
    finished: int | None = None  # the FINISHED record's offset (>= 0 or -2: acknowledged; -1: given up)

    @property
    def acknowledged(self) -> bool:
        return self.finished is not None and self.finished != -1

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)

    def sequences(self) -> Iterable[int]:
        for first, count in self.runs:
            yield from range(first, first + count)


@dataclass(slots=True)
class JournalState:
    """What :func:`~bruce.producer.idempotence.journal_reader.read_journal` found."""

    entries: list[JournalEntry] = field(default_factory=list)  # every batch's latest SENT record, by journal id
    acked: dict[TopicPartition, int] = field(default_factory=dict)  # highest offset known as acknowledged
    files: list[tuple[int, int]] = field(default_factory=list)  # (number, highest spool sequence named in it)
    complete: bool = False  # files exist, each vouched for whole, none says OFF: every send of the last run journaled
    next_id: int = 0  # batch ids continue after the highest seen
    next_file: int = 0
    damaged: int = 0  # damaged regions skipped (not counting a torn tail)
    problems: list[str] = field(default_factory=list)  # why the journal cannot vouch for itself, one per finding
    unvouched_top: int = -1  # GAP: spool sequences up to this one may belong to batches whose records were lost
    outstanding: int | None = 0  # the newest file's header: messages sent, not finished, when last written (None:
    # not known — the newest file is missing or its header damaged)


def file_name(number: int) -> str:
    return f"{number:020d}{SUFFIX}"


def journal_files(directory: Path) -> list[tuple[int, Path]]:
    """The journal files of ``directory``, oldest first."""
    found = []
    try:
        names = os.listdir(directory)
    except OSError:  # missing or unreadable: no journal
        return []
    for name in names:
        stem = name[: -len(SUFFIX)]
        if name.endswith(SUFFIX) and len(stem) == 20 and stem.isdigit():
            found.append((int(stem), directory / name))
    return sorted(found)


def runs_of(sequences: Iterable[int]) -> list[tuple[int, int]]:
    """Consecutive ``sequences`` as ``(first, count)`` runs (negative ones — not spooled — are left out)."""
    runs: list[tuple[int, int]] = []
    first = last = -2
    for s in sequences:
        if s < 0:
            continue
        if s == last + 1:
            last = s
            continue
        if first >= 0:
            runs.append((first, last - first + 1))
        first = last = s
    if first >= 0:
        runs.append((first, last - first + 1))
    return runs


# ---------------------------------------------------------------- header


def file_header(extent: Extent) -> bytes:
    """The 32-byte header of a version 2 file."""
    fields = _HEAD.pack(MAGIC, VERSION, 0) + _EXTENT.pack(*extent)
    return fields + _CRC.pack(crc32c(fields))


_FIXED = _HEAD.pack(MAGIC, VERSION, 0)
_FIXED_CRC = crc32c(_FIXED)


def encode_extent(end: int, outstanding: int, state: int) -> bytes:
    """The header's bytes from :data:`EXTENT_AT` on (the part the writer rewrites in place): the extent and the CRC
    of the whole header (continued from the fixed bytes' CRC)."""
    extent = _EXTENT.pack(end, outstanding, state)
    return extent + _CRC.pack(crc32c(extent, _FIXED_CRC))


def parse_header(data: bytes) -> tuple[int, Extent | None] | None:
    """``(version, extent)`` of a file's first bytes: version 2 with its extent (None when its CRC fails), version 1
    (no extent), or another version; None when the bytes are not a journal file's header at all."""
    if len(data) < V1_HEADER_BYTES or data[:4] != MAGIC:
        return None
    _, version, flags = _HEAD.unpack_from(data)
    if version == 1 and flags == 0:
        return 1, None
    if version != VERSION:
        return version, None
    if len(data) < HEADER_BYTES or flags or crc32c(data[:28]) != _CRC.unpack_from(data, 28)[0]:
        return VERSION, None
    return VERSION, Extent(*_EXTENT.unpack_from(data, EXTENT_AT))


# ---------------------------------------------------------------- records


def encode_sent(entry: JournalEntry) -> bytes:
    topic = entry.topic.encode("utf-8", "surrogateescape")
    body = b"".join(
        (
            _SENT.pack(
                b"S",
                entry.batch_id,
                entry.producer_id,
                entry.producer_epoch,
                entry.partition,
                entry.base_sequence,
                entry.count,
                entry.known_offset,
                len(topic),
                len(entry.runs),
            ),
            topic,
            *(_RUN.pack(first, count) for first, count in entry.runs),
            _PAYLOAD.pack(len(entry.payload)),
            entry.payload,
        )
    )
    return FRAME.pack(len(body), crc32c(body)) + body


def encode_off() -> bytes:
    return FRAME.pack(len(_OFF), crc32c(_OFF)) + _OFF


def encode_finished(batch_id: int, offset: int) -> bytes:
    body = _FINISHED.pack(b"F", batch_id, offset)
    return FRAME.pack(len(body), crc32c(body)) + body


def encode_gap(top: int) -> bytes:
    body = _GAP.pack(b"G", top)
    return FRAME.pack(len(body), crc32c(body)) + body


def decode_sent(body: bytes, number: int) -> JournalEntry:
    """A SENT record's body; ValueError or struct.error when it does not decode."""
    _, bid, pid, epoch, partition, base, count, known, tlen, nruns = _SENT.unpack_from(body)
    at = _SENT.size
    topic = body[at : at + tlen].decode("utf-8", "surrogateescape")
    at += tlen
    if at + nruns * _RUN.size > len(body):
        raise ValueError("the runs run past the record")
    runs = [_RUN.unpack_from(body, at + i * _RUN.size) for i in range(nruns)]
    at += nruns * _RUN.size
    (plen,) = _PAYLOAD.unpack_from(body, at)
    payload = body[at + _PAYLOAD.size : at + _PAYLOAD.size + plen]
    if len(payload) != plen or at + _PAYLOAD.size + plen != len(body):
        raise ValueError("sizes do not add up")
    return JournalEntry(bid, pid, epoch, topic, partition, base, count, known, runs, payload, number)


def decode_finished(body: bytes) -> tuple[int, int]:
    """``(batch id, offset)`` of a FINISHED record's body."""
    if len(body) != _FINISHED.size:
        raise ValueError("a FINISHED record of the wrong size")
    _, bid, offset = _FINISHED.unpack(body)
    return bid, offset


def decode_gap(body: bytes) -> int:
    if len(body) != _GAP.size:
        raise ValueError("a GAP record of the wrong size")
    top: int = _GAP.unpack(body)[1]
    return top
