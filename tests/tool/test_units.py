"""bruce-wire's pure parts without a broker: link layers and IP versions, TCP reassembly, framing and its
resynchronisation, producer sequences, records of every magic and codec, the outputs."""

from __future__ import annotations

import base64
import io
import json
import struct

import dpkt
import pytest
from conftest import plain_records

from bruce.tool.framing import Frame, Framer, LostBytes, request_start
from bruce.tool.packets import SLL, SLL2, TcpSegment, decode_packet
from bruce.tool.reassembly import Gap, Stream
from bruce.tool.records import batches
from bruce.tool.sequences import Sequences
from bruce.wire import Codec, build_message_set, build_record_batch, decode_columns, encode_request, metadata_request


def _tcp_ip4(payload: bytes, seq: int = 1000) -> bytes:
    tcp = dpkt.tcp.TCP(sport=40000, dport=9092, seq=seq, flags=dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, data=payload)
    ip = dpkt.ip.IP(src=bytes([127, 0, 0, 1]), dst=bytes([127, 0, 0, 2]), p=dpkt.ip.IP_PROTO_TCP, data=tcp)
    ip.len = len(bytes(ip))
    return bytes(ip)


def _tcp_ip6(payload: bytes) -> bytes:
    tcp = dpkt.tcp.TCP(sport=40000, dport=9092, seq=5, flags=dpkt.tcp.TH_ACK, data=payload)
    ip = dpkt.ip6.IP6(src=b"\x00" * 15 + b"\x01", dst=b"\x00" * 15 + b"\x01", nxt=dpkt.ip.IP_PROTO_TCP, hlim=64)
    ip.data = tcp
    ip.plen = len(bytes(tcp))
    return bytes(ip)


@pytest.mark.parametrize(
    ("linktype", "wrap"),
    [
        (1, lambda ip, v: b"\x00" * 12 + (b"\x08\x00" if v == 4 else b"\x86\xdd") + ip),  # Ethernet
        (1, lambda ip, v: b"\x00" * 12 + b"\x81\x00\x00\x05" + (b"\x08\x00" if v == 4 else b"\x86\xdd") + ip),  # VLAN
        (SLL, lambda ip, v: b"\x00" * 14 + (b"\x08\x00" if v == 4 else b"\x86\xdd") + ip),
        (SLL2, lambda ip, v: (b"\x08\x00" if v == 4 else b"\x86\xdd") + b"\x00" * 18 + ip),
        (0, lambda ip, v: struct.pack("<I", 2 if v == 4 else 30) + ip),  # BSD loopback (null)
        (108, lambda ip, v: struct.pack(">I", 2 if v == 4 else 24) + ip),  # OpenBSD loop
        (101, lambda ip, v: ip),  # raw IP
    ],
)
@pytest.mark.parametrize("version", [4, 6])
def test_link_layers_and_ip_versions(linktype: int, wrap: object, version: int) -> None:
    ip = _tcp_ip4(b"hello") if version == 4 else _tcp_ip6(b"hello")
    seg = decode_packet(linktype, wrap(ip, version))  # type: ignore[operator]
    assert isinstance(seg, TcpSegment) and bytes(seg.payload) == b"hello" and seg.dport == 9092
    assert seg.src == ("127.0.0.1" if version == 4 else "::1")


def test_packets_never_raise_on_any_prefix() -> None:
    packet = b"\x00" * 12 + b"\x08\x00" + _tcp_ip4(b"data")
    for n in range(len(packet)):
        decode_packet(1, packet[:n])  # None or a segment, never an exception


def test_reassembly_orders_drops_duplicates_and_reports_gaps() -> None:
    s = Stream(max_pending=100)
    s.syn(99)
    assert s.add(100, b"abc", 0.0) == [b"abc"]
    assert s.add(100, b"abc", 0.0) == []  # duplicate
    assert s.add(106, b"ghi", 0.0) == []  # out of order: waits
    assert s.add(102, b"cdef", 0.0) == [b"def", b"ghi"]  # overlap trimmed, the waiting one follows
    assert s.duplicates == 1
    assert s.add(120, b"x", 0.0) == []
    assert s.finish() == [Gap(9, 11, "hole"), b"x"]


def test_reassembly_bounds_what_waits() -> None:
    s = Stream(max_pending=10)
    s.add(0, b"a", 0.0)
    out = s.add(50, b"0123456789AB", 0.0)  # more than max_pending after a hole: the hole is given up
    assert out == [Gap(1, 49, "overflow"), b"0123456789AB"] and s.overflows == 1
    s2 = Stream(max_wait=1.0)
    s2.add(0, b"a", 0.0)
    assert s2.add(5, b"b", 0.5) == []
    assert s2.add(9, b"c", 2.0)[0] == Gap(1, 4, "timeout")


