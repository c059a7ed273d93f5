"""A capture damaged the ways real ones are — packets cut anywhere, segments reordered, duplicated, the file torn —
decodes the same exchanges as the whole one, less what was cut; the request of an answer cut away is worked out; and
bad input never gives a traceback (exit 0 all decoded, 1 not all, 2 not a capture). The damage is done at every
position of every connection in turn, so that the tests hold whatever the session's capture happens to contain."""

from __future__ import annotations

import io
import itertools
import json
import random
from pathlib import Path
from typing import Any

import dpkt
import pytest
from conftest import ClientCapture, bruce_wire, json_lines

from bruce.tool.exchanges import FrameMessage
from bruce.tool.pcap_cmd import PcapOptions, PcapRun

pytestmark = pytest.mark.e2e


def _packets(path: Path) -> tuple[int, list[tuple[float, bytes]]]:
    with path.open("rb") as f:
        reader = dpkt.pcap.Reader(f)
        return reader.datalink(), [(ts, bytes(buf)) for ts, buf in reader]


def _write(path: Path, linktype: int, packets: list[tuple[float, bytes]]) -> Path:
    with path.open("wb") as f:
        writer = dpkt.pcap.Writer(f, linktype=linktype)
        for ts, buf in packets:
            writer.writepkt(buf, ts)
    return path


def _direction(linktype: int, buf: bytes) -> tuple[str, int, str, int] | None:
    from bruce.tool.packets import TcpSegment, decode_packet

    seg = decode_packet(linktype, buf)
    return (seg.src, seg.sport, seg.dst, seg.dport) if isinstance(seg, TcpSegment) else None


class _Collect(PcapRun):
    """The pipeline as the command runs it, keeping every decoded message by (connection, side, correlation id)."""

    def __init__(self) -> None:
        super().__init__(PcapOptions(json=True), io.StringIO())
        self.found: dict[tuple[str, bool, int], FrameMessage] = {}

    def _message(self, conn: Any, m: FrameMessage) -> None:
        if m.correlation_id is not None:
            self.found[(m.conn, m.from_client, m.correlation_id)] = m
        super()._message(conn, m)


def _pcap(linktype: int, packets: list[tuple[float, bytes]]) -> io.BytesIO:
    buf = io.BytesIO()
    writer = dpkt.pcap.Writer(buf, linktype=linktype)
    for ts, data in packets:
        writer.writepkt(data, ts)
    return io.BytesIO(buf.getvalue())


def _decode(linktype: int, packets: list[tuple[float, bytes]]) -> dict[tuple[str, bool, int], FrameMessage]:
    run = _Collect()
    run.run(_pcap(linktype, packets))
    return run.found


def _payload(linktype: int, buf: bytes) -> int:
    from bruce.tool.packets import TcpSegment, decode_packet

    seg = decode_packet(linktype, buf)
    return len(seg.payload) if isinstance(seg, TcpSegment) else 0


def _streams(linktype: int, packets: list[tuple[float, bytes]]) -> dict[frozenset[tuple[str, int]], list[int]]:
    """Each TCP connection's packets (indexes), in capture order."""
    from bruce.tool.packets import TcpSegment, decode_packet

    conns: dict[frozenset[tuple[str, int]], list[int]] = {}
    for i, (_, buf) in enumerate(packets):
        seg = decode_packet(linktype, buf)
        if isinstance(seg, TcpSegment):
            conns.setdefault(frozenset({(seg.src, seg.sport), (seg.dst, seg.dport)}), []).append(i)
    return conns


def _same(got: dict[Any, FrameMessage], whole: dict[Any, FrameMessage]) -> None:
    assert set(got) == set(whole)
    for key, m in whole.items():
        assert (got[key].api_key, got[key].version, got[key].body, got[key].raw) == (
            m.api_key,
            m.version,
            m.body,
            m.raw,
        )


