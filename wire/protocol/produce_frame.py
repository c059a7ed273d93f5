"""A Produce request's frame as a list of buffers that refer to the records instead of copying them.

Rules:
- ``b"".join(produce_frame(...))`` equals :func:`~bruce.wire.protocol.base.encode_request`'s frame for the same
  request, byte for byte, at every version (the differential test in tests/wire_modern). The records of each
  partition are list items as given (no copy): a writer hands the list to the socket in one gathered write.
- Only the fields between the records are written here, in the order the schema has them
  (:mod:`bruce.wire.protocol.produce`); a request with tagged fields, one of a version that names topics by id (v13+),
  or one this writer cannot take, goes through the general encoder (a list of one buffer).
- Records smaller than :data:`INLINE` are copied into the surrounding bytes (fewer, larger buffers).
"""

from __future__ import annotations

import struct

from ..errors import UsageError
from ..primitives import encode_unsigned_varint
from .base import encode_request
from .produce import FIRST_FLEXIBLE, TOPIC_IDS, VERSIONS, ProduceRequest

INLINE = 4096  # records below this size are copied into the frame's other bytes
_HEAD = struct.Struct(">ihhi")  # size, api key, api version, correlation id
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")
_NULL_FLEX = b"\x00"
_NULL16 = _INT16.pack(-1)
_NULL32 = _INT32.pack(-1)


def produce_frame(body: ProduceRequest, *, version: int, correlation_id: int, client_id: str | None) -> list[bytes]:
    """The frame of ``body`` at ``version`` (size prefix, header, body) as buffers whose join is the whole frame."""
    if version not in VERSIONS or version >= TOPIC_IDS or _tagged(body) or type(body) is not ProduceRequest:
        return [encode_request(body, version=version, correlation_id=correlation_id, client_id=client_id)]
    flexible = version >= FIRST_FLEXIBLE
    try:
        out: list[bytes] = []
        head = bytearray(_HEAD.pack(0, 0, version, correlation_id))
        head += _NULL16 if client_id is None else _string16(client_id)  # a classic string even in v2 headers
        if flexible:
            head += b"\x00"  # the header's tagged fields
        if version >= 3:
            head += _nullable_string(body.transactional_id, flexible)
        head += _ACKS_TIMEOUT.pack(body.acks, body.timeout_ms)
        head += _count(len(body.topic_data), flexible)
        for topic in body.topic_data:
            head += _string(topic.name, flexible)
            head += _count(len(topic.partition_data), flexible)
            for part in topic.partition_data:
                head += _INT32.pack(part.index)
                records = part.records
                if records is None:
                    head += _NULL_FLEX if flexible else _NULL32
                else:
                    size = len(records)
                    head += encode_unsigned_varint(size + 1) if flexible else _INT32.pack(size)
                    if size < INLINE:
                        head += records
                    else:
                        out.append(bytes(head))
                        out.append(records)
                        head = bytearray()
                if flexible:
                    head += b"\x00"  # the partition's tagged fields
            if flexible:
                head += b"\x00"  # the topic's tagged fields
        if flexible:
            head += b"\x00"  # the body's tagged fields
        out.append(bytes(head))
    except (struct.error, TypeError, AttributeError, UnicodeEncodeError, UsageError):  # the general encoder says why
        return [encode_request(body, version=version, correlation_id=correlation_id, client_id=client_id)]
    first = bytearray(out[0])
    _INT32.pack_into(first, 0, sum(map(len, out)) - 4)
    out[0] = bytes(first)
    return out


def _tagged(body: ProduceRequest) -> bool:
    """Whether any tagged field is set (written by the general encoder)."""
    return bool(body.tags) or any(t.tags or any(p.tags for p in t.partition_data) for t in body.topic_data)


def _string16(text: str) -> bytes:
    data = text.encode()
    if len(data) > 0x7FFF:
        raise UsageError(f"a string of {len(data)} bytes does not fit an int16 length")
    return _INT16.pack(len(data)) + data


def _string(text: str, flexible: bool) -> bytes:
    if flexible:
        data = text.encode()
        return encode_unsigned_varint(len(data) + 1) + data
    return _string16(text)


def _nullable_string(text: str | None, flexible: bool) -> bytes:
    if text is None:
        return _NULL_FLEX if flexible else _NULL16
    return _string(text, flexible)


def _count(n: int, flexible: bool) -> bytes:
    return encode_unsigned_varint(n + 1) if flexible else _INT32.pack(n)
