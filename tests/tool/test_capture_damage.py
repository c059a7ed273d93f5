"""A capture damaged the ways real ones are — cut at random points, segments reordered, duplicated, the file torn —
decodes the same exchanges as the whole one, less what was cut; the request of an answer cut away is worked out; and
bad input never gives a traceback (exit 0 all decoded, 1 not all, 2 not a capture)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import dpkt
import pytest
from conftest import ClientCapture, bruce_wire, json_lines

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


def _exchanges(out: bytes) -> dict[tuple[str, str, int], str]:
    """(conn, direction, correlation id) -> the decoded message (without times) as JSON text."""
    found = {}
    for m in json_lines(out):
        if "direction" in m and m["direction"] in ("request", "answer"):
            key = (m["conn"], m["direction"], m["correlation_id"])
            found[key] = json.dumps({k: m.get(k) for k in ("api", "version", "body", "hex", "how")}, sort_keys=True)
    return found


@pytest.fixture(scope="module")
def whole(client_capture: ClientCapture) -> dict[tuple[str, str, int], str]:
    run = bruce_wire("pcap", "--json", str(client_capture.path))
    assert run.returncode == 0, run.stderr.decode()
    return _exchanges(run.stdout)


def test_reordered_and_duplicated_segments_decode_the_same(
    client_capture: ClientCapture, whole: dict[tuple[str, str, int], str], tmp_path: Path
) -> None:
    linktype, packets = _packets(client_capture.path)
    rng = random.Random(7)
    shuffled = list(packets)
    direction = [_direction(linktype, buf) for _, buf in packets]
    for i in range(1, len(shuffled) - 1, 3):  # swap neighbours going the same way, duplicate some
        if direction[i] is not None and direction[i] == direction[i + 1] and rng.random() < 0.5:
            shuffled[i], shuffled[i + 1] = shuffled[i + 1], shuffled[i]
    shuffled = [p for p in shuffled for _ in range(2 if rng.random() < 0.2 else 1)]
    run = bruce_wire("pcap", "--json", str(_write(tmp_path / "shuffled.pcap", linktype, shuffled)))
    assert run.returncode == 0, run.stderr.decode()
    assert _exchanges(run.stdout) == whole
    assert b"retransmitted segments" in run.stderr and b" 0 retransmitted" not in run.stderr


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_capture_cut_at_random_points_keeps_every_exchange_it_still_holds(
    client_capture: ClientCapture, whole: dict[tuple[str, str, int], str], tmp_path: Path, seed: int
) -> None:
    linktype, packets = _packets(client_capture.path)
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(len(packets)), 4))
    kept = [p for i, p in enumerate(packets) if not any(c <= i < c + 3 for c in cuts)]
    run = bruce_wire("pcap", "--json", str(_write(tmp_path / "cut.pcap", linktype, kept)))
    assert run.returncode in (0, 1) and b"Traceback" not in run.stderr, run.stderr.decode()
    cut = _exchanges(run.stdout)
    for key, message in cut.items():
        if key in whole:
            if json.loads(message)["how"]:  # worked out from its shape: versions with the same answer schema are alike
                message, expected = json.loads(message), json.loads(whole[key])
                assert (message["api"], message["body"]) == (expected["api"], expected["body"]), key
            else:
                assert message == whole[key], key  # nothing decoded differently
    lost = set(whole) - set(cut)
    assert len(lost) <= 4 * 3 * 2 + 4, lost  # at most the exchanges the dropped packets carried (and a few neighbours)
    assert len(cut) >= len(whole) - len(lost)


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


def test_not_a_capture_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "x").write_bytes(b"hello world, not a capture")
    for args in (["pcap", str(tmp_path / "x")], ["pcap", str(tmp_path / "missing")], ["pcap"], ["pcap", "--nope", "x"]):
        run = bruce_wire(*args)
        assert run.returncode == 2 and b"Traceback" not in run.stderr, (args, run.stderr)


def test_live_from_a_pipe_each_exchange_is_printed_as_it_completes(client_capture: ClientCapture) -> None:
    """``tcpdump -U -w - | bruce-wire pcap -``: the first exchange comes out before the capture is finished."""
    import subprocess
    import sys

    data = client_capture.path.read_bytes()
    script = Path(sys.executable).parent / "bruce-wire"
    process = subprocess.Popen([str(script), "pcap", "--json", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(data[: len(data) // 3])
    process.stdin.flush()
    first = json.loads(process.stdout.readline())  # arrives while stdin is still open
    assert first["direction"] == "request" and "body" in first
    process.stdin.write(data[len(data) // 3 :])
    process.stdin.close()
    rest = process.stdout.read()
    assert process.wait(timeout=60) == 0
    assert len(rest.splitlines()) > 50
