"""The sans-I/O core of one broker connection: requests out as frames, bytes in as matched responses.

Rules:
- :meth:`Connection.send_request` encodes a request with the next correlation id (1, 2, ... as Bruce; wraps to 1 after
  2**31-1) and, unless the request expects no response (Produce with acks=0), appends it to the in-flight FIFO. A
  Produce request's frame is a list of buffers that refer to its record batches (no copy of a batch).
- :meth:`Connection.receive_data` takes any slice of the byte stream and returns the responses it completes, in order,
  each paired with the request it answers and decoded for that request's API and version.
- Protocol errors (:class:`BrokerProtocolError`) are final: a frame size that is negative, smaller than a correlation
  id or above the cap; a response whose correlation id is not the oldest outstanding one (Kafka answers in order); a
  response with nothing outstanding; a body that does not decode. The feed stops at the bad frame: the responses
  completed before it are still returned (each has exactly one outcome), :attr:`Connection.error` is set, and every
  later call raises the error.
- ``tolerate_unsolicited``: a response whose correlation id belongs to a request sent without expecting an answer
  (tansu answers acks=0 produce requests) is dropped instead of failing.
- No I/O, no clocks, no asyncio.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass
from typing import Any

from bruce.wire import (
    API_VERSIONS_KEY,
    MalformedInput,
    ProduceRequest,
    decode_api_versions_response,
    decode_response,
    encode_request,
    produce_frame,
    request_spec,
)

from ..errors import BrokerProtocolError

MAX_FRAME_SIZE = 100 * 1024 * 1024  # librdkafka's receive.message.max.bytes
_SIZE = struct.Struct(">i")
_MAX_CORRELATION_ID = 2**31 - 1


@dataclass(slots=True)
class Pending:
    """One request awaiting its response. ``token`` is the caller's (e.g. the future to resolve)."""

    correlation_id: int
    api_key: int
    version: int
    token: Any = None
    sent_at: float = 0.0  # the I/O shell's clock when the request was written (for its request timeout)


class Connection:
    __slots__ = ("_buffer", "_dead", "_next_id", "_unanswered", "client_id", "in_flight", "max_frame_size")

    def __init__(self, client_id: str, *, max_frame_size: int = MAX_FRAME_SIZE) -> None:
        self.client_id = client_id
        self.max_frame_size = max_frame_size
        self.in_flight: deque[Pending] = deque()
        self._buffer = bytearray()
        self._next_id = 1
        self._dead: BrokerProtocolError | None = None
        self._unanswered: deque[int] = deque(maxlen=64)  # recent ids sent without expecting a response

    def send_request(
        self, body: Any, version: int, *, token: Any = None, expect_response: bool = True
    ) -> bytes | list[bytes]:
        """The frame to write for ``body`` at ``version`` (a Produce request's: a list of buffers, its records
        referred to, not copied: write them in one gathered write); registers it as in flight when a response is
        expected."""
        self._check_alive()
        correlation_id = self._next_id
        self._next_id = 1 if correlation_id >= _MAX_CORRELATION_ID else correlation_id + 1
        encode = produce_frame if type(body) is ProduceRequest else encode_request
        frame = encode(body, version=version, correlation_id=correlation_id, client_id=self.client_id)
        if expect_response:
            self.in_flight.append(Pending(correlation_id, request_spec(body).key, version, token))
        else:
            self._unanswered.append(correlation_id)
        return frame

    def receive_data(self, data: bytes, *, tolerate_unsolicited: bool = False) -> list[tuple[Pending, Any]]:
        """Feed received bytes; return every response they complete as ``(pending, decoded body)``, oldest first.
        After a protocol error (see the module rules) check :attr:`error`: the responses before it are returned."""
        self._check_alive()
        buffer = self._buffer
        buffer += data
        done: list[tuple[Pending, Any]] = []
        position = 0
        try:
            while len(buffer) - position >= 4:
                (size,) = _SIZE.unpack_from(buffer, position)
                if size < 4 or size > self.max_frame_size:
                    self._die(f"response frame size {size} is outside 4..{self.max_frame_size}")
                end = position + 4 + size
                if len(buffer) < end:
                    break
                with memoryview(buffer) as view:  # one copy out of the buffer, not two
                    frame = view[position + 4 : end].tobytes()
                position = end
                answered = self._match(frame, tolerate_unsolicited)
                if answered is not None:
                    done.append(answered)
        except BrokerProtocolError:
            pass  # the feed stops at the bad frame; self.error holds the error for the caller
        finally:
            del buffer[:position]
        return done

    @property
    def error(self) -> BrokerProtocolError | None:
        """The error that ended the connection (a protocol error, or one given to :meth:`fail`), or None."""
        return self._dead

    def fail(self, error: BrokerProtocolError) -> None:
        """End the connection with ``error`` (the shell's transport failed): every later call raises it."""
        self._dead = error

    @property
    def buffered(self) -> int:
        """Bytes received that do not yet complete a frame."""
        return len(self._buffer)

    def _match(self, frame: bytes, tolerate_unsolicited: bool) -> tuple[Pending, Any] | None:
        (correlation_id,) = struct.unpack_from(">i", frame)
        if not self.in_flight or self.in_flight[0].correlation_id != correlation_id:
            if tolerate_unsolicited and correlation_id in self._unanswered:
                return None
            expected = self.in_flight[0].correlation_id if self.in_flight else None
            self._die(
                f"response with correlation id {correlation_id} "
                + (f"while {expected} was expected" if expected is not None else "with no request outstanding")
            )
        pending = self.in_flight[0]  # popped only once decoded: a failure must still reach its token
        try:
            if pending.api_key == API_VERSIONS_KEY:
                _, body = decode_api_versions_response(pending.version, frame)
            else:
                _, body = decode_response(pending.api_key, pending.version, frame)
        except MalformedInput as e:
            self._die(f"undecodable response to correlation id {correlation_id}: {e}")
        self.in_flight.popleft()
        return pending, body

    def _die(self, message: str) -> None:
        """The connection is dead from this frame on: record why and stop the feed."""
        self._dead = BrokerProtocolError(message)
        raise self._dead

    def _check_alive(self) -> None:
        if self._dead is not None:
            raise self._dead
