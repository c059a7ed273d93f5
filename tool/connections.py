"""TCP connections of a capture: which are Kafka, which side is the client, and each side's stream cut into frames.

Rules:
- A connection is found by the shape of its first bytes, never by its port: the side whose stream starts (or, when
  the capture began mid-connection, soon has) a plausible request frame (:func:`~bruce.tool.framing.request_start`)
  is the client. A captured SYN names the client directly; ``--port`` names the server. A connection whose first
  ``DETECT_BYTES`` bytes each way hold no request start is not Kafka and is forgotten (counted).
- The answers side is framed from its first byte (an answer whose request was not captured is still a frame); after a
  hole it resynchronises on a whole frame that answers a request the client is waiting for (``answers``, given by the
  pairing: the correlation id waits and the frame decodes as that request's answer), or, right where the capture
  resumes, on any whole frame an answer layout parses (its request may have been lost in the same hole). The
  requests side, started mid-stream or after a hole, resynchronises on a whole request frame
  (:func:`~bruce.tool.framing.request_frame`).
- Bytes the other side acknowledges that the capture lacks are lost for good: the hole is reported at once (before
  the segment that acknowledged them), so that an answer finds the requests sent before it.
- A new SYN on the address pair of a known connection starts a new connection (ports are reused).
- Bounded: each direction holds at most ``DETECT_BYTES`` before the connection is recognised, and at most what its
  reassembly and framer hold after; at most ``max_connections`` are tracked (the least recently active one is
  finished to make room).
- Sans-I/O: :meth:`Connections.segment` takes a decoded segment and hands the frames and losses it completes to
  the sink, in the order they are cut; a Kafka connection's last item is :class:`Ended`.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from .framing import MAX_FRAME, Framed, Framer, request_frame, request_start
from .packets import ACK, FIN, RST, SYN, TcpSegment
from .reassembly import Gap, Piece, Stream

DETECT_BYTES = 64 << 10
MAX_CONNECTIONS = 10_000

Endpoint = tuple[str, int]


class Requests(Protocol):
    """What the pairing tells the framing of answers (:class:`bruce.tool.exchanges.Pairing`)."""

    def waiting(self, conn: TcpConnection, correlation_id: int) -> bool:
        """Does a request of ``conn`` wait for the answer ``correlation_id``?"""

    def answers(self, conn: TcpConnection, frame: bytes) -> bool:
        """Is ``frame`` (without its size prefix) a decodable answer to a request of ``conn`` that waits?"""

    def answer_layout(self, frame: bytes) -> bool:
        """Does some answer layout the library knows parse ``frame`` exactly?"""


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
class Ended:
    """The last item of a Kafka connection: nothing more will come (``why``)."""

    why: str


@dataclass(frozen=True, slots=True)
class Framed_:
    """A frame or a loss on one side of a Kafka connection, or its end."""

    conn: TcpConnection
    from_client: bool
    item: Framed | Ended


class Connections:
    """Every TCP connection of a capture; each frame or loss goes to ``sink`` as soon as it is cut, so the pairing
    knows a request before the framing of the answers needs it."""

    def __init__(
        self,
        requests: Requests,
        sink: Callable[[Framed_], None],
        *,
        port: int | None = None,
        max_frame: int = MAX_FRAME,
        max_connections: int = MAX_CONNECTIONS,
        max_pending: int | None = None,
    ) -> None:
        self.requests = requests
        self.sink = sink
        self.port = port
        self.max_frame = max_frame
        self.max_connections = max_connections
        self.max_pending = max_pending
        self.table: OrderedDict[frozenset[Endpoint], TcpConnection] = OrderedDict()
        self.count = 0
        self.not_kafka = 0
        self.duplicates = 0
        self.overflows = 0

    def segment(self, seg: TcpSegment, ts: float) -> None:
        """One captured segment: the frames and losses it completes go to the sink."""
        src: Endpoint = (seg.src, seg.sport)
        dst: Endpoint = (seg.dst, seg.dport)
        key = frozenset((src, dst))
        conn = self.table.get(key)
        syn = bool(seg.flags & SYN)
        if conn is not None and syn and not seg.flags & ACK and conn.streams.get(src) is not None:
            old = conn.streams[src]
            if old.next_seq is not None and old.next_seq != (seg.seq + 1) % (1 << 32):
                self._finish(conn, "a new connection took its ports")
                del self.table[key]
                conn = None
        if conn is None:
            if len(self.table) >= self.max_connections:
                _, oldest = self.table.popitem(last=False)
                self._finish(oldest, f"more than {self.max_connections} connections at once")
            self.count += 1
            conn = TcpConnection(self.count, src, dst)
            self.table[key] = conn
        else:
            self.table.move_to_end(key)
        conn.last_ts = ts
        if conn.kafka is False:
            return
        stream = conn.streams.get(src)
        if stream is None:
            kwargs = {} if self.max_pending is None else {"max_pending": self.max_pending}
            stream = conn.streams[src] = Stream(**kwargs)
        if syn:
            stream.syn(seg.seq)
            if not seg.flags & ACK and conn.syn_from is None:
                conn.syn_from = src
        other = conn.streams.get(dst)
        if other is not None and seg.flags & ACK:  # bytes it acknowledges and the capture lacks: lost for good
            for piece in other.acked(seg.ack):
                self._piece(conn, dst, piece, ts)
        pieces = stream.add(seg.seq, seg.payload, ts)
        if seg.flags & RST or (seg.flags & FIN and stream.reached(seg.seq + len(seg.payload))):
            pieces += stream.finish()  # a FIN captured before bytes it follows waits for them (or for the end)
        for piece in pieces:
            self._piece(conn, src, piece, ts)
        if seg.flags & RST:
            self._finish(conn, "the connection was reset")

    def finish(self) -> None:
        """The capture ended: every connection's pending bytes and holes."""
        for conn in self.table.values():
            closed = len(conn.streams) == 2 and all(s.finished for s in conn.streams.values())
            self._finish(conn, "the connection closed" if closed else "the capture ended")
        self.table.clear()

    def _finish(self, conn: TcpConnection, why: str) -> None:
        for src in sorted(conn.streams, key=lambda e: e != conn.client):  # the client's side first
            stream = conn.streams[src]
            for piece in stream.finish():
                self._piece(conn, src, piece, conn.last_ts)
            self.duplicates += stream.duplicates
            self.overflows += stream.overflows
            stream.duplicates = stream.overflows = 0
        if conn.kafka is None and conn.held and self._decide(conn, final=True):
            self._release(conn)
        if conn.kafka:
            for src in sorted(conn.framers, key=lambda e: e != conn.client):
                for item in conn.framers[src].finish():
                    self.sink(Framed_(conn, src == conn.client, item))
            self.sink(Framed_(conn, True, Ended(why)))
        conn.framers.clear()
        conn.kafka = conn.kafka or False

    def _piece(self, conn: TcpConnection, src: Endpoint, piece: Piece, ts: float) -> None:
        if conn.kafka is False:
            return
        if conn.kafka is None:
            conn.held.setdefault(src, []).append((piece, ts))
            if self._decide(conn, final=False):
                self._release(conn)
            return
        framer = conn.framers.get(src)
        if framer is None:  # the connection ended (a reset): what follows on its ports is not framed
            return
        for item in framer.feed(piece, ts):
            self.sink(Framed_(conn, src == conn.client, item))

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

    def _release(self, conn: TcpConnection) -> None:
        """The connection was recognised: frame what was held."""
        assert conn.client is not None and conn.server is not None
        client, server = conn.client, conn.server
        max_frame = self.max_frame
        conn.framers[client] = Framer(
            lambda buf, pos: request_frame(buf, pos, max_frame),
            max_frame=max_frame,
            synced=conn.syn_from is not None,
        )
        conn.framers[server] = Framer(
            lambda buf, pos: _answer_start(buf, pos, max_frame, conn, self.requests),
            resume=lambda buf, pos: _answer_start(buf, pos, max_frame, conn, self.requests, resuming=True),
            max_frame=max_frame,
            synced=True,
        )
        held, conn.held = conn.held, {}
        for src in [client, server]:
            for piece, ts in held.get(src, []):
                for item in conn.framers[src].feed(piece, ts):
                    self.sink(Framed_(conn, src == client, item))


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


def _answer_start(
    buf: bytes | bytearray, pos: int, max_frame: int, conn: TcpConnection, requests: Requests, *, resuming: bool = False
) -> bool | None:
    """Does a whole answer the client waits for start at ``pos`` (``resuming``: or any whole answer)? None: not enough
    bytes to tell."""
    if len(buf) - pos < 8:
        return None
    size, correlation = struct.unpack_from(">ii", buf, pos)
    waiting = requests.waiting(conn, correlation)
    if not 4 <= size <= max_frame or not (waiting or resuming):
        return False
    if len(buf) - pos - 4 < size:
        return None
    frame = bytes(buf[pos + 4 : pos + 4 + size])
    return requests.answers(conn, frame) if waiting else requests.answer_layout(frame)
