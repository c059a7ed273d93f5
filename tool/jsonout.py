"""Newline-delimited JSON: one object per line, written as it is produced.

Rules:
- Streamed: a :class:`~bruce.tool.tree.RecordSet` inside a value is decoded and written batch by batch, record by
  record, never built as one document, so a 100,000-record Fetch answer costs one batch of memory.
- Plain values only (dicts, lists, str, int, float, bool, None, RecordSet); bytes were made text or base64 before.
- Each record is kcat's ``-J`` object (``topic``, ``partition``, ``offset``, ``tstype``, ``ts``, ``ts_iso``, ``key``,
  ``payload``, ``headers``: a flat list of names and values), written straight from the decoded columns
  (:class:`~bruce.tool.records.RecordLists`); each batch is its header fields followed by ``"records": [...]``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from json.encoder import encode_basestring  # the C string encoder when the json module has its speedups
from typing import Any, TextIO

from .records import LogBatch, RecordLists, batches, iso_ms
from .sequences import Sequences
from .tree import RecordSet

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_quote: Callable[[str], str] = encode_basestring  # UTF-8 kept, not escaped
_iso_cache: dict[int, str] = {}


class JsonWriter:
    """Writes values as JSON lines on ``out``."""

    def __init__(self, out: TextIO, sequences: Sequences | None = None, *, flush: bool = False) -> None:
        self.out = out
        self.sequences = sequences
        self.flush = flush
        self.failed_batches = 0

    def line(self, value: dict[str, Any]) -> None:
        self._write(value)
        self.out.write("\n")
        if self.flush:
            self.out.flush()

    def _write(self, value: Any) -> None:
        write = self.out.write
        if isinstance(value, dict):
            write("{")
            first = True
            for key, item in value.items():
                if not first:
                    write(",")
                first = False
                write(_dumps(key))
                write(":")
                self._write(item)
            write("}")
        elif isinstance(value, list):
            write("[")
            for i, item in enumerate(value):
                if i:
                    write(",")
                self._write(item)
            write("]")
        elif isinstance(value, RecordSet):
            self._records(value)
        else:
            write(_dumps(value))

    def _records(self, rs: RecordSet) -> None:
        write = self.out.write
        write("[")
        found = batches(rs.data, topic=rs.topic, partition=rs.partition, sequences=self.sequences, scope=rs.scope)
        for i, batch in enumerate(found):
            if i:
                write(",")
            self._batch(batch, rs.topic, rs.partition)
        write("]")

    def _batch(self, batch: LogBatch, topic: str | None, partition: int | None) -> None:
        if batch.error is not None:
            self.failed_batches += 1
        write = self.out.write
        write(_dumps(batch.header())[:-1])
        write(',"records":[')
        if batch.rows is not None and batch.count:
            write(records_json(batch.rows, batch.first, batch.end, _dumps(topic), _dumps(partition)))
        write("]}")

    def batch_line(self, head: dict[str, Any], batch: LogBatch) -> None:
        """One line: ``head``'s fields, then ``"batch"``: the batch and its records."""
        self.out.write(_dumps(head)[:-1] + ',"batch":')
        self._batch(batch, None, None)
        self.out.write("}\n")


def _bytes_json(value: str | bytes | None) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return _quote(value)
    return '{"base64":"' + base64.b64encode(value).decode("ascii") + '"}'


def _iso_json(ts: int) -> str:
    """A timestamp's ``ts_iso`` as JSON (cached: a batch's records mostly share a few milliseconds)."""
    iso = _iso_cache.get(ts)
    if iso is None:
        if len(_iso_cache) > 4096:
            _iso_cache.clear()
        text = iso_ms(ts)
        iso = _iso_cache[ts] = "null" if text is None else _quote(text)
    return iso


def records_json(rows: RecordLists, first: int, end: int, topic_json: str, partition_json: str) -> str:
    """Records ``first`` to ``end`` of ``rows`` as kcat's ``-J`` objects, comma-separated: the hot path of
    ``--json``."""
    offsets, stamps, types, keys, values = rows.offsets, rows.timestamps, rows.types, rows.keys, rows.values
    header_ends, header_keys, header_values = rows.header_ends, rows.header_keys, rows.header_values
    head = f'{{"topic":{topic_json},"partition":{partition_json},"offset":'
    quote, other, iso = _quote, _bytes_json, _iso_json
    out = []
    for i in range(first, end):
        ts, key, value = stamps[i], keys[i], values[i]
        headers = ""
        if header_ends[i] != header_ends[i + 1]:
            headers = ",".join(
                f"{other(header_keys[h])},{other(header_values[h])}" for h in range(header_ends[i], header_ends[i + 1])
            )
        out.append(
            f'{head}{offsets[i]},"tstype":"{"log_append" if types[i] else "create"}","ts":{ts},"ts_iso":{iso(ts)},'
            f'"key":{quote(key) if type(key) is str else other(key)},'
            f'"payload":{quote(value) if type(value) is str else other(value)},"headers":[{headers}]}}'
        )
    return ",".join(out)
