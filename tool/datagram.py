"""``bruce-wire datagram`` and ``bruce-wire plog``: one of Bruce's input datagrams, or one plog UDP packet, decoded
(from a file, ``--hex`` or standard input); ``datagram --encode`` builds a datagram from JSON.

Rules:
- Decoding goes through bruce.wire (:func:`~bruce.wire.parse_datagram`, :func:`~bruce.wire.parse_packet`): a datagram
  that does not parse is reported with bruce.wire's reason (``MALFORMED``, ``API_KEY``, ``VERSION``, ...), exit 1.
- ``--encode`` reads ``{"kind": "any_partition" | "partition_key" | "old_v0", "topic", "value", "key",
  "timestamp", "partition_key"}``; ``value`` and ``key`` are text or ``{"base64": ...}``; a missing ``timestamp``
  is now. What cannot be encoded is a usage error (exit 2).
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from bruce.wire import (
    MalformedInput,
    UsageError,
    build_any_partition,
    build_old_v0,
    build_partition_key,
    parse_datagram,
    parse_packet,
)

from .jsonout import JsonWriter
from .plogview import plog_tree
from .records import iso_ms, text_or_base64

T = TypeVar("T")


def _input(args: argparse.Namespace) -> bytes | None:
    if args.hex is not None:
        try:
            return bytes.fromhex(args.hex)
        except ValueError:
            sys.stderr.write("bruce-wire: --hex: not hex digits\n")
            return None
    try:
        if args.file == "-":
            return sys.stdin.buffer.read()
        with open(args.file, "rb") as f:
            return f.read()
    except OSError as e:
        sys.stderr.write(f"bruce-wire: cannot read {args.file}: {e.strerror}\n")
        return None


def _show(value: dict[str, Any], as_json: bool) -> None:
    if as_json:
        JsonWriter(sys.stdout).line(value)
    else:
        for key, item in value.items():
            print(f"{key}: {json.dumps(item, ensure_ascii=False)}")


def _decoded(args: argparse.Namespace, parse: Callable[[bytes], T]) -> tuple[bytes, T] | int:
    """The input and what ``parse`` makes of it, or the exit status (2: no input, 1: it does not parse, reported)."""
    data = _input(args)
    if data is None:
        return 2
    try:
        return data, parse(data)
    except MalformedInput as e:
        _show({"error": str(e), "reason": e.reason, "size": len(data), "hex": data[:256].hex()}, args.json)
        return 1


def main(args: argparse.Namespace) -> int:
    if args.encode:
        return _encode(args)
    found = _decoded(args, parse_datagram)
    if isinstance(found, int):
        return found
    data, d = found
    value: dict[str, Any] = {
        "kind": d.kind.name.lower(),
        "topic": text_or_base64(d.topic),
        "ts": d.timestamp,
        "ts_iso": iso_ms(d.timestamp),
        "key": text_or_base64(d.key),
        "payload": text_or_base64(d.value),
        "size": len(data),
    }
    if d.partition_key is not None:
        value["partition_key"] = d.partition_key
    _show(value, args.json)
    return 0


def _bytes(value: Any, what: str) -> bytes:
    if value is None:
        return b""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, dict) and isinstance(value.get("base64"), str):
        return base64.b64decode(value["base64"], validate=True)
    raise UsageError(f'{what}: expected text or {{"base64": ...}}')


def _encode(args: argparse.Namespace) -> int:
    data = _input(args)
    if data is None:
        return 2
    try:
        spec: dict[str, Any] = json.loads(data)
        if not isinstance(spec, dict):
            raise UsageError("expected a JSON object")
        kind = spec.get("kind", "any_partition")
        topic = spec["topic"]
        value = _bytes(spec.get("value", spec.get("payload")), "value")
        key = _bytes(spec.get("key"), "key")
        ts = int(spec.get("timestamp", spec.get("ts", time.time_ns() // 1_000_000)) or 0)
        if kind == "any_partition":
            out = build_any_partition(topic, value, key, timestamp=ts)
        elif kind == "partition_key":
            out = build_partition_key(topic, value, key, partition_key=int(str(spec["partition_key"])), timestamp=ts)
        elif kind == "old_v0":
            out = build_old_v0(topic, value, timestamp=ts)
        else:
            raise UsageError(f"unknown kind {kind!r} (any_partition, partition_key, old_v0)")
    except (ValueError, KeyError, TypeError, UsageError) as e:  # JSON errors are ValueErrors
        sys.stderr.write(f"bruce-wire: cannot encode: {e!s}\n")
        return 2
    if args.output_hex:
        sys.stdout.write(out.hex() + "\n")
    else:
        sys.stdout.buffer.write(out)
    return 0


def plog_main(args: argparse.Namespace) -> int:
    found = _decoded(args, parse_packet)
    if isinstance(found, int):
        return found
    _, packet = found
    _show(plog_tree(packet), args.json)
    return 0
