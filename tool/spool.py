"""``bruce-wire spool DIR``: what bruce's durable spool and its batch journal hold, read with the daemon's own readers.

Rules:
- Read only: nothing in DIR is changed, locked or truncated (a running daemon may own it).
- Segments (``NNN.seg``) through :func:`bruce.proxy.scan_segment`, their done files through
  :func:`bruce.proxy.parse_done`; the batch journal (``*.batches``) through :func:`bruce.producer.read_journal`.
  The formats are theirs, so a change to them carries over here.
- Per segment: records readable, done, held (not done), corrupt regions, a torn tail. The journal: batches awaiting
  settlement (sent, fate unknown), acknowledged and given up. ``--records`` lists each held record.
- Exit status 0 when everything read cleanly, 1 when something was corrupt or damaged, 2 when DIR is not a directory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from bruce.producer import read_journal
from bruce.proxy import parse_done, scan_segment

from .jsonout import JsonWriter
from .records import iso_ms, text_or_base64


def _done(bitmap: bytes, index: int) -> bool:
    return 0 <= index < len(bitmap) * 8 and bool(bitmap[index >> 3] & (1 << (index & 7)))


def segments(directory: Path, *, records: bool) -> tuple[list[dict[str, Any]], bool]:
    """One summary per segment, oldest first; whether any was damaged."""
    files = sorted(p for p in directory.glob("*.seg") if p.stem.isdigit())
    out: list[dict[str, Any]] = []
    damaged = False
    for i, path in enumerate(files):
        scan = scan_segment(path.read_bytes(), name_base=int(path.stem), last=i == len(files) - 1)
        done_path = path.with_name(path.name + ".done")
        done = parse_done(done_path.read_bytes()) if done_path.exists() else None
        bitmap = done.bitmap if done is not None else b""
        held = [r for r in scan.records if not _done(bitmap, r.sequence - scan.base_sequence)]
        entry: dict[str, Any] = {
            "segment": path.name,
            "base_sequence": scan.base_sequence,
            "created": iso_ms(scan.created_ms) if scan.created_ms is not None else None,
            "records": len(scan.records),
            "done": len(scan.records) - len(held),
            "held": len(held),
            "done_file": "valid" if done is not None else ("invalid" if done_path.exists() else "none"),
            "corrupt": [{"offset": c.offset, "count": c.count, "detail": c.detail} for c in scan.corrupt],
        }
        if scan.truncate_at is not None:
            entry["torn_tail_at"] = scan.truncate_at
        if scan.unreadable:
            entry["unreadable"] = scan.unreadable
        if records:
            entry["held_records"] = [
                {
                    "sequence": r.sequence,
                    "topic": text_or_base64(r.topic),
                    "partition_key": r.partition_key,
                    "key": text_or_base64(r.key),
                    "payload": text_or_base64(r.value),
                    "ts": r.timestamp,
                    "ts_iso": iso_ms(r.timestamp),
                }
                for r in held
            ]
        damaged = damaged or bool(scan.corrupt) or scan.unreadable is not None or not scan.header_ok
        out.append(entry)
    return out, damaged


def journal(directory: Path) -> dict[str, Any]:
    state = read_journal(directory)
    waiting = [e for e in state.entries if e.finished is None]
    return {
        "files": len(state.files),
        "complete": state.complete,
        "damaged_records": state.damaged,
        "batches": len(state.entries),
        "acknowledged": sum(1 for e in state.entries if e.finished is not None and e.finished != -1),
        "given_up": sum(1 for e in state.entries if e.finished == -1),
        "awaiting_settlement": [
            {
                "batch_id": e.batch_id,
                "topic": e.topic,
                "partition": e.partition,
                "producer_id": e.producer_id,
                "producer_epoch": e.producer_epoch,
                "base_sequence": e.base_sequence,
                "count": e.count,
                "spool_runs": [list(r) for r in e.runs],
            }
            for e in waiting
        ],
    }


def main(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    if not directory.is_dir():
        sys.stderr.write(f"bruce-wire: {directory}: not a directory\n")
        return 2
    segs, damaged = segments(directory, records=args.records)
    batches = journal(directory)
    damaged = damaged or bool(batches["damaged_records"])
    if args.json:
        writer = JsonWriter(sys.stdout)
        for s in segs:
            writer.line(s)
        writer.line({"journal": batches})
        return 1 if damaged else 0
    held = sum(s["held"] for s in segs)
    print(f"{directory}: {len(segs)} segments, {sum(s['records'] for s in segs)} records, {held} held (not done)")
    for s in segs:
        line = (
            f"  {s['segment']}: {s['records']} records, {s['done']} done, {s['held']} held, done file {s['done_file']}"
        )
        if s["corrupt"]:
            line += f", {len(s['corrupt'])} corrupt regions"
        if "torn_tail_at" in s:
            line += f", torn tail at byte {s['torn_tail_at']}"
        print(line)
        for r in s.get("held_records", []):
            print(f"    {r['sequence']} {r['ts_iso']} topic={r['topic']} key={r['key']} value={r['payload']}")
    print(
        f"batch journal: {batches['files']} files, {batches['batches']} batches: {batches['acknowledged']} "
        f"acknowledged, {batches['given_up']} given up, {len(batches['awaiting_settlement'])} awaiting settlement"
    )
    for b in batches["awaiting_settlement"]:
        print(
            f"  batch {b['batch_id']}: {b['topic']}[{b['partition']}] producer {b['producer_id']} epoch "
            f"{b['producer_epoch']} sequence {b['base_sequence']} ({b['count']} records)"
        )
    return 1 if damaged else 0