def test_sequence_numbers_wrap() -> None:
    s = Stream()
    s.add(2**32 - 2, b"ab", 0.0)
    assert s.add(0, b"cd", 0.0) == [b"cd"]


def _frame(version: int = 1, correlation: int = 7) -> bytes:
    return encode_request(metadata_request(["t"], version=version), version=version, correlation_id=correlation)


def test_request_start_by_shape() -> None:
    frame = _frame()
    assert request_start(frame, 0) is True
    assert request_start(frame[:10], 0) is None
    assert request_start(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 0) is False
    assert request_start(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 20, 0) is False  # TLS hello


def test_framer_cuts_frames_fed_byte_by_byte_and_resyncs_after_a_gap() -> None:
    frames = _frame(correlation=1) + _frame(correlation=2) + _frame(correlation=3)
    f = Framer(lambda b, p: request_start(b, p))
    out = [item for i in range(len(frames)) for item in f.feed(frames[i : i + 1], 0.0)]
    assert [x.data[4:8] for x in out if isinstance(x, Frame)] == [struct.pack(">i", i) for i in (1, 2, 3)]
    f = Framer(lambda b, p: request_start(b, p))
    one = len(_frame())
    got = f.feed(frames[:10], 0.0) + f.feed(Gap(10, one, "hole"), 0.0) + f.feed(frames[10 + one :], 0.0)
    assert any(isinstance(x, LostBytes) for x in got)
    assert [x.data[4:8] for x in got if isinstance(x, Frame)] == [struct.pack(">i", 3)]  # 2 lost, 3 found again


def test_sequences_flag_gaps_and_repeats() -> None:
    s = Sequences()
    assert s.observe("k", 0, 0, 5) is None
    assert s.observe("k", 0, 5, 5) is None
    assert "gap" in (s.observe("k", 0, 12, 1) or "")
    assert "repeat" in (s.observe("k", 0, 3, 2) or "")
    assert s.observe("k", 1, 0, 1) is None  # a new epoch restarts at 0
    assert (s.gaps, s.repeats) == (1, 1)


@pytest.mark.parametrize("codec", list(Codec))
def test_record_batches_of_every_codec(codec: Codec) -> None:
    data = build_record_batch(
        [(b"k", b"v1", 1_700_000_000_000, [("h", b"\xff")]), (None, None, 1_700_000_000_001, None)],
        codec=codec,
        producer_id=9,
        producer_epoch=1,
        base_sequence=4,
    )
    (b,) = list(batches(data))
    assert (b.codec, b.producer_id, b.producer_epoch, b.base_sequence) == (codec.name.lower(), 9, 1, 4)
    assert [(key, value) for _, key, value, _, _ in plain_records(b)] == [(b"k", b"v1"), (None, None)]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4])
def test_message_sets_of_every_magic_and_codec(magic: int, codec: Codec) -> None:
    data = build_message_set([(b"k", b"a"), (None, b"b")], magic=magic, codec=codec, timestamp=1_700_000_000_000)
    found = list(batches(data + data[:7]))  # and a partial tail
    assert found[-1].partial and found[0].magic == magic and found[0].codec == codec.name.lower()
    assert [r[2] for b in found for r in plain_records(b)] == [b"a", b"b"]


def test_a_bad_crc_is_one_bad_batch_and_the_next_is_read() -> None:
    good = build_record_batch([(None, b"x", 1, None)])
    bad = bytearray(good)
    bad[-1] ^= 0xFF
    unknown = bytearray(good)
    unknown[16] = 9  # the magic byte
    found = list(batches(bytes(bad) + bytes(unknown) + good))
    assert found[0].error is not None and "CRC" in found[0].error and found[1].error == "unknown magic 9"
    assert plain_records(found[2])[0][2] == b"x"


