"""Kafka framing of one direction of a TCP stream: size-prefixed frames cut from the reassembled bytes, what a plausible
frame start looks like, and finding one again after a hole in the capture.

Rules:
- A frame is an int32 size then that many bytes; frames larger than ``max_frame`` are not Kafka (the broker's
  ``socket.request.max.bytes`` is 100 MiB by default).
- A request starts with api key, version, correlation id and a client id (int16 length, printable ASCII):
  :func:`request_start` tells whether bytes look like one from these first bytes alone (a quick test run at every
  byte of a scan: the key and version those of :func:`bruce.wire.api_spec`, or near them), so that connections are
  found whatever their port; :func:`request_frame` also wants the whole frame to decode when the library knows its
  API and version.
- After a :class:`~bruce.tool.reassembly.Gap` the framer knows where the next frame starts when the gap ended inside
  a frame whose size it had read; otherwise it scans forward for a plausible start (``plausible``: a whole request
  frame, or for answers a whole answer to a request the client is waiting for), and reports the bytes it skipped.
  Where the capture resumes (a segment starts there, and so often a frame) ``resume`` is tried first: for answers,
  also an answer whose request was lost in the hole (a whole frame that some answer layout parses exactly).
- Bounded: at most one frame (``max_frame``) plus what has not been examined is held; a scan examines each byte once.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from bruce.wire import MalformedInput, api_spec, decode_request

from .reassembly import Gap, Piece

MAX_FRAME = 100 << 20
_HEAD = struct.Struct(">ihhih")  # size, api key, version, correlation id, client id length
_SIZE_CORR = struct.Struct(">ii")
_MAX_CLIENT_ID = 512
_UNKNOWN_KEYS = 256  # api keys the registry does not know but a frame may carry (shown as hex)

Plausible = Callable[[bytes | bytearray, int], bool | None]  # (buffer, position) -> yes, no, or None: need more bytes


def request_start(buf: bytes | bytearray, pos: int, max_frame: int = MAX_FRAME) -> bool | None:
    """Do the bytes at ``pos`` look like the start of a request frame? None: not enough bytes to tell."""
    if len(buf) - pos < _HEAD.size:
        return None
    size, key, version, correlation, n = _HEAD.unpack_from(buf, pos)
    if not 10 <= size <= max_frame or version < 0 or correlation < 0 or not -1 <= n <= _MAX_CLIENT_ID:
        return False
    spec = api_spec(key)
    if spec is None:
        if not 0 <= key < _UNKNOWN_KEYS or version > 63 or n <= 0:
            return False
    elif version >= spec.versions.stop + 8:  # newer versions than the library knows still look like requests
        return False
    if size < 10 + max(n, 0):
        return False
    if n <= 0:
        return True
    if len(buf) - pos < _HEAD.size + n:
        return None
    start = pos + _HEAD.size
    return all(0x20 <= b < 0x7F for b in buf[start : start + n])


def request_frame(buf: bytes | bytearray, pos: int, max_frame: int = MAX_FRAME) -> bool | None:
    """Does a whole request frame start at ``pos``: the shape of :func:`request_start`, and the frame decodes when the
    library knows its API and version? None: not enough bytes to tell."""
    verdict = request_start(buf, pos, max_frame)
    if not verdict:
        return verdict
    size, key, version = struct.unpack_from(">ihh", buf, pos)
    if len(buf) - pos - 4 < size:
        return None
    spec = api_spec(key)
    if spec is None or version not in spec.requests:
        return True
    try:
        decode_request(bytes(buf[pos + 4 : pos + 4 + size]))
    except MalformedInput:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Frame:
    """A whole frame (without its size prefix) from stream offset ``offset``, completed at capture time ``ts``."""

    offset: int
    ts: float
    data: bytes


@dataclass(frozen=True, slots=True)
class LostBytes:
    """Bytes of this direction not framed: a gap in the capture, or bytes skipped while finding a frame start."""

    offset: int
    size: int
    why: str


Framed = Frame | LostBytes


class Framer:
    """Cuts one direction's stream into frames."""

    def __init__(
        self, plausible: Plausible, *, resume: Plausible | None = None, max_frame: int = MAX_FRAME, synced: bool = True
    ) -> None:
        self.plausible = plausible
        self.resume = resume or plausible  # tried first where the capture resumes after a hole
        self.resuming = False  # buf[0] is where the capture resumed, not yet tried
        self.max_frame = max_frame
        self.synced = synced  # bytes at buf[0] start a frame
        self.buf = bytearray()
        self.base = 0  # stream offset of buf[0]
        self.skip = 0  # bytes still to drop: the rest of a frame cut by a gap
        self.scanned = 0  # buf[:scanned] were examined and are not a frame start
        self._skip_from = 0  # bytes dropped while looking for a frame start, reported once one is found
        self._skip_size = 0
        self._why = ""

    def feed(self, piece: Piece, ts: float) -> list[Framed]:
        """One piece of the reassembled stream: the frames it completed and what was lost."""
        out: list[Framed] = []
        if isinstance(piece, Gap):
            self._gap(piece, out)
            return out
        data = memoryview(piece)
        if self.skip:
            n = min(self.skip, len(data))
            self.skip -= n
            self.base += n
            data = data[n:]
        self.buf += data
        self._frames(ts, out)
        return out

    def held(self) -> int:
        return len(self.buf)

    def finish(self) -> list[Framed]:
        """The stream ended: bytes left over are a frame cut short."""
        out: list[Framed] = []
        self._report_skipped(out)
        if self.buf:
            out.append(
                LostBytes(self.base, len(self.buf), "stream ended inside a frame" if self.synced else "not framed")
            )
            self.base += len(self.buf)
            self.buf = bytearray()
        return out

    def _gap(self, gap: Gap, out: list[Framed]) -> None:
        gap_end = gap.offset + gap.size
        self._report_skipped(out)
        if self.synced and len(self.buf) >= 4:
            (size,) = struct.unpack_from(">i", self.buf)
            frame_end = self.base + 4 + size
            out.append(
                LostBytes(self.base, len(self.buf), f"frame of {size} bytes cut by {gap.size} bytes not captured")
            )
            if gap_end <= frame_end:
                self.skip = frame_end - gap_end
            else:
                self.synced = False
        else:
            if self.buf:
                out.append(LostBytes(self.base, len(self.buf), "frame cut by bytes not captured"))
            self.synced = False
        out.append(LostBytes(gap.offset, gap.size, f"not captured ({gap.reason})"))
        self.buf = bytearray()
        self.base = gap_end
        self.scanned = 0
        self.resuming = not self.synced

    def _frames(self, ts: float, out: list[Framed]) -> None:
        buf = self.buf
        pos = 0
        while True:
            if not self.synced:
                found = self._scan(pos)
                if found is None:
                    if self.scanned > pos:  # examined bytes that start no frame: dropped
                        self._skipped(pos, self.scanned - pos)
                        pos = self.scanned
                    break
                if found > pos:
                    self._skipped(pos, found - pos)
                self._report_skipped(out)
                pos = found
                self.synced = True
            if len(buf) - pos < 4:
                break
            (size,) = struct.unpack_from(">i", buf, pos)
            if not 0 <= size <= self.max_frame:
                self.synced = False
                self._skipped(pos, 1)
                self._why = f"frame size {size} out of range"
                pos += 1
                continue
            if len(buf) - pos - 4 < size:
                break
            out.append(Frame(self.base + pos, ts, bytes(buf[pos + 4 : pos + 4 + size])))
            pos += 4 + size
        if pos:
            del buf[:pos]
            self.base += pos
            self.scanned = max(0, self.scanned - pos)

    def _skipped(self, pos: int, size: int) -> None:
        if self._skip_size == 0:
            self._skip_from = self.base + pos
        self._skip_size += size

    def _report_skipped(self, out: list[Framed]) -> None:
        if self._skip_size:
            out.append(LostBytes(self._skip_from, self._skip_size, self._why or "skipped to the next frame start"))
            self._skip_size = 0
            self._why = ""

    def _scan(self, pos: int) -> int | None:
        """The first plausible frame start at or after ``pos``; None when more bytes are needed (bytes that cannot
        start a frame are dropped, so a long scan holds little)."""
        buf = self.buf
        at = max(pos, self.scanned)
        while at < len(buf):
            resuming = self.resuming and at == 0
            verdict = (self.resume if resuming else self.plausible)(buf, at)
            if resuming and verdict is not None:
                self.resuming = False
            if verdict is None:
                self.scanned = at
                return None
            if verdict:
                return at
            at += 1
        self.scanned = at
        return None
