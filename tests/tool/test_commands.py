"""bruce-wire segment, spool and datagram on files made here, and the field-by-field comparison with tshark on the
session capture's traffic that stays inside tshark 4.0's version table (a producer and a consumer group held to
kafka-python's ``api_version=(2, 1, 0)``)."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ClientCapture, bruce_wire, json_lines

from bruce.wire import Codec, build_record_batch


def _segment(path: Path, counts: list[int], *, corrupt: int | None = None) -> list[bytes]:
    """A segment of batches with consecutive offsets, and its .index (one entry per batch)."""
    data, index, offset = b"", b"", 0
    batches = []
    for i, n in enumerate(counts):
        b = build_record_batch(
            [(None, b"v%d" % (offset + j), 1_700_000_000_000 + j, None) for j in range(n)],
            codec=Codec.GZIP if i % 2 else Codec.NONE,
            base_offset=offset,
        )
        if i == corrupt:
            b = b[:-1] + bytes([b[-1] ^ 1])
        index += struct.pack(">ii", offset + n - 1, len(data))
        data += b
        batches.append(b)
        offset += n
    path.write_bytes(data)
    path.with_suffix(".index").write_bytes(index + b"\x00" * 16)  # Kafka preallocates: a zero tail
    return batches


def test_segment_checks_pass_and_records_come_out(tmp_path: Path) -> None:
    log = tmp_path / "00000000000000000000.log"
    _segment(log, [3, 5, 2])
    run = bruce_wire("segment", "--json", str(log))
    assert run.returncode == 0, run.stdout
    lines = json_lines(run.stdout)
    values = [r["payload"] for line in lines if "batch" in line for r in line["batch"]["records"]]
    assert values == [f"v{i}" for i in range(10)]
    summary = lines[-1]["summary"]
    assert (summary["batches"], summary["records"], summary["problems"]) == (3, 10, [])
    assert ".index: 3 entries checked" in summary["notes"]  # the zero-filled tail is not an entry


def test_segment_reports_a_bad_crc_a_bad_index_and_a_torn_tail(tmp_path: Path) -> None:
    log = tmp_path / "00000000000000000000.log"
    _segment(log, [3, 5, 2], corrupt=1)
    log.write_bytes(log.read_bytes() + b"\x00" * 20)
    index = log.with_suffix(".index")
    index.write_bytes(struct.pack(">ii", 2, 7) + index.read_bytes()[8:])
    run = bruce_wire("segment", str(log))
    assert run.returncode == 1
    text = run.stdout.decode()
    assert "CRC" in text and "declares size 0" in text and "position 7 is not the start of a batch" in text


def test_spool_is_read_with_the_daemons_readers(tmp_path: Path) -> None:
    from bruce.proxy.spool.format import encode_burst, encode_header

    (tmp_path / f"{100:020d}.seg").write_bytes(
        encode_header(100, 1_700_000_000_000) + encode_burst(100, [(b"t", None, b"k", b"held", 1_700_000_000_000)])
    )
    run = bruce_wire("spool", "--json", "--records", str(tmp_path))
    assert run.returncode == 0, run.stderr
    seg, journal = json_lines(run.stdout)
    assert (seg["records"], seg["held"], seg["held_records"][0]["payload"]) == (1, 1, "held")
    assert journal["journal"]["batches"] == 0
    assert bruce_wire("spool", str(tmp_path / "missing")).returncode == 2


def test_datagram_round_trip_and_bad_datagrams() -> None:
    spec = {"kind": "partition_key", "topic": "t", "value": {"base64": "/wA="}, "partition_key": 3, "timestamp": 5}
    built = bruce_wire("datagram", "--encode", stdin=json.dumps(spec).encode())
    assert built.returncode == 0
    decoded = json_lines(bruce_wire("datagram", "--json", stdin=built.stdout).stdout)[0]
    assert (decoded["kind"], decoded["payload"], decoded["partition_key"], decoded["ts"]) == (
        "partition_key",
        {"base64": "/wA="},
        3,
        5,
    )
    bad = bruce_wire("datagram", "--json", "--hex", "00000010ffff")
    assert bad.returncode == 1 and json_lines(bad.stdout)[0]["reason"]
    assert bruce_wire("datagram", "--encode", stdin=b"{}").returncode == 2


def test_without_dpkt_only_pcap_is_refused_in_one_line(tmp_path: Path) -> None:
    """Installed without the tools extra: ``pcap`` says what to install (no traceback); the other commands work."""
    blocked = "import sys; sys.modules['dpkt'] = None; from bruce.tool.cli import main; sys.exit(main(sys.argv[1:]))"
    capture = Path(__file__).resolve().parents[2] / "fuzz" / "corpus" / "capture" / "metadata.pcap"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", blocked, *args], capture_output=True, text=True, timeout=60, check=False
        )

    pcap = run("pcap", str(capture))
    assert pcap.returncode == 2 and pcap.stdout == ""
    assert pcap.stderr == "bruce-wire: bruce-wire pcap needs dpkt, which the tools extra installs: " + (
        "pip install 'bruce-kafka[tools]'\n"
    )
    datagram = run("datagram", "--json", "--hex", "00000010ffff")
    assert datagram.returncode == 1 and "Traceback" not in datagram.stderr and json_lines(datagram.stdout.encode())


def _pairs(pairs: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    return pairs  # tshark's JSON repeats keys ("Record" once per record): keep them all, in order


def _fields(node: Any, name: str) -> list[Any]:
    """Every value of field ``name`` under ``node`` (tshark's JSON read as key/value pair lists), in order."""
    found: list[Any] = []
    if isinstance(node, list):
        for item in node:
            if isinstance(item, tuple) and len(item) == 2:
                key, value = item
                if key == name:
                    found.append(value)
                else:
                    found += _fields(value, name)
            else:
                found += _fields(item, name)
    return found


def _hex(colons: str) -> bytes:
    return bytes.fromhex(colons.replace(":", ""))


@pytest.mark.e2e
def test_fields_equal_tsharks_inside_its_version_table(client_capture: ClientCapture) -> None:
    """The client held to (2, 1, 0) (Produce v7, Fetch v10): every request's api key, version, correlation id and
    client id, and every produced batch's CRC and records (offset, key, value), as tshark -T json shows them."""
    tshark = shutil.which("tshark")
    assert tshark, "tshark is needed (scripts/bootstrap.sh test installs it)"
    out = subprocess.run(
        [
            tshark,
            "-r",
            str(client_capture.path),
            "-d",
            f"tcp.port=={client_capture.port},kafka",
            "-T",
            "json",
            "-Y",
            'kafka.client_id == "tshark-range"',
        ],
        capture_output=True,
        timeout=120,
        check=True,
    ).stdout
    packets = json.loads(out, object_pairs_hook=_pairs)
    theirs = []
    for kafka in _fields(packets, "kafka"):
        head = tuple(int(_fields(kafka, k)[0]) for k in ("kafka.api_key", "kafka.api_version", "kafka.correlation_id"))
        records = [
            (
                int(_fields(r, "kafka.offset")[0]),
                _hex(_fields(r, "kafka.message_key")[0]),
                _hex(_fields(r, "kafka.message_value")[0]),
            )
            for r in _fields(kafka, "Record")
        ]
        theirs.append(
            (
                head,
                _fields(kafka, "kafka.client_id")[0],
                [int(c, 16) for c in _fields(kafka, "kafka.batch_crc")],
                records,
            )
        )
    assert theirs, "tshark decoded nothing"
    ours = []
    for m in json_lines(bruce_wire("pcap", "--json", str(client_capture.path)).stdout):
        if m.get("direction") != "request" or m.get("client_id") != "tshark-range":
            continue
        batches = [b for t in m["body"].get("topic_data", []) for p in t["partition_data"] for b in p["records"]]
        records = [(r["offset"], r["key"].encode(), r["payload"].encode()) for b in batches for r in b["records"]]
        ours.append(
            ((m["api_key"], m["version"], m["correlation_id"]), m["client_id"], [b["crc"] for b in batches], records)
        )
    assert sorted(ours, key=repr) == sorted(theirs, key=repr)
    produced = [r for _, _, _, records in ours for r in records]
    assert [v for _, _, v in produced] == client_capture.sent["tshark-range"]


_GROUP_APIS = {8, 9, 11, 12, 13, 14}  # OffsetCommit, OffsetFetch, JoinGroup, Heartbeat, LeaveGroup, SyncGroup
_GROUP_FIELDS = {  # tshark's field -> ours (the same value wherever it appears in the message)
    "kafka.consumer_group": ("group_id",),
    "kafka.session_timeout": ("session_timeout_ms",),
    "kafka.rebalance_timeout": ("rebalance_timeout_ms",),
    "kafka.member_id": ("member_id",),
    "kafka.protocol_type": ("protocol_type",),
    "kafka.generation_id": ("generation_id", "generation_id_or_member_epoch"),
    "kafka.group_leader_id": ("leader",),
    "kafka.topic_name": ("name",),
    "kafka.partition_id": ("partition_index", "partition_indexes"),
    "kafka.offset": ("committed_offset",),
    "kafka.leader_epoch": ("committed_leader_epoch",),
    "kafka.error": ("error_code",),
    "kafka.throttle_time": ("throttle_time_ms",),
}
# tshark 4.0 misreads JoinGroup v3's protocol list and SyncGroup v2's assignments (their metadata bytes; it marks the
# messages malformed): those, and the consumer protocol decoded beside them, are not compared.
_NOT_COMPARED = {"protocols", "metadata", "assignment", "consumer_subscription", "consumer_assignment"}


def _ours(tree: Any, names: tuple[str, ...]) -> list[str]:
    found: list[str] = []
    if isinstance(tree, dict):
        for key, value in tree.items():
            if key in _NOT_COMPARED:
                continue
            if key in names:
                found += [str(v) for v in (value if isinstance(value, list) else [value])]
            else:
                found += _ours(value, names)
    elif isinstance(tree, list):
        for value in tree:
            found += _ours(value, names)
    return found


@pytest.mark.e2e
def test_group_api_fields_equal_tsharks(client_capture: ClientCapture) -> None:
    """The consumer group held to (2, 1, 0) (JoinGroup v3, SyncGroup v2, OffsetFetch v5, OffsetCommit v6, LeaveGroup
    v2, Heartbeat v2): every request's and answer's group, member, generation, topic, partition, offset, error and
    throttle values, as tshark -T json shows them."""
    tshark = shutil.which("tshark")
    assert tshark, "tshark is needed (scripts/bootstrap.sh test installs it)"
    decoded = json_lines(bruce_wire("pcap", "--json", str(client_capture.path)).stdout)
    conns = {m["conn"] for m in decoded if m.get("client_id") == "tshark-range-group"}
    ports = {int(conn.split(">")[0].rsplit(":", 1)[1]) for conn in conns}
    ours = sorted(
        (
            (m["api_key"], m["version"], m["correlation_id"], m["direction"]),
            {field: sorted(_ours(m["body"], names)) for field, names in _GROUP_FIELDS.items()},
        )
        for m in decoded
        if m.get("conn") in conns and m["api_key"] in _GROUP_APIS
    )
    on = " || ".join(f"tcp.port == {port}" for port in sorted(ports))
    decode_as = f"tcp.port=={client_capture.port},kafka"
    out = subprocess.run(
        [tshark, "-r", str(client_capture.path), "-d", decode_as, "-T", "json", "-Y", f"kafka && ({on})"],
        capture_output=True,
        timeout=120,
        check=True,
    ).stdout
    theirs = []
    for kafka in _fields(json.loads(out, object_pairs_hook=_pairs), "kafka"):
        key = int(_fields(kafka, "kafka.api_key")[0])
        if key not in _GROUP_APIS:
            continue
        request = bool(_fields(kafka, "kafka.request_key"))
        version = _fields(kafka, "kafka.request.version" if request else "kafka.response.version")[0]
        correlation = int(_fields(kafka, "kafka.correlation_id")[0])
        values = {field: sorted(str(v) for v in _fields(kafka, field)) for field in _GROUP_FIELDS}
        theirs.append(((key, int(version), correlation, "request" if request else "answer"), values))
    assert {k for (k, _, _, _), _ in ours} >= {8, 9, 11, 13, 14}
    assert ours == sorted(theirs)
