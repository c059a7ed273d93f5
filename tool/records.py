"""The records of a record set (a Produce request's or a Fetch answer's bytes for one partition), batch by batch, as
plain values for the outputs.

Rules:
- Every magic and codec, through bruce.wire's decoders: magic 2 batches (producer id, epoch, base sequence, the
  transactional and control flags), magic 0/1 message sets (a compressed wrapper is one batch with its codec; a run
  of uncompressed messages is one batch). Control batches are decoded: COMMIT or ABORT, and the coordinator epoch.
- Lazy and bounded: :func:`batches` yields one batch at a time, so a 100,000-record Fetch answer is never held
  decoded as a whole; a batch that does not decode (bad CRC, corrupt compression) is one :class:`LogBatch` with
  ``error`` and the next one is read. A batch cut at the end of the set (normal in a Fetch answer) is reported as
  ``partial``.
- Record values are plain: :func:`record_value` gives kcat's ``-J`` names (``topic``, ``partition``, ``offset``,
  ``ts``, ``key``, ``payload``, ``headers``) with timestamps in milliseconds and ISO 8601 (``ts_iso``); bytes that are
  UTF-8 text stay text, others are ``{"base64": ...}`` (:func:`text_or_base64`).
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from json.encoder import encode_basestring  # the C string encoder when the json module has its speedups
from typing import Any

from bruce.wire import Codec, MalformedInput, Record, decode_message_set, decode_record_batch, entry_spans

from .sequences import Sequences

_CODECS = {c.value: c.name.lower() for c in Codec}
_CONTROL_TYPES = {0: "ABORT", 1: "COMMIT"}
_ENTRY_ATTRIBUTES = 17  # offset int64, size int32, crc int32, magic int8: then the attributes of magic 0/1
_TRANSACTIONAL = 0x10
_CONTROL = 0x20


@dataclass(slots=True)
class LogBatch:
    """One batch (magic 2), compressed wrapper or run of messages (magic 0/1) of a record set."""

    position: int  # byte position in the record set
    size: int
    magic: int
    codec: str = "none"
    base_offset: int = 0
    records: list[Record] = field(default_factory=list)
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    transactional: bool = False
    control: dict[str, Any] | None = None  # COMMIT/ABORT marker
    partition_leader_epoch: int = -1
    crc: int | None = None
    sequence_note: str | None = None  # a gap or repeat in its producer's sequence
    error: str | None = None
    partial: bool = False

    def header(self) -> dict[str, Any]:
        """The batch's fields (without its records), for the outputs."""
        out: dict[str, Any] = {"position": self.position, "size": self.size, "magic": self.magic}
        if self.partial:
            out["partial"] = True
            return out
        if self.error is not None:
            out["error"] = self.error
            return out
        out.update(base_offset=self.base_offset, codec=self.codec, count=len(self.records))
        if self.magic == 2:
            out.update(
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                base_sequence=self.base_sequence,
                transactional=self.transactional,
                partition_leader_epoch=self.partition_leader_epoch,
                crc=self.crc,
            )
        if self.control is not None:
            out["control"] = self.control
        if self.sequence_note is not None:
            out["sequence"] = self.sequence_note
        return out


def batches(
    data: bytes,
    *,
    topic: str | None = None,
    partition: int | None = None,
    sequences: Sequences | None = None,
    scope: str = "log",
) -> Iterator[LogBatch]:
    """The batches of a record set, one at a time (see the module's rules)."""
    view = memoryview(data)
    run_start = run_end = -1
    last = 0  # where the complete entries end
    try:
        for start, end, magic in entry_spans(data):
            if magic in (0, 1) and not data[start + _ENTRY_ATTRIBUTES] & 0x07:
                if run_start < 0:
                    run_start = start
                run_end = end
                continue
            if run_start >= 0:
                yield _message_run(view, run_start, run_end)
                run_start = -1
            if magic == 2:
                yield _batch_v2(view, start, end, (scope, topic, partition), sequences)
            elif magic in (0, 1):
                yield _wrapper(view, start, end, magic)
            else:
                yield LogBatch(start, end - start, magic, error=f"unknown magic {magic}")
            last = end
        if run_start >= 0:
            yield _message_run(view, run_start, run_end)
            last = run_end
    except MalformedInput as e:  # an entry whose size field is impossible: the rest cannot be framed
        if run_start >= 0:
            yield _message_run(view, run_start, run_end)
            last = run_end
        yield LogBatch(last, len(data) - last, -1, error=str(e))
        return
    if last < len(data):
        yield LogBatch(last, len(data) - last, -1, partial=True)


def _message_run(view: memoryview, start: int, end: int) -> LogBatch:
    magic = view[start + 16]
    try:
        records = decode_message_set(view[start:end])
    except MalformedInput as e:
        return LogBatch(start, end - start, magic, error=str(e))
    return LogBatch(start, end - start, magic, base_offset=records[0].offset if records else 0, records=records)


