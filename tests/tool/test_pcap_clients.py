"""bruce-wire on a loopback capture of independent clients and the daemon talking to tansu (tests/tool/conftest.py):
every request and answer found and paired, decoded where bruce.wire's registry has the (api, version), records equal
to what each client sent and to kafka-python's own decoders, control records and producer sequences read.

Registry-dependent assertions (they tighten as bruce.wire learns APIs): requests and answers whose (api, version) the
registry lacks must come out as header + hex (``hex``, no ``body``), never dropped, and with no ``error``.
"""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest
from conftest import ClientCapture, bruce_wire, json_lines

from bruce.wire import API_REGISTRY

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def decoded(client_capture: ClientCapture) -> list[dict[str, Any]]:
    run = bruce_wire("pcap", "--json", str(client_capture.path))
    assert run.returncode in (0, 1), run.stderr.decode()
    assert b"Traceback" not in run.stderr
    return json_lines(run.stdout)


def _value(v: Any) -> bytes | None:
    if v is None:
        return None
    return base64.b64decode(v["base64"]) if isinstance(v, dict) else v.encode()


def _records(message: dict[str, Any]) -> list[dict[str, Any]]:
    """Every record (kcat -J objects) in a message's body, in order."""
    out: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "records" and isinstance(value, list) and value and "magic" in value[0]:
                    for batch in value:
                        out.extend(batch.get("records", []))
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(message.get("body"))
    return out


def _batches(message: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "records" and isinstance(value, list) and value and "magic" in value[0]:
                    out.extend(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(message.get("body"))
    return out


def test_every_message_is_paired_and_decoded_or_shown_as_hex(decoded: list[dict[str, Any]]) -> None:
    requests = [m for m in decoded if m.get("direction") == "request"]
    answers = [m for m in decoded if m.get("direction") == "answer"]
    assert len(requests) > 50 and answers
    assert [m for m in decoded if "error" in m] == []
    for m in requests + answers:
        spec = API_REGISTRY.get(m["api_key"])
        known = spec is not None and m["version"] in spec.requests
        assert ("body" in m) == known, m
        assert ("hex" in m) == (not known), m
        if known:
            assert m["api"] == spec.name
    keys = {(m["conn"], m["correlation_id"]) for m in requests}
    for a in answers:
        assert (a["conn"], a["correlation_id"]) in keys, a  # every answer's request was captured
        assert "how" not in a and a["latency_ms"] >= 0
        assert a["api_key"] == next(
            r["api_key"] for r in requests if (r["conn"], r["correlation_id"]) == (a["conn"], a["correlation_id"])
        )


def test_records_produced_by_each_client(client_capture: ClientCapture, decoded: list[dict[str, Any]]) -> None:
    produced: dict[str, list[bytes]] = {}
    for m in decoded:
        if m.get("direction") == "request" and m["api"] == "Produce" and "body" in m:
            produced.setdefault(m.get("client_id") or "", []).extend(_value(r["payload"]) for r in _records(m))
    for client, values in client_capture.sent.items():
        if client == "ck-txn":
            continue
        got = produced.get(client if client != "bruce" else "bruce", [])
        assert sorted(set(got)) == sorted(values), client
    transactional = produced.get("ck-txn", [])
    assert sorted(transactional) == sorted(client_capture.sent["ck-txn"])


def test_kafka_python_reads_the_same_record_sets(client_capture: ClientCapture) -> None:
    """bruce-wire's records of every Fetch answer equal kafka-python's MemoryRecords reading the same bytes."""
    from kafka.record.memory_records import MemoryRecords

    from bruce.tool.pcap_cmd import PcapOptions, PcapRun
    from bruce.wire import FetchResponse

    seen: list[tuple[str, int, bytes]] = []

    class Collect(PcapRun):
        def _message(self, conn: Any, m: Any) -> None:
            if isinstance(m.body, FetchResponse):
                for t in m.body.responses:
                    for p in t.partitions:
                        if p.records:
                            seen.append((t.topic, p.partition_index, p.records))
            super()._message(conn, m)

    out = io.StringIO()
    with client_capture.path.open("rb") as f:
        Collect(PcapOptions(json=True), out).run(f)
    assert seen
    from bruce.tool.records import batches

    checked = 0
    for _, _, data in seen:
        theirs = []
        mr = MemoryRecords(data)
        while (batch := mr.next_batch()) is not None:
            if getattr(batch, "is_control_batch", False):
                continue
            theirs += [(r.offset, r.key, r.value, r.timestamp, [(k, v) for k, v in r.headers]) for r in batch]
        ours = [
            (r.offset, r.key, r.value, r.timestamp, list(r.headers))
            for b in batches(data)
            if b.control is None
            for r in b.records
        ]
        assert ours == theirs
        checked += len(ours)
    assert checked >= 12 * 2 + 5  # two kafka-python consumers, the transactional topic read by aiokafka


def test_control_records_and_producer_sequences(client_capture: ClientCapture, decoded: list[dict[str, Any]]) -> None:
    txn = client_capture.topics["txn"]
    markers = []
    for m in decoded:
        if m.get("direction") == "answer" and m["api"] == "Fetch" and "body" in m:
            for b in _batches(m):
                if "control" in b:
                    markers.append(b["control"]["type"])
                    assert b["transactional"] and b["control"]["coordinator_epoch"] >= 0
    assert markers[:2] == ["COMMIT", "ABORT"], markers  # read by aiokafka (read_committed, Fetch v4)
    produce = [
        b
        for m in decoded
        if m.get("direction") == "request" and m["api"] == "Produce" and m.get("client_id") == "ck-idem"
        for b in _batches(m)
    ]
    assert produce and all(b["producer_id"] >= 0 for b in produce)
    assert sorted(b["base_sequence"] for b in produce)[0] == 0
    assert all("sequence" not in b for b in produce)  # no gap, no repeat
    del txn


def test_timestamps_headers_and_binary_bytes(decoded: list[dict[str, Any]]) -> None:
    records = [
        r
        for m in decoded
        if m.get("direction") == "request" and m.get("client_id") == "ck-idem" and m["api"] == "Produce"
        for r in _records(m)
    ]
    assert records
    for r in records:
        assert r["ts"] > 1_600_000_000_000 and r["ts_iso"].endswith("Z") and r["ts_iso"][:2] == "20"
        assert r["headers"][0] == "h" and r["headers"][2] == "bin"
        assert r["headers"][3] == {"base64": base64.b64encode(b"\xff\x00").decode()}