def test_reordered_and_duplicated_segments_decode_the_same(client_capture: ClientCapture) -> None:
    """On each connection, every pair of neighbouring packets going the same way swapped in turn (a FIN before the
    bytes it follows included), and every packet captured twice: the same messages as the whole capture."""
    linktype, packets = _packets(client_capture.path)
    swaps = 0
    for indexes in _streams(linktype, packets).values():
        own = [packets[i] for i in indexes]
        whole = _decode(linktype, own)
        direction = [_direction(linktype, buf)[:2] for _, buf in own]  # type: ignore[index]  # all TCP here
        for i in range(len(own) - 1):
            if direction[i] == direction[i + 1]:
                swapped = [*own[:i], own[i + 1], own[i], *own[i + 2 :]]
                _same(_decode(linktype, swapped), whole)
                swaps += 1
        twice = _Collect()
        twice.run(_pcap(linktype, [p for p in own for _ in range(2)]))
        _same(twice.found, whole)
        assert twice.connections.duplicates >= sum(1 for _, buf in own if _payload(linktype, buf))
    assert swaps > 100


def _hit(
    linktype: int, packets: list[tuple[float, bytes]], dropped: list[int], whole: dict[Any, FrameMessage]
) -> set[Any]:
    """The messages of ``whole`` that the dropped packets carried a byte of (by stream offsets from each SYN)."""
    from bruce.tool.packets import SYN, TcpSegment, decode_packet

    starts: dict[tuple[str, int], int] = {}
    for _, buf in packets:
        seg = decode_packet(linktype, buf)
        if isinstance(seg, TcpSegment) and seg.flags & SYN:
            starts[(seg.src, seg.sport)] = seg.seq + 1
    lost: list[tuple[tuple[str, int], int, int]] = []
    for i in dropped:
        seg = decode_packet(linktype, packets[i][1])
        assert isinstance(seg, TcpSegment)
        if seg.payload:
            begin = (seg.seq - starts[(seg.src, seg.sport)]) % (1 << 32)
            lost.append(((seg.src, seg.sport), begin, begin + len(seg.payload)))
    hit: set[Any] = set()
    for key, m in whole.items():
        client, server = m.conn.split(">")
        host, port = (client if m.from_client else server).rsplit(":", 1)
        for sender, begin, end in lost:
            if sender == (host, int(port)) and begin < m.offset + 4 + m.size and m.offset < end:
                hit.add(key)
    return hit


def test_a_capture_cut_anywhere_keeps_every_exchange_it_still_holds(client_capture: ClientCapture) -> None:
    """Every cut point, whatever the capture holds: on each connection, drop 1, 2 and 3 consecutive packets starting
    at each of its packets in turn. Every message the dropped packets did not carry is decoded as in the whole
    capture; an answer whose request was dropped is decoded the same when its (api, version) was decided, with its
    API and body when its versions read it alike, and names the true (api, version) among its candidates when
    ambiguous. A connection left with no request at all is not recognised (nothing says it is Kafka), which is the
    only other loss."""
    linktype, packets = _packets(client_capture.path)
    outcomes: dict[str, int] = {}
    for indexes in _streams(linktype, packets).values():
        own = [packets[i] for i in indexes]
        whole = _decode(linktype, own)
        assert whole, "a connection of the session capture decodes to nothing"
        for start, width in itertools.product(range(len(own)), (1, 2, 3)):
            dropped = list(range(start, min(start + width, len(own))))
            cut = _decode(linktype, [p for i, p in enumerate(own) if i not in dropped])
            hit = _hit(linktype, own, dropped, whole)
            if not any(from_client for (_, from_client, _) in set(whole) - hit):
                hit = set(whole)  # no request left: the connection is not recognised as Kafka
            for key, expected in whole.items():
                if key not in cut:
                    assert key in hit, (start, key)
                    continue
                got = cut[key]
                if not got.how:
                    assert (got.api_key, got.version, got.body, got.raw) == (
                        expected.api_key,
                        expected.version,
                        expected.body,
                        expected.raw,
                    ), key
                    continue
                assert (expected.api_key, expected.version) in got.candidates, (key, got.how)
                if got.version is not None:
                    kind = "decided"
                    assert (got.api_key, got.version, got.body) == (expected.api_key, expected.version, expected.body)
                elif got.api_key is not None:
                    kind = "alike"
                    assert got.api_key == expected.api_key and expected.version in got.alike, got.how
                    assert got.body == expected.body, key
                else:
                    kind = "ambiguous"
                    assert got.body is None and got.raw is not None and len(got.raw) == expected.size, key
                    assert "ambiguous: " in got.how, got.how
                outcomes[kind] = outcomes.get(kind, 0) + 1
    assert outcomes.get("decided", 0) > 0 and outcomes.get("alike", 0) > 0, outcomes  # both rules were exercised


