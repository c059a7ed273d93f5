"""Fuzz bruce-wire's capture path: pcap bytes → packets → TCP reassembly → Kafka framing → decoding → JSON.

Invariants:
- :class:`bruce.tool.pcap_cmd.PcapRun` on any bytes either refuses them as not a capture (:class:`CaptureError`) or
  reads them to the end: no other exception, whatever the link layers, IP and TCP headers, sequence numbers and
  frames hold. Whatever it writes is JSON lines.
- The same bytes fed to one reassembled direction and framer, as a stream cut into arbitrary pieces, give frames
  whose sizes fit what was fed.

Input: the whole input is a pcap file (seeds: ``fuzz/corpus/capture/``, a small capture of Kafka traffic).

Run: ``python fuzz/fuzz_capture.py fuzz/corpus/capture`` (libFuzzer options such as ``-max_total_time=30`` apply).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys

import atheris

with atheris.instrument_imports(include=["bruce.tool"]):
    from bruce.tool.capture import CaptureError
    from bruce.tool.framing import Frame, Framer, request_start
    from bruce.tool.pcap_cmd import PcapOptions, PcapRun
    from bruce.tool.reassembly import Stream


def test_one_input(data: bytes) -> None:
    out = io.StringIO()
    with contextlib.suppress(CaptureError):  # not a capture: refused cleanly
        PcapRun(PcapOptions(json=True, max_frame=1 << 20), out).run(io.BytesIO(data))
    for line in out.getvalue().splitlines():
        json.loads(line)
    stream = Stream(max_pending=4096)
    framer = Framer(lambda buf, pos: request_start(buf, pos, 1 << 20), max_frame=1 << 20, synced=False)
    fed = 0
    seq = 0
    for i in range(0, len(data), 7):
        piece = data[i : i + 7]
        seq = (seq + (len(piece) if piece[:1] != b"\xff" else 3 * len(piece))) % (1 << 32)
        for item in stream.add(seq, piece, float(i)):
            for framed in framer.feed(item, 0.0):
                fed += 1
                if isinstance(framed, Frame):
                    assert len(framed.data) <= 1 << 20
    for item in stream.finish():
        framer.feed(item, 0.0)
    framer.finish()


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
