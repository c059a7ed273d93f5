"""Text for people: one heading line per request or answer, its body indented below, one line per record.

Rules:
- Generic over the tree (:mod:`bruce.tool.tree`): ``key: value`` lines, nested structs and lists indented, list
  items marked ``-``. Records are decoded batch by batch as they are written (bounded, like the JSON output).
- Long values are cut at ``width`` characters with the full size said (``--json`` gives everything).
- Written as produced; ``flush`` after each message for live use.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from .records import LogBatch, batches, iso_ms, text_or_base64
from .sequences import Sequences
from .tree import RecordSet

WIDTH = 200


def _short(value: Any, width: int) -> str:
    if isinstance(value, dict) and set(value) == {"base64"}:
        text = "base64:" + value["base64"]
    elif isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
    else:
        text = json.dumps(value) if not isinstance(value, int | float) or isinstance(value, bool) else str(value)
    return text if len(text) <= width else f"{text[:width]}… ({len(text)} chars)"


class TextWriter:
    """Writes headings and trees as indented text on ``out``."""

    def __init__(self, out: TextIO, sequences: Sequences | None = None, *, flush: bool = False, width: int = WIDTH):
        self.out = out
        self.sequences = sequences
        self.flush = flush
        self.width = width
        self.failed_batches = 0

    def message(self, heading: str, tree: dict[str, Any] | None, notes: list[str]) -> None:
        self.out.write(heading + "\n")
        for note in notes:
            self.out.write(f"  ! {note}\n")
        if tree:
            self._dict(tree, "  ")
        if self.flush:
            self.out.flush()

    def _dict(self, d: dict[str, Any], indent: str, first_prefix: str | None = None) -> None:
        for i, (key, value) in enumerate(d.items()):
            prefix = first_prefix if i == 0 and first_prefix is not None else indent
            self._item(prefix, indent, key, value)

    def _item(self, prefix: str, indent: str, key: str, value: Any) -> None:
        write = self.out.write
        if isinstance(value, RecordSet):
            write(f"{prefix}{key}: {len(value.data)} bytes\n")
            self._records(value, indent + "  ")
        elif isinstance(value, dict) and set(value) != {"base64"}:
            write(f"{prefix}{key}:\n")
            self._dict(value, indent + "  ")
        elif isinstance(value, list) and value and any(isinstance(v, dict | list | RecordSet) for v in value):
            write(f"{prefix}{key}:\n")
            for v in value:
                flat = _flat(v, self.width)
                if flat is not None:
                    write(f"{indent}  - {flat}\n")
                elif isinstance(v, dict):
                    self._dict(v, indent + "    ", indent + "  - ")
                else:
                    write(f"{indent}  - {_short(v, self.width)}\n")
        else:
            write(f"{prefix}{key}: {_short(value, self.width)}\n")

    def _records(self, rs: RecordSet, indent: str) -> None:
        found = batches(rs.data, topic=rs.topic, partition=rs.partition, sequences=self.sequences, scope=rs.scope)
        for batch in found:
            self.batch(batch, indent)

    def batch(self, batch: LogBatch, indent: str) -> None:
        """A batch's line, then one line per record."""
        write = self.out.write
        write(f"{indent}{_batch_line(batch)}\n")
        if batch.error is not None:
            self.failed_batches += 1
        rows = batch.rows
        if rows is None:
            return
        for i in range(batch.first, batch.end):
            ts = rows.timestamps[i]
            line = (
                f"{indent}  {rows.offsets[i]} {iso_ms(ts) or '-'} ({ts}) key={_short(text_or_base64(rows.keys[i]), 60)}"
            )
            line += f" value={_short(text_or_base64(rows.values[i]), self.width)}"
            start, end = rows.header_ends[i], rows.header_ends[i + 1]
            if start != end:
                shown = (
                    f"{rows.header_keys[h]}={_short(text_or_base64(rows.header_values[h]), 60)}"
                    for h in range(start, end)
                )
                line += f" headers=[{', '.join(shown)}]"
            write(line + "\n")


def _flat(value: Any, width: int) -> str | None:
    """A struct of scalars (and lists of scalars) on one line (``key=value ...``) when it is short, else None."""
    if not isinstance(value, dict) or not all(
        _scalar(v) or (isinstance(v, list) and all(map(_scalar, v))) for v in value.values()
    ):
        return None
    line = " ".join(f"{k}={_short(v, width)}" for k, v in value.items())
    return line if len(line) <= 120 else None


def _scalar(value: Any) -> bool:
    return not isinstance(value, dict | list | RecordSet) or (isinstance(value, dict) and set(value) == {"base64"})


def _batch_line(b: LogBatch) -> str:
    if b.partial:
        return f"partial batch at byte {b.position}: {b.size} bytes (cut by the fetch size)"
    if b.error is not None:
        return f"batch at byte {b.position} ({b.size} bytes, magic {b.magic}) does not decode: {b.error}"
    line = f"batch at byte {b.position}: magic {b.magic}, {b.codec}, base offset {b.base_offset}, {b.count} records"
    if b.magic == 2:
        line += f", crc {b.crc:#010x}" if b.crc is not None else ""
        if b.producer_id >= 0:
            line += f", producer {b.producer_id} epoch {b.producer_epoch} sequence {b.base_sequence}"
        if b.transactional:
            line += ", transactional"
    if b.control is not None:
        epoch = b.control.get("coordinator_epoch")
        line += f", control {b.control['type']}" + (f" (coordinator epoch {epoch})" if epoch is not None else "")
    if b.sequence_note is not None:
        line += f" ! {b.sequence_note}"
    return line
