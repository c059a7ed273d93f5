"""bruce-wire on a loopback capture of independent clients and the daemon talking to tansu (tests/tool/conftest.py):
every request and answer found, paired and decoded (every API and version today's clients send is in bruce.wire's
registry: only an API outside it would come out as header + hex), records equal to what each client sent and to
kafka-python's own decoders, topic ids resolved to names, control records and producer sequences read, the group
APIs decoded field by field (the consumer protocol's subscriptions and assignments included).
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest
from conftest import ClientCapture, bruce_wire, json_lines, plain_records

from bruce.wire import api_spec

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


def _batches(message: dict[str, Any]) -> list[dict[str, Any]]:
    """Every record batch (with its kcat -J ``records``) in a message's body, in order."""
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


def _records(message: dict[str, Any]) -> list[dict[str, Any]]:
    """Every record (kcat -J objects) in a message's body, in order."""
    return [r for batch in _batches(message) for r in batch.get("records", [])]


def test_every_message_is_paired_and_decoded_or_shown_as_hex(decoded: list[dict[str, Any]]) -> None:
    requests = [m for m in decoded if m.get("direction") == "request"]
    answers = [m for m in decoded if m.get("direction") == "answer"]
    unanswered = {(m["conn"], m["unanswered"]["correlation_id"]) for m in decoded if "unanswered" in m}
    assert len(requests) > 100 and len(answers) + len(unanswered) == len(requests)  # no Produce with acks=0 here
    assert len(unanswered) <= 2  # a client closing while its last Metadata request waits: reported, not lost
    assert [m for m in decoded if "error" in m or "lost" in m] == []
    outside = set()
    for m in requests + answers:
        spec = api_spec(m["api_key"])
        known = spec is not None and m["version"] in spec.requests
        if not known:
            outside.add((m["api_key"], m["version"]))
        assert ("body" in m) == known and ("hex" in m) == (not known), m
        assert m["api"] == (spec.name if spec is not None else f"api-{m['api_key']}")
    assert sorted(outside) == []  # every (api, version) these clients sent is decoded: none is left as hex
    keys = {(m["conn"], m["correlation_id"]): m["api_key"] for m in requests}
    assert unanswered <= set(keys) and not unanswered & {(a["conn"], a["correlation_id"]) for a in answers}
    for a in answers:
        assert keys[(a["conn"], a["correlation_id"])] == a["api_key"], a  # every answer's request was captured
        assert "how" not in a and a["latency_ms"] >= 0
    sent = {m["api"] for m in requests}
    group_apis = {"FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat", "OffsetFetch", "OffsetCommit", "LeaveGroup"}
    assert group_apis <= sent, group_apis - sent


