"""The batch journal's files and records (:mod:`bruce.producer.journal` writes them): their format, encoding,
and :func:`read_journal`, which reads them back at the next start.

Rules:
- Files ``NNNNNNNNNNNNNNNNNNNN.batches`` (20 digits: the file's number, +1 per new file) in ``directory``; any other
  name is ignored (the daemon's spool directory holds its segments beside them). A file is an 8-byte header (``BSPB``,
  version 1, flags 0) then records back to back: ``length u32, crc32c(body) u32, body``; big-endian.
- Record kinds. SENT (``S``), written by :meth:`bruce.producer.journal.Journal.sent` before a batch goes out
  whenever its identity is new (first send, or a resend after an epoch bump renumbered it): the batch's journal id
  (unique across runs), producer id, epoch, topic, partition, base sequence, record count, the offset last
  acknowledged in that partition (-1: none known; the batch can only be stored after it), the spool sequences of its
  messages as runs ``(first, count)``, and an optional payload (the library's: the encoded batch, which it has
  nowhere else). FINISHED (``F``), written by :meth:`bruce.producer.journal.Journal.finished` once the batch's fate
  is known: acknowledged (its base offset; -2 for a duplicate's answer, whose offset is not given) or given up (-1).
  OFF (``X``): from here on batches may be sent unjournaled (idempotence ended). One SENT and one FINISHED per batch,
  never one per message.
- :func:`read_journal` (recovery) reads every file, stops a file at a damaged record (a torn tail is the normal end
  of a crash) and returns each batch's latest SENT record with its FINISHED offset (None: none), per partition the
  highest offset known as acknowledged, and whether every send was journaled (files exist and none says OFF).
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bruce.wire import crc32c

log = logging.getLogger("bruce.journal")

SUFFIX = ".batches"
MAGIC = b"BSPB"
VERSION = 1
_HEAD = struct.Struct(">4sHH")
HEADER_BYTES = _HEAD.size
_FRAME = struct.Struct(">II")
_SENT = struct.Struct(">cQqhiiiqHI")  # kind, id, pid, epoch, partition, base sequence, count, known offset, topic, runs
_RUN = struct.Struct(">QI")
_FINISHED = struct.Struct(">cQq")  # kind, id, offset
_OFF = b"X"
_PAYLOAD = struct.Struct(">I")

TopicPartition = tuple[str, int]


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
    """What :func:`read_journal` found."""

    entries: list[JournalEntry] = field(default_factory=list)  # every batch's latest SENT record, by journal id
    acked: dict[TopicPartition, int] = field(default_factory=dict)  # highest offset known as acknowledged
    files: list[tuple[int, int]] = field(default_factory=list)  # (number, highest spool sequence named in it)
    complete: bool = False  # files exist and none says OFF: every send of the last run was journaled
    next_id: int = 0  # batch ids continue after the highest seen
    next_file: int = 0
    damaged: int = 0  # damaged records skipped (not counting a torn tail)


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
    return _FRAME.pack(len(body), crc32c(body)) + body


def file_header() -> bytes:
    """The header every journal file starts with."""
    return _HEAD.pack(MAGIC, VERSION, 0)


def encode_off() -> bytes:
    return _FRAME.pack(len(_OFF), crc32c(_OFF)) + _OFF


def encode_finished(batch_id: int, offset: int) -> bytes:
    body = _FINISHED.pack(b"F", batch_id, offset)
    return _FRAME.pack(len(body), crc32c(body)) + body


def _decode_sent(body: bytes, number: int) -> JournalEntry:
    _, bid, pid, epoch, partition, base, count, known, tlen, nruns = _SENT.unpack_from(body)
    at = _SENT.size
    topic = body[at : at + tlen].decode("utf-8", "surrogateescape")
    at += tlen
    runs = [_RUN.unpack_from(body, at + i * _RUN.size) for i in range(nruns)]
    at += nruns * _RUN.size
    (plen,) = _PAYLOAD.unpack_from(body, at)
    payload = body[at + _PAYLOAD.size : at + _PAYLOAD.size + plen]
    if len(payload) != plen or at + _PAYLOAD.size + plen != len(body):
        raise ValueError("sizes do not add up")
    return JournalEntry(bid, pid, epoch, topic, partition, base, count, known, runs, payload, number)


def read_journal(directory: Path) -> JournalState:
    """The journal's state after a stop or a crash (see the module rules)."""
    state = JournalState()
    latest: dict[int, JournalEntry] = {}
    finished: dict[int, int] = {}
    listed = journal_files(directory)
    state.complete = bool(listed)
    for number, path in listed:
        state.next_file = number + 1
        top = -1
        try:
            data = path.read_bytes()
        except OSError as e:
            log.error("journal %s cannot be read (%s); its batches are replayed as possible duplicates", path, e)
            state.complete = False
            state.files.append((number, 2**63))
            continue
        if len(data) < _HEAD.size or data[:4] != MAGIC or _HEAD.unpack_from(data)[1:] != (VERSION, 0):
            if data:
                log.error("journal %s: not a version %d journal file; ignored", path, VERSION)
                state.complete = False
            state.files.append((number, -1))
            continue
        at = _HEAD.size
        while at + _FRAME.size <= len(data):
            length, crc = _FRAME.unpack_from(data, at)
            body = data[at + _FRAME.size : at + _FRAME.size + length]
            if len(body) != length or crc32c(body) != crc:
                if at + _FRAME.size + length < len(data):
                    state.damaged += 1
                    state.complete = False  # what followed is unknown: replays are possible duplicates
                    log.error("journal %s offset %d: a damaged record; the rest of the file is not read", path, at)
                break  # a torn tail (the process died while writing it) or damage: nothing after it is trusted
            at += _FRAME.size + length
            try:
                if body[:1] == b"S":
                    entry = _decode_sent(body, number)
                    latest[entry.batch_id] = entry
                    state.next_id = max(state.next_id, entry.batch_id + 1)
                    if entry.runs:
                        top = max(top, entry.runs[-1][0] + entry.runs[-1][1] - 1)
                elif body[:1] == b"F":
                    _, bid, offset = _FINISHED.unpack_from(body)
                    finished[bid] = offset
                elif body[:1] == _OFF:
                    state.complete = False
                else:
                    raise ValueError(f"unknown record kind {body[:1]!r}")
            except (struct.error, ValueError) as e:
                state.damaged += 1
                state.complete = False
                log.error("journal %s offset %d: a record that does not decode (%s); skipped", path, at, e)
        state.files.append((number, top))
    for bid, entry in latest.items():
        entry.finished = finished.get(bid)
        best = max(entry.known_offset, -1 if entry.finished is None else entry.finished)
        if best >= 0:
            state.acked[entry.tp] = max(state.acked.get(entry.tp, -1), best)
    state.entries = sorted(latest.values(), key=lambda e: e.batch_id)
    return state
