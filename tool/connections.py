"""TCP connections of a capture: which are Kafka, which side is the client, and each side's stream cut into frames.

Rules:
- A connection is found by the shape of its first bytes, never by its port: the side whose stream starts (or, when
  the capture began mid-connection, soon has) a plausible request frame (:func:`~bruce.tool.framing.request_start`)
  is the client. A captured SYN names the client directly; ``--port`` names the server. A connection whose first
  ``DETECT_BYTES`` bytes each way hold no request start is not Kafka and is forgotten (counted).
- The answers side is framed from its first byte (an answer whose request was not captured is still a frame); after a
  hole it resynchronises on a correlation id the client is waiting for (``waiting``, given by the pairing).
- A new SYN on the address pair of a known connection starts a new connection (ports are reused).
- Bounded: each direction holds at most ``DETECT_BYTES`` before the connection is recognised, and at most what its
  reassembly and framer hold after; at most ``max_connections`` are tracked (the least recently active one is
  finished to make room).
- Sans-I/O: :meth:`Connections.segment` takes a decoded segment and returns the frames and losses it produced.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from .framing import MAX_FRAME, Framed, Framer, request_start
from .packets import ACK, FIN, RST, SYN, TcpSegment
from .reassembly import Gap, Piece, Stream

DETECT_BYTES = 64 << 10
MAX_CONNECTIONS = 10_000

Endpoint = tuple[str, int]
Waiting = Callable[["TcpConnection", int], bool]  # (connection, correlation id) -> is a request waiting for it?


def endpoint_text(e: Endpoint) -> str:
    host, port = e
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(eq=False)
class TcpConnection:
    """One TCP connection: its endpoints, and once recognised which is the client."""

    number: int
    a: Endpoint
    b: Endpoint
    client: Endpoint | None = None
    kafka: bool | None = None  # None: not decided yet
    syn_from: Endpoint | None = None
    streams: dict[Endpoint, Stream] = field(default_factory=dict)  # by sending endpoint
    held: dict[Endpoint, list[tuple[Piece, float]]] = field(default_factory=dict)  # before recognition
    framers: dict[Endpoint, Framer] = field(default_factory=dict)
    last_ts: float = 0.0  # capture time of its latest segment

    @property
    def server(self) -> Endpoint | None:
        return None if self.client is None else (self.b if self.client == self.a else self.a)

    @property
    def name(self) -> str:
        """``client > server`` (``a > b`` before the roles are known)."""
        client = self.client or self.a
        server = self.server or self.b
        return f"{endpoint_text(client)}>{endpoint_text(server)}"


@dataclass(frozen=True, slots=True)
class Framed_:
    """A frame or a loss on one side of a Kafka connection."""

    conn: TcpConnection
    from_client: bool
    item: Framed


class Connections:
    """Every TCP connection of a capture."""

    def __init__(
        self,
        waiting: Waiting,
        *,
        port: int | None = None,
        max_frame: int = MAX_FRAME,
        max_connections: int = MAX_CONNECTIONS,
        max_pending: int | None = None,
    ) -> None:
        self.waiting = waiting
        self.port = port
        self.max_frame = max_frame
        self.max_connections = max_connections
        self.max_pending = max_pending
        self.table: OrderedDict[frozenset[Endpoint], TcpConnection] = OrderedDict()
        self.count = 0
        self.not_kafka = 0
        self.duplicates = 0
        self.overflows = 0

    def segment(self, seg: TcpSegment, ts: float) -> list[Framed_]:
        src: Endpoint = (seg.src, seg.sport)
        dst: Endpoint = (seg.dst, seg.dport)
        key = frozenset((src, dst))
        conn = self.table.get(key)
        out: list[Framed_] = []
        syn = bool(seg.flags & SYN)
        if conn is not None and syn and not seg.flags & ACK and conn.streams.get(src) is not None:
            old = conn.streams[src]
            if old.next_seq is not None and old.next_seq != (seg.seq + 1) % (1 << 32):
                out += self._finish(conn)  # a new connection on the same ports
                del self.table[key]
                conn = None
        if conn is None:
            if len(self.table) >= self.max_connections:
                _, oldest = self.table.popitem(last=False)
                out += self._finish(oldest)
            self.count += 1
            conn = TcpConnection(self.count, src, dst)
            self.table[key] = conn
        else:
            self.table.move_to_end(key)
        conn.last_ts = ts
        if conn.kafka is False:
            return out
        stream = conn.streams.get(src)
        if stream is None:
            kwargs = {} if self.max_pending is None else {"max_pending": self.max_pending}
            stream = conn.streams[src] = Stream(**kwargs)
        if syn:
            stream.syn(seg.seq)
            if not seg.flags & ACK and conn.syn_from is None:
                conn.syn_from = src
        pieces = stream.add(seg.seq, seg.payload, ts)
        if seg.flags & (FIN | RST):
            pieces += stream.finish()
        for piece in pieces:
            out += self._piece(conn, src, piece, ts)
        if seg.flags & RST:
            out += self._finish(conn)
        return out

    def finish(self) -> list[Framed_]:
        """The capture ended: every connection's pending bytes and holes."""
        out: list[Framed_] = []
        for conn in self.table.values():
            out += self._finish(conn)
        self.table.clear()
        return out

    def _finish(self, conn: TcpConnection) -> list[Framed_]:
        out: list[Framed_] = []
        for src, stream in conn.streams.items():
            for piece in stream.finish():
                out += self._piece(conn, src, piece, conn.last_ts)
            self.duplicates += stream.duplicates
            self.overflows += stream.overflows
            stream.duplicates = stream.overflows = 0
        if conn.kafka is None and conn.held and self._decide(conn, final=True):
            out += self._release(conn)
        if conn.kafka:
            for src, framer in conn.framers.items():
                out += [Framed_(conn, src == conn.client, item) for item in framer.finish()]
        conn.framers.clear()
        conn.kafka = conn.kafka or False
        return out

    def _piece(self, conn: TcpConnection, src: Endpoint, piece: Piece, ts: float) -> list[Framed_]:
        if conn.kafka is False:
            return []
        if conn.kafka is None:
            conn.held.setdefault(src, []).append((piece, ts))
            return self._release(conn) if self._decide(conn, final=False) else []
        framer = conn.framers[src]
        return [Framed_(conn, src == conn.client, item) for item in framer.feed(piece, ts)]

    def _decide(self, conn: TcpConnection, *, final: bool) -> bool | None:
        """Recognise the connection from what each side has sent so far, or give up on it: ``conn.kafka``."""
        starts: dict[Endpoint, int | None] = {}
        for src, pieces in conn.held.items():
            data = b"".join(p for p, _ in pieces if not isinstance(p, Gap))
            starts[src] = _first_request(data[:DETECT_BYTES], self.max_frame, final)
        client: Endpoint | None = None
        if self.port is not None and conn.a[1] != conn.b[1] and self.port in (conn.a[1], conn.b[1]):
            client = conn.b if conn.a[1] == self.port else conn.a
        elif conn.syn_from is not None:
            client = conn.syn_from
        if client is not None:
            if client in starts:
                found = starts[client]
                if found is not None and found >= 0:
                    conn.kafka = True
                elif found == -1 or final:
                    conn.kafka = self.port is not None  # --port: decoded even if the shape is odd
            elif final:
                conn.kafka = self.port is not None
        else:
            candidates = [(pos, src) for src, pos in starts.items() if pos is not None and pos >= 0]
            if candidates:
                _, client = min(candidates, key=lambda c: (c[0] > 0, c[0]))
                conn.kafka = True
            elif final or (all(pos == -1 for pos in starts.values()) and len(starts) == 2):
                conn.kafka = False
        if conn.kafka:
            conn.client = client
        elif conn.kafka is False:
            self.not_kafka += 1
            conn.held.clear()
        return conn.kafka

    def _release(self, conn: TcpConnection) -> list[Framed_]:
        """The connection was recognised: frame what was held."""
        assert conn.client is not None and conn.server is not None
        client, server = conn.client, conn.server
        max_frame = self.max_frame
        conn.framers[client] = Framer(
            lambda buf, pos: request_start(buf, pos, max_frame),
            max_frame=max_frame,
            synced=conn.syn_from is not None,
        )
        conn.framers[server] = Framer(
            lambda buf, pos: _answer_start(buf, pos, max_frame, lambda corr: self.waiting(conn, corr)),
            max_frame=max_frame,
            synced=True,
        )
        out: list[Framed_] = []
        held, conn.held = conn.held, {}
        order = [client, server] if client in held else [server]
        for src in order:
            for piece, ts in held.get(src, []):
                out += [Framed_(conn, src == client, item) for item in conn.framers[src].feed(piece, ts)]
        return out


def _first_request(data: bytes, max_frame: int, final: bool) -> int | None:
    """Where the first plausible request starts in ``data``: its position, -1 (none in ``DETECT_BYTES``), or None
    (not enough bytes yet)."""
    for pos in range(len(data)):
        verdict = request_start(data, pos, max_frame)
        if verdict:
            return pos
        if verdict is None:
            return -1 if final else None
    return -1 if final or len(data) >= DETECT_BYTES else None


def _answer_start(buf: bytes | bytearray, pos: int, max_frame: int, waiting: Callable[[int], bool]) -> bool | None:
    if len(buf) - pos < 8:
        return None
    size, correlation = struct.unpack_from(">ii", buf, pos)
    return 4 <= size <= max_frame and waiting(correlation)