def test_a_record_set_is_decoded_a_stretch_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small stretches give the batches one decode of the whole set gives (a run of uncompressed messages kept
    together, a damaged batch alone in error), and no decode is given more than a few stretches of bytes."""
    from bruce.tool import records

    parts = [
        build_record_batch([(b"k", b"%d-%d" % (i, j), 1, None) for j in range(20)], codec=Codec.GZIP) for i in range(6)
    ]
    parts[3] = parts[3][:-1] + bytes([parts[3][-1] ^ 1])  # a bad CRC
    parts[1:1] = [build_message_set([(None, b"m%d" % i)], magic=1, timestamp=1) for i in range(15)]  # one run
    data = b"".join(parts) + parts[0][:9]  # and a partial tail

    def shown(found: list[records.LogBatch]) -> list[object]:
        return [(b.header(), plain_records(b) if b.rows else []) for b in found]

    whole = shown(list(batches(data)))
    sizes: list[int] = []

    def decode(data: bytes) -> object:
        sizes.append(len(data))
        return decode_columns(data)

    monkeypatch.setattr(records, "STRETCH", 200)
    monkeypatch.setattr(records, "decode_columns", decode)
    assert shown(list(batches(data))) == whole
    assert (
        len(whole) == 6 + 1 + 1
        and whole[1][0]["count"] == 15
        and "CRC" in whole[4][0]["error"]
        and whole[-1][0]["partial"]
    )
    assert len(sizes) > 6 and max(sizes) <= 4 * 200 + max(map(len, parts))


def test_control_batches_are_decoded() -> None:
    from bruce.wire.recordbatch import build_record_batch as build

    marker = (struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 42), 5, None)  # COMMIT, coordinator epoch 42
    data = bytearray(build([marker], producer_id=3, producer_epoch=0, transactional=True))
    data[22] |= 0x20  # the control bit (attributes' low byte)
    from bruce.wire.crc import crc32c

    data[17:21] = struct.pack(">I", crc32c(bytes(data[21:])))
    (b,) = list(batches(bytes(data)))
    assert b.control == {"type": "COMMIT", "version": 0, "coordinator_epoch": 42, "offset": 0}


def test_records_in_json_are_kcats_objects() -> None:
    """Text stays text, other bytes are base64, null stays null; a timestamp that is none or out of range has no
    ``ts_iso``."""
    from bruce.tool.jsonout import JsonWriter
    from bruce.tool.tree import RecordSet

    headers = [("h", b"\xff"), ("n", None)]
    data = build_record_batch([(b"k", 'vé\n"'.encode(), 1_700_000_000_123, headers)], base_offset=5)
    data += build_record_batch([(None, b"\x80", -1, None)], base_offset=6)
    data += build_record_batch([(b"", b"", 1 << 62, None)], base_offset=7, timestamp_type=1)  # log-append time
    out = io.StringIO()
    JsonWriter(out).line({"records": RecordSet(data, "t", 3)})
    found = [r for b in json.loads(out.getvalue())["records"] for r in b["records"]]
    common = {"topic": "t", "partition": 3}
    assert found == [
        common
        | {"offset": 5, "tstype": "create", "ts": 1_700_000_000_123, "ts_iso": "2023-11-14T22:13:20.123Z"}
        | {"key": "k", "payload": 'vé\n"', "headers": ["h", {"base64": "/w=="}, "n", None]},
        common
        | {"offset": 6, "tstype": "create", "ts": -1, "ts_iso": None}
        | {"key": None, "payload": {"base64": "gA=="}, "headers": []},
        common
        | {"offset": 7, "tstype": "log_append", "ts": 1 << 62, "ts_iso": None, "key": "", "payload": ""}
        | {"headers": []},
    ]


def test_json_writer_streams_record_sets() -> None:
    from bruce.tool.jsonout import JsonWriter
    from bruce.tool.tree import RecordSet

    out = io.StringIO()
    data = build_record_batch([(None, b"%d" % i, 1, None) for i in range(1000)])
    JsonWriter(out).line({"body": {"records": RecordSet(data, "t", 0)}})
    value = json.loads(out.getvalue())
    assert [r["payload"] for r in value["body"]["records"][0]["records"]] == [str(i) for i in range(1000)]


def test_plog_in_captures_over_udp_and_tcp(tmp_path: object) -> None:
    """``--plog PORT``: UDP datagrams are plog packets, TCP is plog's line protocol."""
    from bruce.tool.pcap_cmd import PcapOptions, PcapRun

    def eth(ip: bytes) -> bytes:
        return b"\x00" * 12 + b"\x08\x00" + ip

    udp = dpkt.udp.UDP(sport=5000, dport=23456, data=b"one message")
    udp.ulen = len(bytes(udp))
    uip = dpkt.ip.IP(src=bytes([127, 0, 0, 1]), dst=bytes([127, 0, 0, 1]), p=dpkt.ip.IP_PROTO_UDP, data=udp)
    uip.len = len(bytes(uip))
    tcp_a = _tcp_ip4(b"first line\r\nsecond ", seq=10)
    tcp_b = _tcp_ip4(b"line\n", seq=10 + len(b"first line\r\nsecond "))
    buf = io.BytesIO()
    writer = dpkt.pcap.Writer(buf, linktype=1)
    for ts, ip in enumerate((bytes(uip), tcp_a, tcp_b)):
        writer.writepkt(eth(ip), ts)
    out = io.StringIO()
    result = PcapRun(PcapOptions(json=True, plog_ports=frozenset({23456, 9092})), out).run(io.BytesIO(buf.getvalue()))
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [m["plog"]["message"] for m in lines] == ["one message", "first line", "second line"]
    assert result.status == 0