def test_an_answer_whose_request_was_cut_is_still_decoded(client_capture: ClientCapture, tmp_path: Path) -> None:
    """Drop the packet carrying one Metadata request: its answer is decoded from its shape, and says how."""
    from bruce.tool.packets import TcpSegment, decode_packet

    linktype, packets = _packets(client_capture.path)
    target = None
    for i, (_, buf) in enumerate(packets):
        seg = decode_packet(linktype, buf)
        if isinstance(seg, TcpSegment) and len(seg.payload) > 8 and bytes(seg.payload[4:6]) == b"\x00\x03":
            target = i  # a Metadata request (api key 3) in one segment
            break
    assert target is not None
    run = bruce_wire(
        "pcap", "--json", str(_write(tmp_path / "orphan.pcap", linktype, packets[:target] + packets[target + 1 :]))
    )
    answers = [m for m in json_lines(run.stdout) if m.get("direction") == "answer" and "how" in m]
    assert answers and answers[0]["api"] == "Metadata" and "body" in answers[0]
    assert "request not captured" in answers[0]["how"]


@pytest.mark.parametrize("seed", range(4))
def test_a_torn_capture_file_never_gives_a_traceback(client_capture: ClientCapture, tmp_path: Path, seed: int) -> None:
    data = client_capture.path.read_bytes()
    at = random.Random(seed).randrange(24, len(data))
    torn = tmp_path / "torn.pcap"
    torn.write_bytes(data[:at])
    run = bruce_wire("pcap", str(torn))
    assert run.returncode in (0, 1) and b"Traceback" not in run.stderr, run.stderr.decode()


def test_garbage_inside_frames_is_reported_with_its_path_and_decoding_goes_on(
    client_capture: ClientCapture, tmp_path: Path
) -> None:
    """Corrupt a Produce request's topic-name length in place: that frame is reported (connection, offset, field
    path), the frames after it still decode, exit status 1."""
    from bruce.tool.packets import TcpSegment, decode_packet

    linktype, packets = _packets(client_capture.path)
    for i, (ts, buf) in enumerate(packets):  # noqa: B007  # the loop finds i, ts and buf
        seg = decode_packet(linktype, buf)
        if isinstance(seg, TcpSegment) and len(seg.payload) > 40 and bytes(seg.payload[4:8]) == b"\x00\x00\x00\x07":
            break  # Produce v7 (the tshark-range client): classic strings
    start = len(buf) - len(seg.payload)
    n = int.from_bytes(buf[start + 12 : start + 14], "big")  # client id length
    at = start + 14 + n + 2 + 2 + 4 + 4 + 4  # transactional id (null), acks, timeout, topic count -> name length
    broken = buf[:at] + b"\x7f\xff" + buf[at + 2 :]
    packets[i] = (ts, broken)
    run = bruce_wire("pcap", "--json", str(_write(tmp_path / "bad.pcap", linktype, packets)))
    assert run.returncode == 1, run.stderr.decode()
    messages = json_lines(run.stdout)
    bad = [m for m in messages if "error" in m]
    assert len(bad) == 1 and bad[0]["api"] == "Produce" and "hex" in bad[0]
    assert bad[0]["error"]["path"].startswith("body -> topic_data -> [0]")
    assert bad[0]["error"]["offset"] >= 0 and bad[0]["conn"]
    after = messages.index(bad[0])
    assert any("body" in m for m in messages[after + 1 :])


