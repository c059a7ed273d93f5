"""Frames to decoded messages: requests decoded from their header, answers paired with their request by correlation
id per connection, and the (api key, version) of an answer whose request was not captured worked out.

Rules:
- Registry-driven: a request's header (:func:`bruce.wire.peek_request_header`) names its (api key, version);
  :func:`bruce.wire.api_spec` says whether the library decodes it, else the message keeps its header, size and bytes
  (``raw``), never dropped. ApiVersions answers are read as a broker writes them, the v0 body included when it
  refuses the version asked (:func:`bruce.wire.decode_api_versions_response`).
- A frame that does not decode is a :class:`FrameMessage` with ``error`` (what, and the field ``path`` where decoding
  stopped) and its bytes; decoding goes on with the next frame.
- An answer is decoded with its request's (key, version). Without one (the request fell before the capture or in a
  hole), :func:`infer` works it out from the frame and what the connection showed so far; ``how`` says which rule
  decided, ``candidates`` what else parsed.
- Bounded: at most ``MAX_WAITING`` requests wait for their answer per connection; the oldest is dropped (counted).
  A Produce request with ``acks=0`` gets no answer and does not wait.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from bruce.wire import (
    API_VERSIONS_KEY,
    MalformedInput,
    api_spec,
    decode_api_versions_response,
    decode_request,
    decode_response,
    peek_request_header,
    response_correlation_id,
)

from .connections import TcpConnection
from .inference import Evidence, infer, parses

MAX_WAITING = 4096
PRODUCE = 0


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
    version: int | None = None  # None for an answer whose version could not be told apart (``alike``)
    client_id: str | None = None
    body: Any = None
    raw: bytes | None = None  # the frame, when it is not decoded
    error: str | None = None
    path: str | None = None
    how: str | None = None  # for an answer without its request: how (key, version) was found
    alike: tuple[int, ...] = ()  # ... the versions of its API that read it alike, when the version is not known
    candidates: tuple[tuple[int, int], ...] = ()  # ... and every (key, version) whose answer parses it
    latency: float | None = None  # answers: seconds since the request was complete
    topics_wanted: bool = True  # set by the --topic filter through the pairing

    @property
    def api_name(self) -> str | None:
        spec = api_spec(self.api_key) if self.api_key is not None else None
        return spec.name if spec is not None else None

    @property
    def schema(self) -> Any:
        """The body schema the body was read with (for the fields it shows), or None."""
        spec = api_spec(self.api_key) if self.api_key is not None and self.body is not None else None
        version = self.version if self.version is not None else (self.alike[0] if self.alike else None)
        if spec is None or version is None:
            return None
        return (spec.requests if self.from_client else spec.responses).get(version)

    @property
    def version_text(self) -> str:
        """``v3``, ``v1|v2`` (versions that read it alike), or nothing."""
        if self.version is not None:
            return f"v{self.version}"
        return "|".join(f"v{v}" for v in self.alike)


@dataclass(frozen=True, slots=True)
class Unanswered:
    """A request whose answer never came before its connection ended."""

    correlation_id: int
    api_key: int
    version: int
    ts: float
    wanted: bool  # passes the --topic filter


@dataclass(slots=True)
class _Waiting:
    api_key: int
    version: int
    ts: float
    wanted: bool


@dataclass(eq=False)
class _ConnState:
    waiting: OrderedDict[int, _Waiting] = field(default_factory=OrderedDict)
    evidence: Evidence = field(default_factory=Evidence)


def decode_answer(api_key: int, version: int, frame: bytes) -> Any:
    """The body of an answer to a request of (``api_key``, ``version``); :class:`MalformedInput` if it does not
    parse."""
    if api_key == API_VERSIONS_KEY:
        return decode_api_versions_response(version, frame)[1]
    return decode_response(api_key, version, frame)[1]


class Pairing:
    """Decodes the frames of every Kafka connection of a capture."""

    def __init__(self, *, max_waiting: int = MAX_WAITING) -> None:
        self.max_waiting = max_waiting
        self.states: dict[int, _ConnState] = {}
        self.dropped_waiting = 0
        self.unanswered = 0

    def waiting(self, conn: TcpConnection, correlation_id: int) -> bool:
        """Does a request of ``conn`` wait for the answer ``correlation_id``? (the framer's resynchronisation)"""
        state = self.states.get(conn.number)
        return state is not None and correlation_id in state.waiting

    def answers(self, conn: TcpConnection, frame: bytes) -> bool:
        """Is ``frame`` (without its size prefix) the answer a request of ``conn`` waits for, whole and decodable?
        (the framer's resynchronisation after a hole)"""
        state = self.states.get(conn.number)
        if state is None or len(frame) < 4:
            return False
        request = state.waiting.get(response_correlation_id(frame))
        if request is None:
            return False
        spec = api_spec(request.api_key)
        if spec is None or request.version not in spec.responses:
            return True  # not decodable here: the correlation id is all there is to go by
        try:
            decode_answer(request.api_key, request.version, frame)
        except MalformedInput:
            return False
        return True

    def answer_layout(self, frame: bytes) -> bool:
        """Does some answer layout of the registry parse ``frame`` exactly? (resynchronising where a capture
        resumes)"""
        return bool(parses(frame))

    def closed(self, conn: TcpConnection) -> list[Unanswered]:
        """The connection ended: the requests still waiting for their answer, oldest first."""
        state = self.states.pop(conn.number, None)
        if state is None:
            return []
        self.unanswered += len(state.waiting)
        return [Unanswered(c, w.api_key, w.version, w.ts, w.wanted) for c, w in state.waiting.items()]

    def request(self, conn: TcpConnection, offset: int, ts: float, frame: bytes) -> FrameMessage:
        message = FrameMessage(conn.name, True, ts, offset, len(frame), None)
        try:
            header = peek_request_header(frame)
        except MalformedInput as e:
            message.raw, message.error = frame, f"request header does not decode: {e}"
            return message
        key, version = header.api_key, header.api_version
        message.api_key, message.version = key, version
        message.correlation_id, message.client_id = header.correlation_id, header.client_id
        spec = api_spec(key)
        acks = None
        if spec is None or version not in spec.requests:
            message.raw = frame
        else:
            try:
                _, message.body = decode_request(frame)
                acks = getattr(message.body, "acks", None) if key == PRODUCE else None
            except MalformedInput as e:
                message.raw, message.error, message.path = frame, str(e), e.path
        state = self.states.setdefault(conn.number, _ConnState())
        if spec is not None:  # (bounded: the registry's keys only)
            state.evidence.request(key, version)
        if acks != 0:
            state.waiting[header.correlation_id] = _Waiting(key, version, ts, True)
            state.waiting.move_to_end(header.correlation_id)
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
        try:
            message.correlation_id = response_correlation_id(frame)
        except MalformedInput as e:
            message.raw, message.error = frame, str(e)
            return message
        state = self.states.setdefault(conn.number, _ConnState())
        request = state.waiting.pop(message.correlation_id, None)
        if request is None:
            self._infer(state, message, frame, opening=conn.syn_from is not None and offset == 0)
        else:
            message.api_key, message.version = request.api_key, request.version
            message.latency = ts - request.ts
            message.topics_wanted = request.wanted
            spec = api_spec(request.api_key)
            if spec is None or request.version not in spec.responses:
                message.raw = frame
            else:
                try:
                    message.body = decode_answer(request.api_key, request.version, frame)
                except MalformedInput as e:
                    message.raw, message.error, message.path = frame, str(e), e.path
        state.evidence.answer(message.api_key, message.body)
        return message

    def _infer(self, state: _ConnState, message: FrameMessage, frame: bytes, *, opening: bool) -> None:
        """Decode an answer whose request was not captured (see :mod:`.inference`)."""
        found = infer(parses(frame), state.evidence, opening=opening and state.evidence.answers == 0)
        message.api_key, message.body, message.how = found.api_key, found.body, found.how
        message.candidates = found.candidates
        if len(found.versions) == 1:
            message.version = found.versions[0]
        else:
            message.alike = found.versions
        if found.body is None:
            message.raw = frame