def _by_client(decoded: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each client id's requests and answers (an answer belongs to its connection's client), in order."""
    owner = {m["conn"]: m["client_id"] for m in decoded if m.get("direction") == "request" and m.get("client_id")}
    out: dict[str, list[dict[str, Any]]] = {}
    for m in decoded:
        if m.get("direction") in ("request", "answer") and m["conn"] in owner:
            out.setdefault(owner[m["conn"]], []).append(m)
    return out


def test_group_apis_are_decoded_field_by_field(client_capture: ClientCapture, decoded: list[dict[str, Any]]) -> None:
    """Each consumer group's conversation with its coordinator: joined (the consumer protocol's subscription read),
    assigned its topic's partition, heartbeats and offsets with its member id and generation, the committed offset
    past what it read, and the same member leaving."""
    clients = _by_client(decoded)
    topics = {"ck-group": "idempotent", "ck-rc": "txn", "tshark-range-group": "tshark-range"}
    for client, role in topics.items():
        topic, group = client_capture.topics[role], client_capture.groups[client]
        messages = clients[client]

        def of(api: str, direction: str, messages: list[dict[str, Any]] = messages) -> list[dict[str, Any]]:
            return [m["body"] for m in messages if m["api"] == api and m["direction"] == direction]

        joins = of("JoinGroup", "request")
        assert joins and all(j["group_id"] == group and j["protocol_type"] == "consumer" for j in joins)
        assert all(p["consumer_subscription"]["topics"] == [topic] for j in joins for p in j["protocols"])
        joined = [a for a in of("JoinGroup", "answer") if a["error_code"] == 0]
        assert len(joined) == 1, of("JoinGroup", "answer")  # after MEMBER_ID_REQUIRED (KIP-394) the second join
        member, generation = joined[0]["member_id"], joined[0]["generation_id"]
        assert member.startswith(client) and generation >= 0 and joined[0]["leader"] == member  # alone: the leader
        assert [m["consumer_subscription"]["topics"] for m in joined[0]["members"]] == [[topic]]
        owned = [{"topic": topic, "partitions": [0]}]
        (sync,) = of("SyncGroup", "request")
        assert (sync["group_id"], sync["generation_id"], sync["member_id"]) == (group, generation, member)
        assert [a["consumer_assignment"]["assigned_partitions"] for a in sync["assignments"]] == [owned]
        (synced,) = of("SyncGroup", "answer")
        assert synced["error_code"] == 0 and synced["consumer_assignment"]["assigned_partitions"] == owned
        fetched = of("OffsetFetch", "request")
        assert fetched and all(group in json.dumps(f) for f in fetched)
        (commit,) = of("OffsetCommit", "request")
        assert (commit["group_id"], commit["generation_id_or_member_epoch"], commit["member_id"]) == (
            group,
            generation,
            member,
        )
        (committed,) = [p for t in commit["topics"] if t["name"] == topic for p in t["partitions"]]
        assert committed["partition_index"] == 0
        assert committed["committed_offset"] >= len(client_capture.consumed[client])
        assert [
            p["error_code"] for a in of("OffsetCommit", "answer") for t in a["topics"] for p in t["partitions"]
        ] == [0]
        (leave,) = of("LeaveGroup", "request")
        members = [m["member_id"] for m in leave.get("members", [])] or [leave.get("member_id")]
        assert leave["group_id"] == group and members == [member]
        assert [a["error_code"] for a in of("LeaveGroup", "answer")] == [0]
        if client.startswith("ck-"):  # librdkafka beats right after joining
            beats = of("Heartbeat", "request")
            assert beats and all((b["group_id"], b["member_id"]) == (group, member) for b in beats)
            assert all(a["error_code"] == 0 for a in of("Heartbeat", "answer"))


def test_fetches_by_topic_id_carry_topic_names(client_capture: ClientCapture, decoded: list[dict[str, Any]]) -> None:
    """librdkafka fetches by topic id (Fetch v13+): the names come from the Metadata answers seen earlier in the
    capture, beside each id and in every record; the records are those the group read."""
    clients = _by_client(decoded)
    for client, role in (("ck-group", "idempotent"), ("ck-rc", "txn")):
        topic = client_capture.topics[role]
        fetches = [m for m in clients[client] if m["api"] == "Fetch" and m["direction"] == "answer"]
        assert fetches and all(m["version"] >= 13 for m in fetches)
        for m in fetches:
            for t in m["body"]["responses"]:
                assert "name" not in t and t["topic_id"] and t["topic"] == topic
        records = [r for m in fetches for r in _records(m)]
        assert records and all((r["topic"], r["partition"]) == (topic, 0) for r in records)
        values = [_value(r["payload"]) for r in records]
        assert [v for v in values if v in client_capture.consumed[client]] == client_capture.consumed[client]


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
        ours = [r for b in batches(data) if b.control is None for r in plain_records(b)]
        assert ours == theirs
        checked += len(ours)
    assert checked >= 12 * 2 + 5  # two kafka-python consumers, the transactional topic read by aiokafka


def test_control_records_and_producer_sequences(client_capture: ClientCapture, decoded: list[dict[str, Any]]) -> None:
    """The transactional topic read with read_committed by aiokafka (topics by name) and by confluent-kafka (by id):
    the COMMIT then ABORT markers, and no sequence flagged for the same batches read twice."""
    clients = _by_client(decoded)
    for client, by_id in (("aio-txn-reader", False), ("ck-rc", True)):
        fetches = [m for m in clients[client] if m["api"] == "Fetch"]
        assert fetches and all((m["version"] >= 13) == by_id for m in fetches), client
        assert all(m["body"]["isolation_level"] == 1 for m in fetches if m["direction"] == "request")  # committed
        batches = [b for m in fetches if m["direction"] == "answer" for b in _batches(m)]
        markers = [b["control"]["type"] for b in batches if "control" in b]
        assert markers[:2] == ["COMMIT", "ABORT"], (client, markers)
        assert all(b["transactional"] and b["control"]["coordinator_epoch"] >= 0 for b in batches if "control" in b)
        assert all("sequence" not in b for b in batches), client  # read again by a second consumer: not a repeat
    produce = [
        b
        for m in decoded
        if m.get("direction") == "request" and m["api"] == "Produce" and m.get("client_id") == "ck-idem"
        for b in _batches(m)
    ]
    assert produce and all(b["producer_id"] >= 0 for b in produce)
    assert sorted(b["base_sequence"] for b in produce)[0] == 0
    assert all("sequence" not in b for b in produce)  # no gap, no repeat


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


def test_filters_and_stats_on_the_group_apis(client_capture: ClientCapture, decoded: list[dict[str, Any]]) -> None:
    """``--api`` and ``--topic`` together keep one group's JoinGroup and SyncGroup, answers with their requests (the
    subscription and assignment name the topic); ``--conn`` keeps one connection; ``--stats`` gives latency
    percentiles per API and version and the errors by name and code."""
    txn = client_capture.topics["txn"]
    run = bruce_wire(
        "pcap", "--json", "--api", "JoinGroup", "--api", "syncgroup", "--topic", txn, str(client_capture.path)
    )
    kept = json_lines(run.stdout)
    coordinator = {m["conn"] for m in decoded if m.get("client_id") == "ck-rc" and m["api"] == "JoinGroup"}
    assert {(m["api"], m["direction"]) for m in kept} == {
        (api, d) for api in ("JoinGroup", "SyncGroup") for d in ("request", "answer")
    }
    assert {m["conn"] for m in kept} == coordinator and len(kept) == 6  # two joins (KIP-394), one sync
    (conn,) = coordinator
    only = json_lines(bruce_wire("pcap", "--json", "--conn", conn.split(">")[0], str(client_capture.path)).stdout)
    assert only and {m["conn"] for m in only} == {conn}
    assert len(only) == len([m for m in decoded if m.get("conn") == conn])
    (stats,) = json_lines(bruce_wire("pcap", "--json", "--stats", str(client_capture.path)).stdout)
    joins = [a for a in stats["stats"]["apis"] if a["api"] == "JoinGroup"]
    assert joins and all(a["requests"] == a["answers"] > 0 for a in joins)
    latency = joins[0]["latency_ms"]
    assert list(latency) == ["p50", "p90", "p99", "p100"] and latency["p50"] <= latency["p100"]
    assert max(a["latency_ms"]["p100"] for a in joins) >= 1000  # the join held while the group forms
    errors = {(e["api"], e["error"], e["code"]): e["count"] for e in stats["stats"]["errors"]}
    assert errors[("JoinGroup", "MEMBER_ID_REQUIRED", 79)] == 3  # each of the three members' first join
    text = bruce_wire("pcap", "--api", "JoinGroup", str(client_capture.path)).stdout.decode()
    headings = [line for line in text.splitlines() if not line.startswith(" ")]
    assert len([h for h in headings if " answer JoinGroup " in h and h.endswith(" ! MEMBER_ID_REQUIRED")]) == 3