def test_a_record_batch_that_does_not_decode_is_reported_and_the_rest_goes_on(
    client_capture: ClientCapture, tmp_path: Path
) -> None:
    """Flip the last byte of a Produce request (inside its last record batch): the frame decodes, that batch is
    reported with its position and the CRC it fails, the other messages decode, exit status 1."""
    from bruce.tool.packets import TcpSegment, decode_packet

    linktype, packets = _packets(client_capture.path)

    def whole_produce_v7(seg: object) -> bool:  # a Produce v7 request (the tshark-range client) in one segment
        if not isinstance(seg, TcpSegment) or len(seg.payload) < 40:
            return False
        return bytes(seg.payload[4:8]) == b"\x00\x00\x00\x07" and int.from_bytes(seg.payload[:4]) + 4 == len(
            seg.payload
        )

    i, (ts, buf) = next((i, p) for i, p in enumerate(packets) if whole_produce_v7(decode_packet(linktype, p[1])))
    packets[i] = (ts, buf[:-1] + bytes([buf[-1] ^ 0xFF]))
    run = bruce_wire("pcap", "--json", str(_write(tmp_path / "bad-batch.pcap", linktype, packets)))
    assert run.returncode == 1 and b"1 record batches do not decode" in run.stderr, run.stderr.decode()
    messages = json_lines(run.stdout)
    produce = [m for m in messages if m.get("api") == "Produce" and "body" in m and m["direction"] == "request"]
    bad = [b for m in produce for t in m["body"]["topic_data"] for p in t["partition_data"] for b in p["records"]]
    bad = [b for b in bad if "error" in b]
    assert len(bad) == 1 and "CRC" in bad[0]["error"] and bad[0]["position"] >= 0 and bad[0]["records"] == []
    assert len(messages) == len(json_lines(bruce_wire("pcap", "--json", str(client_capture.path)).stdout))


def test_not_a_capture_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "x").write_bytes(b"hello world, not a capture")
    for args in (["pcap", str(tmp_path / "x")], ["pcap", str(tmp_path / "missing")], ["pcap"], ["pcap", "--nope", "x"]):
        run = bruce_wire(*args)
        assert run.returncode == 2 and b"Traceback" not in run.stderr, (args, run.stderr)


def test_live_from_a_pipe_each_exchange_is_printed_as_it_completes(client_capture: ClientCapture) -> None:
    """``tcpdump -U -w - | bruce-wire pcap -``: the first answer comes out as soon as the packet completing it is
    written, while standard input stays open (the output read by a thread as it comes, so that neither side waits on
    a full pipe; every wait bounded)."""
    import queue
    import subprocess
    import sys
    import threading

    linktype, packets = _packets(client_capture.path)
    first = next(n for n in range(1, len(packets)) if any(not c for _, c, _ in _decode(linktype, packets[:n])))
    data = _pcap(linktype, packets).getvalue()
    cut = len(_pcap(linktype, packets[:first]).getvalue())  # the file up to the packet completing the first answer
    script = Path(sys.executable).parent / "bruce-wire"
    process = subprocess.Popen([str(script), "pcap", "--json", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    lines: queue.Queue[bytes] = queue.Queue()
    stdout = process.stdout
    reader = threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True)
    reader.start()
    try:
        process.stdin.write(data[:cut])
        process.stdin.flush()
        seen = [json.loads(lines.get(timeout=30))]
        while seen[-1].get("direction") != "answer":
            seen.append(json.loads(lines.get(timeout=30)))  # arrives while standard input is still open
        assert seen[0]["direction"] == "request" and "body" in seen[-1] and process.poll() is None
        process.stdin.write(data[cut:])
        process.stdin.close()
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
    reader.join(timeout=30)
    assert not reader.is_alive()
    assert len(seen) + lines.qsize() > 200