def test_only_the_fields_a_version_has_are_shown() -> None:
    from bruce.tool.tree import Trees
    from bruce.wire import API_REGISTRY, decode_request

    frame = encode_request(metadata_request(["t"], version=1), version=1, correlation_id=1)
    _, body = decode_request(frame[4:])
    tree = Trees().tree(body, schema=API_REGISTRY[3].requests[1])
    assert tree == {"topics": [{"name": "t"}]}  # no topic_id (v10), no allow_auto_topic_creation (v4)
    assert "allow_auto_topic_creation" in Trees().tree(body)  # without the schema: every field


def test_a_hole_the_other_side_acknowledged_is_given_up_at_once() -> None:
    s = Stream()
    s.syn(99)
    assert s.add(100, b"abc", 0.0) == [b"abc"]
    assert s.add(110, b"xyz", 0.0) == []  # after a hole: waits
    assert s.acked(103) == []  # acknowledges what was delivered: nothing to give up
    assert s.acked(113) == [Gap(3, 7, "acknowledged"), b"xyz"]  # the hole was received, never captured
    assert s.acked(120) == [Gap(13, 7, "acknowledged")]  # a segment lost at the end (nothing waiting after it)
    assert s.add(120, b"!", 0.0) == [b"!"] and s.acked(90) == []  # an old acknowledgement changes nothing
    assert not s.reached(122) and s.reached(121)  # a FIN at 122 waits for the byte before it


def test_the_log_is_read_again_without_repeats_and_a_duplicate_in_it_is_flagged() -> None:
    s = Sequences()
    assert s.observe("k", 0, 0, 5, 0) is None and s.observe("k", 0, 5, 5, 5) is None
    assert s.observe("k", 0, 0, 5, 0) is None  # a second consumer reads the log from its start
    assert s.observe("k", 0, 5, 5, 5) is None
    assert "repeat" in (s.observe("k", 0, 5, 5, 10) or "")  # the same sequences at a new offset: written twice


def test_a_resumed_capture_finds_the_answer_at_the_resume_point() -> None:
    """After a hole the framer tries where the capture resumes with ``resume`` first, then scans with
    ``plausible``."""
    frame = _frame(correlation=9)
    tried: list[int] = []

    def resume(buf: bytes | bytearray, pos: int) -> bool:
        tried.append(pos)
        return True

    f = Framer(lambda b, p: False, resume=resume)
    out = f.feed(frame[:6], 0.0) + f.feed(Gap(6, 100, "hole"), 0.0) + f.feed(frame, 0.0)
    assert tried == [0] and [x.data for x in out if isinstance(x, Frame)] == [frame[4:]]


def _answer(body: object, version: int, correlation: int = 5) -> bytes:
    from bruce.wire.protocol.base import encode_response

    return encode_response(body, version=version, correlation_id=correlation)[4:]


def test_an_answer_without_its_request_is_decided_by_rule_or_ambiguous() -> None:
    from bruce.tool.inference import Evidence, infer, parses
    from bruce.wire.protocol.api_versions import ApiVersionRange, ApiVersionsResponse
    from bruce.wire.protocol.heartbeat import HeartbeatResponse

    beat = parses(_answer(HeartbeatResponse(throttle_time_ms=0x123, error_code=0), 3))
    alone = infer(beat, Evidence(), opening=False)
    assert alone.api_key is None and alone.body is None and (12, 3) in alone.candidates  # many layouts read it
    assert alone.how.startswith("request not captured; ambiguous: ") and "Heartbeat v1, v2, v3" in alone.how
    offered = infer(beat, Evidence(offered={12: (0, 4), 18: (0, 4)}), opening=False)
    assert (offered.api_key, offered.versions) == (12, (1, 2, 3)) and "alike" in offered.how  # the same fields
    assert offered.body == HeartbeatResponse(throttle_time_ms=0x123, error_code=0)
    used = infer(beat, Evidence(versions={12: 3}, offered={12: (0, 4)}), opening=False)
    assert (used.api_key, used.versions) == (12, (3,)) and "the version this connection uses" in used.how
    versions = parses(_answer(ApiVersionsResponse(0, (ApiVersionRange(0, 0, 0x44),)), 0))
    assert infer(versions, Evidence(), opening=True).api_key == 18  # a connection opens with ApiVersions
    assert infer(parses(b"\x00\x00\x00\x05\xff"), Evidence(), opening=False).how.endswith("no known answer parses it")


