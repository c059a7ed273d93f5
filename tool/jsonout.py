"""Newline-delimited JSON: one object per line, written as it is produced.

Rules:
- Streamed: a :class:`~bruce.tool.tree.RecordSet` inside a value is decoded and written batch by batch, record by
  record, never built as one document, so a 100,000-record Fetch answer costs one batch of memory.
- Plain values only (dicts, lists, str, int, float, bool, None, RecordSet); bytes were made text or base64 before.
- Each record is kcat's ``-J`` object (:func:`bruce.tool.records.record_value`); each batch is its header fields
  followed by ``"records": [...]``.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from .records import LogBatch, batches, record_json
from .sequences import Sequences
from .tree import RecordSet

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


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
        t, p = _dumps(topic), _dumps(partition)
        write(",".join([record_json(r, t, p) for r in batch.records]))
        write("]}")

    def batch_line(self, head: dict[str, Any], batch: LogBatch) -> None:
        """One line: ``head``'s fields, then ``"batch"``: the batch and its records."""
        self.out.write(_dumps(head)[:-1] + ',"batch":')
        self._batch(batch, None, None)
        self.out.write("}\n")
