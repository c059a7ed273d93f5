"""Frames to decoded messages: requests decoded from their header, answers paired with their request by correlation
id per connection, and the (api key, version) of an answer whose request was not captured worked out.

Rules:
- Registry-driven: a request's header names its (api key, version); :data:`bruce.wire.API_REGISTRY` decodes it when
  it has that version, else the message keeps its header, size and bytes (``raw``), never dropped.
- A frame that does not decode is a :class:`FrameMessage` with ``error`` (what, and the field ``path`` where decoding
  stopped) and its bytes; decoding goes on with the next frame.
- An answer is decoded with its request's (key, version). Without one (the request fell before the capture or in a
  hole), every (key, version) of the registry whose answer schema parses the frame exactly is a candidate; among
  several, those already used on the connection win, then the most recent. ``how`` says which rule decided.
- Bounded: at most ``MAX_WAITING`` requests wait for their answer per connection; the oldest is dropped (counted).
  A Produce request with ``acks=0`` gets no answer and does not wait.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from bruce.wire import API_REGISTRY, MalformedInput, UsageError, decode_request, decode_response

from .connections import TcpConnection

MAX_WAITING = 4096
PRODUCE = 0
_HEAD = struct.Struct(">hhih")


@dataclass(slots=True)
class FrameMessage:
    """One request or answer, decoded as far as it goes."""

    conn: str
    from_client: bool
    ts: float
    offset: int  # stream offset of the frame's size prefix on its side
    size: int  # frame bytes after the size prefix
    correlation_id: int | None
    api_key: int | None = None
    version: int | None = None
    client_id: str | None = None
    body: Any = None
    raw: bytes | None = None  # the frame, when it is not decoded
    error: str | None = None
    path: str | None = None
    how: str | None = None  # for an answer without its request: how (key, version) was found
    latency: float | None = None  # answers: seconds since the request was complete
    topics_wanted: bool = True  # set by the --topic filter through the pairing

    @property
    def api_name(self) -> str | None:
        spec = API_REGISTRY.get(self.api_key) if self.api_key is not None else None
        return spec.name if spec is not None else None


@dataclass(slots=True)
class _Waiting:
    api_key: int
    version: int
    ts: float
    wanted: bool


@dataclass(eq=False)
class _ConnState:
    waiting: OrderedDict[int, _Waiting] = field(default_factory=OrderedDict)
    used: dict[tuple[int, int], int] = field(default_factory=dict)  # (key, version) -> last request number
    requests: int = 0


class Pairing:
    """Decodes the frames of every Kafka connection of a capture."""

    def __init__(self, *, max_waiting: int = MAX_WAITING) -> None:
        self.max_waiting = max_waiting
        self.states: dict[int, _ConnState] = {}
        self.dropped_waiting = 0
        self.unanswered = 0

    def waiting(self, conn: TcpConnection, correlation_id: int) -> bool:
        """Is a request of ``conn`` waiting for the answer ``correlation_id``? (the framer's resynchronisation)"""
        state = self.states.get(conn.number)
        return state is not None and correlation_id in state.waiting

    def closed(self, conn: TcpConnection) -> None:
        state = self.states.pop(conn.number, None)
        if state is not None:
            self.unanswered += len(state.waiting)

    def request(self, conn: TcpConnection, offset: int, ts: float, frame: bytes) -> FrameMessage:
        message = FrameMessage(conn.name, True, ts, offset, len(frame), None)
        if len(frame) < _HEAD.size:
            message.raw, message.error = frame, f"request frame of {len(frame)} bytes is shorter than its header"
            return message
        key, version, correlation, n = _HEAD.unpack_from(frame)
        message.api_key, message.version, message.correlation_id = key, version, correlation
        if 0 < n <= len(frame) - _HEAD.size:
            message.client_id = frame[_HEAD.size : _HEAD.size + n].decode("ascii", "replace")
        spec = API_REGISTRY.get(key)
        acks = None
        if spec is None or version not in spec.requests:
            message.raw = frame
        else:
            try:
                header, message.body = decode_request(frame)
                message.client_id = header.client_id
                acks = getattr(message.body, "acks", None) if key == PRODUCE else None
            except MalformedInput as e:
                message.raw, message.error, message.path = frame, str(e), e.path
        state = self.states.setdefault(conn.number, _ConnState())
        state.requests += 1
        state.used[(key, version)] = state.requests
        if acks != 0:
            state.waiting[correlation] = _Waiting(key, version, ts, True)
            state.waiting.move_to_end(correlation)
            while len(state.waiting) > self.max_waiting:
                state.waiting.popitem(last=False)
                self.dropped_waiting += 1
        return message

    def mark(self, conn: TcpConnection, correlation_id: int, wanted: bool) -> None:
        """Record whether the answer to this request passes the filters (the request's topics decide)."""
        state = self.states.get(conn.number)
        if state is not None and correlation_id in state.waiting:
            state.waiting[correlation_id].wanted = wanted

    def answer(self, conn: TcpConnection, offset: int, ts: float, frame: bytes) -> FrameMessage:
        message = FrameMessage(conn.name, False, ts, offset, len(frame), None)
        if len(frame) < 4:
            message.raw, message.error = frame, f"answer frame of {len(frame)} bytes has no correlation id"
            return message
        (correlation,) = struct.unpack_from(">i", frame)
        message.correlation_id = correlation
        state = self.states.setdefault(conn.number, _ConnState())
        request = state.waiting.pop(correlation, None)
        if request is not None:
            message.api_key, message.version = request.api_key, request.version
            message.latency = ts - request.ts
            message.topics_wanted = request.wanted
            spec = API_REGISTRY.get(request.api_key)
            if spec is None or request.version not in spec.responses:
                message.raw = frame
                return message
            try:
                _, message.body = decode_response(request.api_key, request.version, frame)
            except MalformedInput as e:
                message.raw, message.error, message.path = frame, str(e), e.path
            return message
        self._infer(state, message, frame)
        return message

    def _infer(self, state: _ConnState, message: FrameMessage, frame: bytes) -> None:
        """Decode an answer whose request was not captured with the (key, version) that parses it."""
        fits: list[tuple[int, int, Any]] = []
        for key, spec in API_REGISTRY.items():
            for version in spec.responses:
                try:
                    _, body = decode_response(key, version, frame)
                except (MalformedInput, UsageError):
                    continue
                fits.append((key, version, body))
        if not fits:
            message.raw = frame
            message.how = "request not captured; no known answer parses it"
            return
        used = [f for f in fits if (f[0], f[1]) in state.used]
        if len(fits) == 1:
            chosen, message.how = fits[0], "request not captured; the only (api, version) whose answer parses it"
        elif used:
            chosen = max(used, key=lambda f: state.used[(f[0], f[1])])
            message.how = (
                f"request not captured; {len(fits)} (api, version) parse it, this one was the latest used on the "
                "connection"
            )
        else:
            chosen = fits[-1]
            names = ", ".join(f"{API_REGISTRY[k].name} v{v}" for k, v, _ in fits[:6])
            message.how = (
                f"request not captured; ambiguous, {len(fits)} parse it ({names}{', ...' if len(fits) > 6 else ''})"
            )
        message.api_key, message.version, message.body = chosen
