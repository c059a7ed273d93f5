"""Damage to a file, generated for the sweeps over what the daemon and the library read at start
(tests/proxy/spool/test_damage_sweep.py, tests/producer/test_state_sweep.py).

Rules: for a file of length-prefixed frames (``length u32, crc u32, body``: spool segments after their 28-byte header,
journal files after their 32-byte one) — cut at every frame boundary and in the middle of every frame, a bit flipped
in each frame's length (high and low byte), CRC and body, and the header cut at every 4th byte and flipped at every
byte; for any other file every byte cut at and flipped; and the file deleted.
"""

from __future__ import annotations

import shutil
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from bruce.producer.idempotence.recovery import Settlement
from bruce.wire import decode_record_batch


def frames(data: bytes, start: int) -> list[int]:
    """Where each length-prefixed frame begins (``length u32, crc u32, body``), from ``start``."""
    starts = []
    while start + 8 <= len(data):
        starts.append(start)
        start += 8 + struct.unpack_from(">I", data, start)[0]
    return starts


def damages(name: str, data: bytes) -> Iterator[tuple[str, bytes | None]]:
    """Each damage of one file's ``data``: (what, the bytes left; None: the file deleted)."""
    yield "deleted", None
    if name.endswith((".seg", ".batches")):
        header = 28 if name.endswith(".seg") else 32
        starts = frames(data, header)
        for at in starts:
            yield f"cut at the record at {at}", data[:at]
            yield f"cut in the record at {at}", data[: at + 11]
            for offset in (0, 3, 5, 12):  # length (high, low), CRC, body
                flipped = bytearray(data)
                flipped[at + offset] ^= 0x10
                yield f"bit flipped at {at + offset}", bytes(flipped)
        cuts, points = range(0, header, 4), range(header)  # a header: cut at every field boundary
    else:
        cuts = points = range(len(data))
    for at in cuts:
        yield f"cut at byte {at}", data[:at]
    for at in points:
        flipped = bytearray(data)
        flipped[at] ^= 0x01
        yield f"bit flipped at byte {at}", bytes(flipped)


def damaged_copies(crashed: Path, work: Path, name: str) -> Iterator[str]:
    """For each damage of ``crashed``'s file ``name``: ``work`` made a fresh copy of ``crashed`` with that damage done
    to the file, and the case's name (``name what``)."""
    for what, damaged in damages(name, (crashed / name).read_bytes()):
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(crashed, work)
        if damaged is None:
            (work / name).unlink()
        else:
            (work / name).write_bytes(damaged)
        yield f"{name} {what}"


class TruthSettler:
    """Settling as a log read answers it, for the sweeps (a subclass names ``stored``, the batch ids in the broker's
    log before the crash): such a batch is found; another one is resent when its messages can be rebuilt (their
    values, numbers, are noted in ``resent``), else it falls back."""

    stored: ClassVar[set[int]] = set()
    resent: ClassVar[list[int]] = []

    def __init__(self, producer: Any, config: Any, rebuild: Callable[[Any], bytes | None], *, deadline: float) -> None:
        self.rebuild = rebuild

    async def settle(self, entries: list[Any], acked: dict[Any, int], journaled: Any = None) -> Settlement:
        out = Settlement()
        for entry in entries:
            data = None if entry.batch_id in self.stored else self.rebuild(entry)
            if entry.batch_id in self.stored:
                out.found.append(entry)
            elif data is None:
                out.fallback.append(entry)
            else:
                out.resent.append(entry)
                self.resent.extend(int(r.value) for r in decode_record_batch(data).records if r.value)
        return out
