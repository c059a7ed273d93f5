"""Fuzz plog's packet parsers and the reassembly buffer.

Invariants:
- :func:`bruce.wire.plog.parse_packet` parses or raises :class:`MalformedInput`, never anything else, and agrees
  with the construct schema (same value, or the same reason).
- Fed any sequence of packets, the defragmenter never holds more than its capacity, its accounting matches what it
  holds, whatever it delivers matches its checksum, and every message it began ends exactly once: ``begun ==
  delivered + dropped + pending`` (a dropped message is reported to ``on_drop`` with a sample no longer than it).

Input: the whole input is one packet; it is also read as a sequence of frames ``[u8 sender][u16 length][packet]``
fed to a defragmenter with a 8 KiB capacity (sender bit 7 advances the clock past the expiry).

Run: ``python fuzz/fuzz_plog.py fuzz/corpus/plog`` (libFuzzer options such as ``-max_total_time=30`` apply).
"""

from __future__ import annotations

import struct
import sys

import atheris

with atheris.instrument_imports(include=["bruce.wire.plog", "bruce.proxy.plog.defrag", "bruce.proxy.plog.stats"]):
    from bruce.proxy.plog.defrag import INVALID_FRAGMENT, Defragmenter
    from bruce.proxy.plog.stats import PlogStats
    from bruce.wire.errors import MalformedInput
    from bruce.wire.plog import Fragment, murmur3_32, parse_packet, parse_packet_schema

CAPACITY = 8192


def _parse_both(data: bytes):
    try:
        fast = parse_packet(data)
    except MalformedInput as e:
        fast = ("rejected", e.reason)
    try:
        reference = parse_packet_schema(data)
    except MalformedInput as e:
        reference = ("rejected", e.reason)
    if fast != reference:
        raise AssertionError(f"fast parser {fast!r} != schema {reference!r} for {data!r}")
    return fast


def _frames(data: bytes):
    pos = 0
    while pos + 3 <= len(data):
        sender = data[pos]
        (length,) = struct.unpack_from(">H", data, pos + 1)
        pos += 3
        yield sender, data[pos : pos + length]
        pos += length


def test_one_input(data: bytes) -> None:
    _parse_both(data)
    now = [0.0]
    dropped = [0]

    def on_drop(what: str, sample: bytes) -> None:
        if len(sample) > CAPACITY + 0xFFFF:
            raise AssertionError(f"a {what} drop reported a {len(sample)}-byte sample")
        if what != INVALID_FRAGMENT:
            dropped[0] += 1

    d = Defragmenter(PlogStats("fuzz"), capacity=CAPACITY, expiry=10.0, clock=lambda: now[0], on_drop=on_drop)
    delivered = 0
    for sender, packet in _frames(data):
        if sender & 0x80:
            now[0] += 11.0
        parsed = _parse_both(packet)
        if isinstance(parsed, Fragment):
            done = d.add(("127.0.0.1", sender & 0x03), parsed)
            if done is not None:
                delivered += 1
                if murmur3_32(done.message) != parsed.checksum:
                    raise AssertionError("delivered a message whose checksum does not match")
        if d.used > CAPACITY or d.used != sum(e.charge for e in d._pending.values()):
            raise AssertionError(f"defragmenter holds {d.used} bytes for a capacity of {CAPACITY}")
        if d.begun != delivered + dropped[0] + len(d):
            counts = f"{delivered} delivered, {dropped[0]} dropped, {len(d)} held"
            raise AssertionError(f"{d.begun} messages begun but {counts}")


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
