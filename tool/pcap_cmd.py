"""``bruce-wire pcap``: a capture in, every Kafka request and answer out (text, or JSON lines), as each completes.

Rules:
- The pipeline, one packet at a time: :mod:`.capture` → :mod:`.packets` → :mod:`.connections` (reassembly,
  recognition, framing) → :mod:`.exchanges` (decoding, pairing) → the filters → :mod:`.text` / :mod:`.jsonout` or
  :mod:`.stats`. Nothing waits for the end of the capture except what the pairing and reassembly bound.
- A parse leaves a reference cycle holding a copy of its frame (construct's context); after a frame over
  :data:`COLLECT_ABOVE` bytes the young generations are collected, so two large frames are never held at once.
- Losses (bytes not captured, bytes skipped to find a frame, frames cut short) are reported where they are: the
  connection, the side, the stream offset.
- The result says whether every frame, and every record batch in them, decoded: the command's exit status is 0 if
  so, 1 if not.
- UDP datagrams to a ``--plog`` port are decoded as plog packets (:func:`bruce.wire.parse_packet`); TCP to it is
  plog's line protocol (one message per line), reassembled like Kafka's streams, a line cut by a hole dropped.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, BinaryIO, TextIO

from bruce.wire import MalformedInput, api_spec, errorcodes, parse_packet

from .capture import Reader
from .connections import Connections, Ended, Framed_
from .exchanges import FrameMessage, Pairing, Unanswered
from .framing import MAX_FRAME, Frame
from .jsonout import JsonWriter
from .packets import SYN, TcpSegment, UdpDatagram, decode_packet
from .plogview import plog_tree
from .reassembly import Gap, Piece, Stream
from .records import text_or_base64
from .sequences import Sequences
from .stats import Stats, error_codes
from .text import TextWriter
from .tree import Trees, topics_of

MAX_PLOG_CONNECTIONS = 10_000
COLLECT_ABOVE = 1 << 20  # frame bytes


@dataclass(frozen=True, slots=True)
class PcapOptions:
    json: bool = False
    stats: bool = False
    apis: frozenset[str] = frozenset()  # names (lower case) or keys as text
    topics: frozenset[str] = frozenset()
    conns: tuple[str, ...] = ()
    port: int | None = None
    plog_ports: frozenset[int] = frozenset()
    max_frame: int = MAX_FRAME
    live: bool = False


@dataclass(slots=True)
class Result:
    messages: int = 0
    undecoded: int = 0
    losses: int = 0
    bad_batches: int = 0  # record batches in decoded frames that do not decode (a bad CRC, corrupt compression)
    notes: list[str] = field(default_factory=list)

    @property
    def status(self) -> int:
        return 1 if self.undecoded or self.losses or self.bad_batches else 0


def _candidate(key: int, version: int) -> dict[str, Any]:
    spec = api_spec(key)
    return {"api_key": key, "api": spec.name if spec is not None else f"api-{key}", "version": version}


def _time(ts: float) -> str:
    if ts <= 0:
        return "-"
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


class PcapRun:
    """One run of the command over one capture."""

    def __init__(self, options: PcapOptions, out: TextIO) -> None:
        self.options = options
        self.out = out
        self.pairing = Pairing()
        self.connections = Connections(self.pairing, self._framed, port=options.port, max_frame=options.max_frame)
        self.trees = Trees()
        self.sequences = Sequences()
        self.stats = Stats()
        self.json = JsonWriter(out, self.sequences, flush=options.live)
        self.text = TextWriter(out, self.sequences, flush=options.live)
        self.result = Result()
        self.plog_streams: dict[str, tuple[Stream, bytearray]] = {}  # plog over TCP: one line per message

    def run(self, stream: BinaryIO) -> Result:
        reader = Reader(stream)
        for ts, linktype, data in reader:
            packet = decode_packet(linktype, data)
            if isinstance(packet, TcpSegment) and packet.dport in self.options.plog_ports:
                self._plog_tcp(packet, ts)
            elif isinstance(packet, TcpSegment) and packet.sport not in self.options.plog_ports:
                self.connections.segment(packet, ts)
            elif isinstance(packet, UdpDatagram) and packet.dport in self.options.plog_ports:
                self._plog(packet, ts)
        self.connections.finish()
        for name, (plog_stream, pending) in self.plog_streams.items():
            self._plog_lines(name, plog_stream.finish(), pending, 0.0, final=True)
        if reader.truncated:
            self.result.notes.append(reader.truncated)
            self.result.losses += 1
        c = self.connections
        self.result.bad_batches = self.json.failed_batches + self.text.failed_batches
        if self.result.bad_batches:
            self.result.notes.append(f"{self.result.bad_batches} record batches do not decode")
        self.result.notes.append(
            f"{reader.count} packets, {c.count} TCP connections ({c.not_kafka} not Kafka), {self.result.messages} "
            f"Kafka messages, {self.result.undecoded} not decoded, {self.result.losses} losses, {c.duplicates} "
            f"retransmitted segments, {self.pairing.dropped_waiting + self.pairing.unanswered} requests unanswered"
        )
        if self.options.stats:
            if self.options.json:
                self.json.line({"stats": self.stats.summary()})
            else:
                self.out.write(self.stats.text())
        return self.result

    # ------------------------------------------------------------ frames

    def _framed(self, item: Framed_) -> None:
        conn, framed = item.conn, item.item
        if isinstance(framed, Ended):
            for request in self.pairing.closed(conn):
                self._unanswered(conn.name, request, framed.why, conn.last_ts)
            return
        if not isinstance(framed, Frame):
            self.result.losses += 1
            if self._conn_wanted(conn.name) and not self.options.stats and not self.options.apis:
                side = "client" if item.from_client else "server"
                lost = {"offset": framed.offset, "size": framed.size, "why": framed.why}
                if self.options.json:
                    self.json.line({"conn": conn.name, "direction": f"from {side}", "lost": lost})
                else:
                    line = f"! {conn.name} from {side}: {framed.size} bytes at offset {framed.offset}: {framed.why}"
                    self.text.message(line, None, [])  # (flushed when live, like every message)
            return
        if item.from_client:
            message = self.pairing.request(conn, framed.offset, framed.ts, framed.data)
        else:
            message = self.pairing.answer(conn, framed.offset, framed.ts, framed.data)
        if len(framed.data) > COLLECT_ABOVE:
            gc.collect(1)  # see the module's rules
        self._message(conn, message)

    def _message(self, conn: Any, m: FrameMessage) -> None:
        self.result.messages += 1
        if m.error is not None:
            self.result.undecoded += 1
        tree = None
        if m.body is not None:
            tree = self.trees.tree(m.body, scope="produce" if m.from_client else "log", schema=m.schema)
        wanted = self._conn_wanted(m.conn) and self._api_wanted(m)
        if self.options.topics:
            if m.from_client:
                m.topics_wanted = bool(tree is not None and topics_of(tree) & self.options.topics)
                if m.correlation_id is not None:
                    self.pairing.mark(conn, m.correlation_id, m.topics_wanted)
            elif tree is not None and topics_of(tree) & self.options.topics:
                m.topics_wanted = True
            wanted = wanted and m.topics_wanted
        if not wanted:
            return
        name = m.api_name or (
            f"api-{m.api_key}" if m.api_key is not None else "ambiguous" if m.candidates else "unknown"
        )
        if self.options.stats:
            self.stats.add(name, m.version, m.from_client, m.size, m.latency)
            if tree is not None and not m.from_client:
                self.stats.add_errors(name, tree)
            return
        if self.options.json:
            self.json.line(self._json_value(m, name, tree))
        else:
            self.text.message(self._heading(m, name, tree), tree, self._notes(m))

    def _unanswered(self, conn: str, r: Unanswered, why: str, end: float) -> None:
        spec = api_spec(r.api_key)
        name = spec.name if spec is not None else f"api-{r.api_key}"
        if self.options.stats or not self._conn_wanted(conn) or not r.wanted:
            return
        if self.options.apis and not {name.lower(), str(r.api_key)} & self.options.apis:
            return
        waited = max(0.0, end - r.ts)
        if self.options.json:
            value = {"api_key": r.api_key, "api": name, "version": r.version, "correlation_id": r.correlation_id}
            value |= {"ts": r.ts, "time": _time(r.ts), "waited_ms": round(waited * 1000, 3), "why": why}
            self.json.line({"conn": conn, "unanswered": value})
        else:
            line = f"! {conn}: {name} v{r.version} correlation {r.correlation_id} sent {_time(r.ts)} got no answer"
            self.text.message(f"{line} in the {waited:.3f} s before {why}", None, [])

    def _api_wanted(self, m: FrameMessage) -> bool:
        if not self.options.apis:
            return True
        names = {str(m.api_key)} | ({m.api_name.lower()} if m.api_name else set())
        return bool(names & self.options.apis)

    def _conn_wanted(self, name: str) -> bool:
        return not self.options.conns or any(c in name for c in self.options.conns)

    def _heading(self, m: FrameMessage, name: str, tree: dict[str, Any] | None) -> str:
        kind = "request" if m.from_client else "answer"
        version = f" {m.version_text}" if m.version_text else ""
        line = f"{_time(m.ts)} {m.conn} {kind} {name}{version} correlation {m.correlation_id} ({m.size} bytes)"
        if m.client_id:
            line += f" client {m.client_id!r}"
        if m.latency is not None:
            line += f" after {m.latency * 1000:.3f} ms"
        errors = sorted({errorcodes.lookup(code).name for code in error_codes(tree)}) if tree else []
        if errors:
            line += f" ! {', '.join(errors)}"  # what went wrong, on the line a reader scans
        return line

    def _notes(self, m: FrameMessage) -> list[str]:
        notes = []
        if m.how:
            notes.append(m.how)
        if m.error:
            where = f" at {m.path}" if m.path else ""
            notes.append(f"does not decode{where} (stream offset {m.offset}): {m.error}")
        elif m.raw is not None and m.body is None and not m.how:
            notes.append("API or version not known to bruce.wire: shown as bytes")
        if m.raw is not None:
            notes.append(f"bytes: {m.raw[:512].hex()}{'…' if len(m.raw) > 512 else ''}")
        return notes

    def _json_value(self, m: FrameMessage, name: str, tree: dict[str, Any] | None) -> dict[str, Any]:
        value: dict[str, Any] = {
            "conn": m.conn,
            "direction": "request" if m.from_client else "answer",
            "ts": m.ts,
            "time": _time(m.ts),
            "offset": m.offset,
            "size": m.size,
            "api_key": m.api_key,
            "api": name,
            "version": m.version,
            "correlation_id": m.correlation_id,
        }
        if m.client_id is not None:
            value["client_id"] = m.client_id
        if m.latency is not None:
            value["latency_ms"] = round(m.latency * 1000, 3)
        if m.how:
            value["how"] = m.how
        if m.alike:
            value["versions"] = list(m.alike)
        if m.candidates:
            value["candidates"] = [_candidate(key, version) for key, version in m.candidates]
        if m.error:
            value["error"] = {"message": m.error, "path": m.path, "offset": m.offset}
        if m.raw is not None:
            value["hex"] = m.raw.hex()
        if tree is not None:
            value["body"] = tree
        return value

    # ------------------------------------------------------------ plog

    def _plog_tcp(self, seg: TcpSegment, ts: float) -> None:
        name = f"{seg.src}:{seg.sport}>{seg.dst}:{seg.dport}"
        if name not in self.plog_streams:
            if len(self.plog_streams) >= MAX_PLOG_CONNECTIONS:
                return
            self.plog_streams[name] = (Stream(), bytearray())
        stream, pending = self.plog_streams[name]
        if seg.flags & SYN:
            stream.syn(seg.seq)
        self._plog_lines(name, stream.add(seg.seq, seg.payload, ts), pending, ts, final=False)

    def _plog_lines(self, conn: str, pieces: list[Piece], pending: bytearray, ts: float, *, final: bool) -> None:
        """plog's TCP input: each line (LF or CR LF) is one message; a hole drops the line it cuts."""
        for piece in pieces:
            if isinstance(piece, Gap):
                pending.clear()
                self._plog_value(conn, ts, {"lost": {"offset": piece.offset, "size": piece.size}}, "tcp")
                continue
            pending += piece
            while (end := pending.find(b"\n")) >= 0:
                line = bytes(pending[:end]).removesuffix(b"\r")
                del pending[: end + 1]
                self._plog_value(conn, ts, {"plog": {"kind": "line", "message": text_or_base64(line)}}, "tcp")
            if len(pending) > self.options.max_frame:
                self._plog_value(conn, ts, {"lost": {"size": len(pending), "why": "line too long"}}, "tcp")
                pending.clear()
        if final and pending:
            self._plog_value(conn, ts, {"lost": {"size": len(pending), "why": "unterminated line"}}, "tcp")
            pending.clear()

    def _plog_value(self, conn: str, ts: float, value: dict[str, Any], direction: str) -> None:
        if not self._conn_wanted(conn) or self.options.stats:
            return
        if "lost" in value:
            self.result.losses += 1
        else:
            self.result.messages += 1
        head = {"conn": conn, "direction": direction, "ts": ts, "time": _time(ts)}
        if self.options.json:
            self.json.line(head | value)
        else:
            self.text.message(f"{_time(ts)} {conn} plog {direction}", value, [])

    def _plog(self, d: UdpDatagram, ts: float) -> None:
        conn = f"{d.src}:{d.sport}>{d.dst}:{d.dport}"
        if not self._conn_wanted(conn) or self.options.stats:
            return
        self.result.messages += 1
        try:
            value: dict[str, Any] = {"plog": plog_tree(parse_packet(bytes(d.payload)))}
        except MalformedInput as e:
            self.result.undecoded += 1
            value = {"error": {"message": str(e), "reason": e.reason}, "hex": bytes(d.payload).hex()}
        head = {"conn": conn, "direction": "udp", "ts": ts, "time": _time(ts)}
        if self.options.json:
            self.json.line(head | value)
        else:
            self.text.message(f"{_time(ts)} {conn} plog datagram ({len(d.payload)} bytes)", value, [])