def test_an_api_versions_refusal_in_the_v0_layout_is_decoded() -> None:
    """A broker answers an ApiVersions version it lacks in v0's layout with UNSUPPORTED_VERSION (KIP-511)."""
    from bruce.tool.connections import TcpConnection
    from bruce.tool.exchanges import Pairing
    from bruce.wire import ApiVersionsRequest
    from bruce.wire.protocol.api_versions import ApiVersionRange, ApiVersionsResponse

    conn = TcpConnection(1, ("127.0.0.1", 40000), ("127.0.0.1", 9092))
    pairing = Pairing()
    pairing.request(conn, 0, 0.0, encode_request(ApiVersionsRequest(), version=4, correlation_id=1)[4:])
    refusal = ApiVersionsResponse(35, (ApiVersionRange(18, 0, 3),))
    m = pairing.answer(conn, 0, 0.001, _answer(refusal, 0, correlation=1))
    assert (m.api_name, m.version, m.error, m.body) == ("ApiVersions", 4, None, refusal)


def test_trees_name_numbers_and_read_the_consumer_protocol() -> None:
    from bruce.tool.tree import Trees
    from bruce.wire import ConsumerAssignment, ConsumerTopicPartitions, encode_assignment
    from bruce.wire.protocol.api_versions import ApiVersionRange, ApiVersionsResponse
    from bruce.wire.protocol.sync_group import SyncGroupResponse

    trees = Trees()
    ranges = trees.tree(ApiVersionsResponse(0, (ApiVersionRange(3, 0, 12),)))
    assert ranges["api_keys"][0] == {"api_key": 3, "api_name": "Metadata", "min_version": 0, "max_version": 12}
    given = encode_assignment(ConsumerAssignment(0, (ConsumerTopicPartitions("clicks", (0, 2)),), None))
    synced = trees.tree(SyncGroupResponse(error_code=0, assignment=given))
    assert synced["assignment"] == {"base64": base64.b64encode(given).decode()}  # bytes with controls: base64
    assert synced["consumer_assignment"] == {
        "version": 0,
        "assigned_partitions": [{"topic": "clicks", "partitions": [0, 2]}],
        "user_data": None,
    }
    assert "consumer_assignment" not in trees.tree(SyncGroupResponse(error_code=0, assignment=b"connect's own"))


def test_segments_after_a_reset_are_ignored() -> None:
    """A connection reset, then bytes from the other side on the same ports: the reset ended it (no traceback)."""
    from bruce.tool.pcap_cmd import PcapOptions, PcapRun

    def packet(sport: int, dport: int, seq: int, flags: int, data: bytes = b"") -> bytes:
        tcp = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq, flags=flags, data=data)
        ip = dpkt.ip.IP(src=bytes([127, 0, 0, 1]), dst=bytes([127, 0, 0, 1]), p=dpkt.ip.IP_PROTO_TCP, data=tcp)
        ip.len = len(bytes(ip))
        return b"\x00" * 12 + b"\x08\x00" + bytes(ip)

    frame = _frame()
    buf = io.BytesIO()
    writer = dpkt.pcap.Writer(buf, linktype=1)
    ack, psh, rst = dpkt.tcp.TH_ACK, dpkt.tcp.TH_PUSH, dpkt.tcp.TH_RST
    writer.writepkt(packet(40000, 9092, 100, ack | psh, frame), 1.0)
    writer.writepkt(packet(40000, 9092, 100 + len(frame), ack | rst), 1.1)
    writer.writepkt(packet(9092, 40000, 500, ack | psh, b"\x00\x00\x00\x04\x00\x00\x00\x07"), 1.2)
    out = io.StringIO()
    result = PcapRun(PcapOptions(json=True), out).run(io.BytesIO(buf.getvalue()))
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines[0]["api"] == "Metadata" and lines[0]["direction"] == "request"
    assert lines[1]["unanswered"]["why"] == "the connection was reset" and len(lines) == 2
    assert result.messages == 1