def _wrapper(view: memoryview, start: int, end: int, magic: int) -> LogBatch:
    codec = _CODECS.get(view[start + _ENTRY_ATTRIBUTES] & 0x07, "unknown")
    try:
        records = decode_message_set(view[start:end])
    except MalformedInput as e:
        return LogBatch(start, end - start, magic, codec=codec, error=str(e))
    base = records[0].offset if records else 0
    return LogBatch(start, end - start, magic, codec=codec, base_offset=base, records=records)


def _batch_v2(
    view: memoryview, start: int, end: int, where: tuple[str, str | None, int | None], sequences: Sequences | None
) -> LogBatch:
    try:
        b = decode_record_batch(view[start:end])
    except MalformedInput as e:
        return LogBatch(start, end - start, 2, error=str(e))
    out = LogBatch(
        start,
        end - start,
        2,
        codec=_CODECS.get(b.codec, "unknown"),
        base_offset=b.base_offset,
        records=list(b.records),
        producer_id=b.producer_id,
        producer_epoch=b.producer_epoch,
        base_sequence=b.base_sequence,
        transactional=b.is_transactional,
        partition_leader_epoch=b.partition_leader_epoch,
        crc=b.crc,
    )
    if b.is_control:
        out.control = _control(b.records)
        out.records = []
    elif sequences is not None and b.producer_id >= 0 and b.base_sequence >= 0:
        offset = b.base_offset if where[0] == "log" else -1  # a request's batches have no log offset yet
        out.sequence_note = sequences.observe(
            (b.producer_id, *where), b.producer_epoch, b.base_sequence, len(b.records), offset
        )
    return out


def _control(records: tuple[Record, ...]) -> dict[str, Any]:
    """A control batch's marker: COMMIT or ABORT and the coordinator epoch (key: version, type; value: version,
    coordinator epoch)."""
    if not records or records[0].key is None or len(records[0].key) < 4:
        return {"type": "UNKNOWN"}
    version, kind = struct.unpack_from(">hh", records[0].key)
    out: dict[str, Any] = {"type": _CONTROL_TYPES.get(kind, f"UNKNOWN({kind})"), "version": version}
    value = records[0].value
    if value is not None and len(value) >= 6:
        out["coordinator_epoch"] = struct.unpack_from(">hi", value)[1]
    out["offset"] = records[0].offset
    return out


def iso_ms(ms: int) -> str | None:
    """Epoch milliseconds as ISO 8601 (UTC, milliseconds); None for -1 (no timestamp) or out of range."""
    if ms < 0:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


def text_or_base64(data: bytes | None) -> str | dict[str, str] | None:
    """UTF-8 text as itself; other bytes marked and base64-encoded; None stays None."""
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


_quote: Callable[[str], str] = encode_basestring  # the json module's C string encoder (UTF-8 kept, not escaped)
_iso_cache: dict[int, str | None] = {}


def _json_bytes(data: bytes | None) -> str:
    if data is None:
        return "null"
    try:
        return _quote(data.decode("utf-8"))
    except UnicodeDecodeError:
        return '{"base64":"' + base64.b64encode(data).decode("ascii") + '"}'


def record_json(r: Record, topic_json: str, partition_json: str) -> str:
    """:func:`record_value` as JSON text, written directly: the hot path of ``--json`` (equal to encoding
    :func:`record_value`, tests/tool/test_records.py)."""
    ts = r.timestamp
    iso = _iso_cache.get(ts)
    if iso is None:
        if len(_iso_cache) > 4096:
            _iso_cache.clear()
        iso = _iso_cache[ts] = _quote(iso_ms(ts) or "") if ts >= 0 else "null"
    headers = ",".join(f"{_quote(k)},{_json_bytes(v)}" for k, v in r.headers) if r.headers else ""
    return (
        f'{{"topic":{topic_json},"partition":{partition_json},"offset":{r.offset},'
        f'"tstype":"{"log_append" if r.timestamp_type else "create"}","ts":{ts},"ts_iso":{iso},'
        f'"key":{_json_bytes(r.key)},"payload":{_json_bytes(r.value)},"headers":[{headers}]}}'
    )


def record_value(r: Record, topic: str | None, partition: int | None) -> dict[str, Any]:
    """A record in kcat's ``-J`` names."""
    headers: list[Any] = []
    for k, v in r.headers:
        headers += (k, text_or_base64(v))
    return {
        "topic": topic,
        "partition": partition,
        "offset": r.offset,
        "tstype": "log_append" if r.timestamp_type else "create",
        "ts": r.timestamp,
        "ts_iso": iso_ms(r.timestamp),
        "key": text_or_base64(r.key),
        "payload": text_or_base64(r.value),
        "headers": headers,
    }
